"""Compare the values of two builds of one database, slice by slice.

Used to show that a generator change leaves every value as it was: build the database with
the old generator into one folder and with the new one into another, then

    python scripts/compare_builds.py OLD_DB NEW_DB --variant international
    python scripts/compare_builds.py OLD_DB NEW_DB --min-pieces 5 --sample 10000000

Without ``--sample`` every entry of every slice present in both folders is compared; with
it, that many entries drawn uniformly over the compared slices (in proportion to their
sizes, seeded). Slices present in only one folder are listed. Prints one line per slice and
a total; exits 1 if any value differs, 2 if nothing could be compared.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from tablebase.material.slices import parse_slice
from tablebase.rules.variants import get_variant
from tablebase.storage.reader import read_slice


def count_different(a: np.ndarray, b: np.ndarray, chunk: int = 1 << 24) -> int:
    """Entries where ``a`` and ``b`` differ, compared a chunk at a time in the wider of
    their types (a slice of 1.5 G entries, each copied to int64, took 24 GB)."""
    wide = np.promote_types(a.dtype, b.dtype)
    bad = 0
    for lo in range(0, a.shape[0], chunk):
        x = a[lo : lo + chunk].astype(wide, copy=False)
        bad += int(np.count_nonzero(x != b[lo : lo + chunk].astype(wide, copy=False)))
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--variant", default="international")
    ap.add_argument("--min-pieces", type=int, default=2)
    ap.add_argument("--max-pieces", type=int, default=99)
    ap.add_argument("--sample", type=int, default=None, help="entries to compare in all")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    variant = get_variant(args.variant)
    names = {p.stem for p in args.old.glob("*.h5")} | {p.stem for p in args.new.glob("*.h5")}
    slices = []
    for name in sorted(names):
        try:
            s = parse_slice(name)
        except ValueError:
            print(f"skipped {name}.h5: not a slice file name")
            continue
        if not args.min_pieces <= s.pieces <= args.max_pieces:
            continue
        missing = [str(d) for d in (args.old, args.new) if not (d / f"{name}.h5").exists()]
        if missing:
            print(f"{name}: only in one build (missing in {', '.join(missing)})")
            continue
        slices.append(s)
    if not slices:
        print("nothing to compare")
        return 2
    sizes = np.array([s.size(variant) for s in slices], dtype=np.int64)
    rng = np.random.default_rng(args.seed)
    if args.sample is not None:
        share = rng.multinomial(args.sample, sizes / sizes.sum())
    compared = differing = 0
    for i, s in enumerate(slices):
        a = read_slice(args.old / f"{s.name}.h5", variant, s)
        b = read_slice(args.new / f"{s.name}.h5", variant, s)
        if args.sample is None:
            idx = slice(None)
            n = a.shape[0]
        else:
            n = int(min(share[i], a.shape[0]))
            idx = rng.choice(a.shape[0], n, replace=False) if n < a.shape[0] else slice(None)
        bad = count_different(a[idx], b[idx])
        compared += n
        differing += bad
        print(f"{s.name}: {n:>13,} compared, {bad:,} different")
    print(f"total: {compared:,} entries of {len(slices)} slices compared, {differing:,} different")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
