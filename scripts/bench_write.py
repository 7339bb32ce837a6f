"""Benchmark: writing one slice file, by part, against plain deflate on the same bytes.

Reads the values of slice SLICE from DB, then times (best of ``--runs``, on ``--threads``
compiled threads): the group-coded encoder (:mod:`tablebase.storage.groupcode`) of the
values and of the packed WDL part, in MB/s of input, beside ISA-L's level 1 deflate and
zlib's level 1 on the same 16 KiB blocks (the peers: what a plain HDF5 gzip filter costs);
then one whole :func:`tablebase.storage.writer.write_slice` (values, WDL part, re-read
and checked) into a temporary folder.

    python scripts/bench_write.py DB --slice 1211 [--variant international] [--runs 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numba
import numpy as np
from isal import isal_zlib

from tablebase.material.slices import parse_slice
from tablebase.rules.variants import get_variant
from tablebase.storage import groupcode as gc
from tablebase.storage.chunkio import BLOCK_BYTES
from tablebase.storage.reader import read_slice
from tablebase.storage.slicefile import SliceStats, slice_path
from tablebase.storage.wdl import encode_wdl
from tablebase.storage.writer import write_slice


def best(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    """The shortest of ``runs`` timed calls of ``fn``."""
    out = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def encode_rate(raw: np.ndarray, group: int, runs: int) -> float:
    """MB/s of the group-coded encoder over the whole blocks of ``raw``."""
    nb = raw.shape[0] // BLOCK_BYTES
    raw = raw[: nb * BLOCK_BYTES]
    code = gc.part_code(raw, BLOCK_BYTES, group)
    out = np.zeros((nb, gc.max_chunk_bytes(BLOCK_BYTES, code.header_bits)), dtype=np.uint8)
    sizes = np.zeros(nb, dtype=np.int64)
    rows = np.zeros((nb, gc.row_length(BLOCK_BYTES, group)), dtype=np.uint16)

    def run() -> None:
        code.encode(raw, 0, nb, BLOCK_BYTES, group, out, sizes, rows)

    run()  # compiled
    return raw.shape[0] / 1e6 / best(run, runs)


def deflate_rate(raw: np.ndarray, compress, runs: int) -> float:  # type: ignore[no-untyped-def]
    """MB/s of ``compress`` over the 16 KiB blocks of ``raw`` (one thread)."""
    nb = raw.shape[0] // BLOCK_BYTES
    blocks = [raw[k * BLOCK_BYTES : (k + 1) * BLOCK_BYTES].tobytes() for k in range(nb)]

    def run() -> None:
        for b in blocks:
            compress(b, 1)

    return nb * BLOCK_BYTES / 1e6 / best(run, runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--slice", default="1211")
    ap.add_argument("--variant", default="international")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    numba.set_num_threads(args.threads)
    v = get_variant(args.variant)
    s = parse_slice(args.slice)
    vals = read_slice(slice_path(args.db, s), v, s)
    if vals.dtype != np.uint8:
        print(f"{s.name} holds two-byte values: pick a slice of one-byte values", file=sys.stderr)
        return 2
    wdl = encode_wdl(v, s, vals, args.threads)
    print(f"{s.name}: {vals.shape[0] / 1e6:.1f} M values, WDL part {wdl.shape[0] / 1e6:.1f} MB")
    for part, raw, group in (("values", vals, 128), ("WDL", wdl, 256)):
        ours = encode_rate(raw, group, args.runs)
        isal1 = deflate_rate(raw, isal_zlib.compress, args.runs)
        zlib1 = deflate_rate(raw, zlib.compress, args.runs)
        print(
            f"  {part:6} group-coded {ours:7.1f} MB/s   isal-1 {isal1:7.1f} MB/s   "
            f"zlib-1 {zlib1:7.1f} MB/s   (ours / isal-1 {ours / isal1:.2f})"
        )
    stats = SliceStats(0, 0, 0, 0, 0, 0)
    with tempfile.TemporaryDirectory() as tmp:

        def whole() -> None:
            write_slice(Path(tmp), v, s, vals, stats, "")

        secs = best(whole, args.runs)
    print(
        f"  write_slice (both parts, re-read and checked): {secs:.2f} s, "
        f"{vals.shape[0] / 1e6 / secs:.1f} M entries/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
