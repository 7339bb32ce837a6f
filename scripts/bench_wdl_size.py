"""Benchmark: bits per position of the WDL part, captures stored against captures resolved.

Reads the values of every slice of a full database and encodes its WDL part in both forms
(:func:`tablebase.storage.wdl.encode_wdl`), compressed as the files store it (zlib on chunks of
2^18 bytes, gzip 6 unless ``--level``; ``--chunk`` another chunk size), and also gives the
size the file's own WDL part takes on disk. One line per slice, then per piece count:

    python scripts/bench_wdl_size.py DB [--pieces 5] [--level 6] [--chunk 262144]
"""

from __future__ import annotations

import argparse
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np


def compressed_bytes(packed: np.ndarray, chunk: int, level: int, threads: int) -> int:
    """Bytes of ``packed`` compressed chunk by chunk as :mod:`tablebase.storage.chunkio` writes it
    (the edge chunk padded with zeros; one chunk of the array's length when it is shorter)."""
    chunk = min(chunk, max(1, packed.shape[0]))

    def one(start: int) -> int:
        part = packed[start : start + chunk]
        if part.shape[0] < chunk:
            part = np.concatenate([part, np.zeros(chunk - part.shape[0], dtype=np.uint8)])
        return len(zlib.compress(part.tobytes(), level))

    with ThreadPoolExecutor(max(1, threads)) as pool:
        return sum(pool.map(one, range(0, packed.shape[0], chunk)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--pieces", type=int, default=None, help="only the slices of N pieces")
    ap.add_argument(
        "--level", type=int, default=6, help="gzip level (a distribution copy's WDL part: 6)"
    )
    ap.add_argument("--chunk", type=int, default=1 << 18, help="bytes per compressed chunk")
    args = ap.parse_args()
    import numba

    from tablebase.rules.variants import get_variant
    from tablebase.storage.export import part_bytes, slice_files
    from tablebase.storage.reader import read_attrs, read_slice
    from tablebase.storage.wdl import encode_wdl

    threads = numba.get_num_threads()
    totals: dict[int, list[int]] = {}
    for s, path in slice_files(args.db):
        if args.pieces and s.pieces != args.pieces:
            continue
        attrs = read_attrs(path)
        variant = get_variant(attrs["variant"])
        values = read_slice(path, variant, s)
        n = int(attrs["positions"])
        on_disk = part_bytes(path)[0]
        sizes = [
            compressed_bytes(encode_wdl(variant, s, values, threads, captures=c), args.chunk,
                             args.level, threads)
            for c in (False, True)
        ]  # fmt: skip
        del values
        t = totals.setdefault(s.pieces, [0, 0, 0, 0])
        for k, x in enumerate((n, on_disk, *sizes)):
            t[k] += x
        stored_flag = "stored" if attrs["wdl_captures_stored"] else "resolved"
        print(
            f"{s.name}: {n:>12,} positions  file ({stored_flag}) {8 * on_disk / n:.3f}  "
            f"resolved {8 * sizes[0] / n:.3f}  stored {8 * sizes[1] / n:.3f} bits/position",
            flush=True,
        )
    all_t = [sum(t[k] for t in totals.values()) for k in range(4)]
    for name, (n, disk, resolved, stored) in [*sorted(totals.items()), ("all", all_t)]:
        label = f"{name} pieces" if name != "all" else "all"
        print(
            f"{label}: {n:,} positions, gzip {args.level}, chunks {args.chunk}: file "
            f"{disk / 1e6:.2f} MB ({8 * disk / n:.3f}), resolved {resolved / 1e6:.2f} MB "
            f"({8 * resolved / n:.3f}), stored {stored / 1e6:.2f} MB ({8 * stored / n:.3f} "
            "bits/position)"
        )


if __name__ == "__main__":
    main()
