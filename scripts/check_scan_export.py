"""Check exported Scan bitbases with Scan itself: it starts on them, and reads our values.

Starts Scan (the binary given, run in a working folder made in a temporary directory) on the
bitbase folder ROOT (``tablebase export --format scan DB ROOT``) with ``bb-size`` = the
largest complete piece count of DB (or ``--bb-size``): Hub ``init`` must answer ``ready``
(Scan loaded every file and found each of its index's length). Then draws random lines
(a random entry of a random id, random legal moves from it: ``--plies``) until ``--positions``
positions without a capture for the side to move (the entries Scan reads from its files)
are in them, has Scan show each position (its terminal prints ``bitbase win|draw|loss``,
its own ``bb::probe``), and compares every value with ``tablebase``'s ``probe_wdl``.
Prints one line; exits 1 if a value differs or Scan does not start.

    python scripts/check_scan_export.py DB ROOT --scan /path/to/scan [--positions 10000]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import tablebase
from tablebase.material.slices import Slice
from tablebase.rules import has_capture
from tablebase.scanbb.engine import (
    ScanEngineError,
    hub_start,
    sample_lines,
    scan_folder,
    scan_values,
)
from tablebase.scanbb.export import complete_bb_size
from tablebase.storage.listing import database_variant, slice_files

BATCH = 1000  # lines shown to one Scan session


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path, help="the database the files were exported from")
    ap.add_argument("root", type=Path, help="the export's folder (holding bb<suffix>/)")
    ap.add_argument("--scan", required=True, help="the Scan binary (with its data/eval files)")
    ap.add_argument("--positions", type=int, default=10_000)
    ap.add_argument("--plies", type=int, default=4, help="random moves after each start")
    ap.add_argument("--bb-size", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    variant = database_variant(args.db)
    slices: set[Slice] = {s for s, _ in slice_files(args.db).slices}
    bb_size = args.bb_size or complete_bb_size(slices)
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        folder = scan_folder(args.scan, Path(work) / "scan", variant, args.root, bb_size)
        try:
            hub_start(folder)
        except ScanEngineError as e:
            print(f"{variant.name}: Scan refused the files with bb-size {bb_size}: {e}")
            return 1
        started = time.perf_counter() - t0
        covered = captures = runs = differ = 0
        first = ""
        with tablebase.open(args.db) as tb:
            while covered < args.positions:
                sampled = sample_lines(variant, bb_size, BATCH, rng, args.plies)
                values = scan_values(folder, [line for line, _ in sampled])
                for (line, shown), got in zip(sampled, values, strict=True):
                    for pos, value in zip(shown, got, strict=True):
                        if covered >= args.positions:
                            break
                        capture = has_capture(pos)
                        covered += not capture
                        captures += capture
                        runs += pos.king_runs != ((0, 0), (0, 0))
                        if value != tb.probe_wdl(pos):
                            differ += 1
                            first = first or f"{pos.fen()} (Scan {value}, line {line})"
    print(
        f"{variant.name} 2-{bb_size}: Scan started with bb-size {bb_size} "
        f"({started:.1f} s); {covered:,} positions without a capture (Scan's stored entries) "
        f"and {captures:,} with one (played out by Scan), {runs:,} with a king run: "
        f"{differ} differ from the tables"
        + (f"; first {first}" if first else "")
        + f" [{time.perf_counter() - t0:.0f} s]"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
