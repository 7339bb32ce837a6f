"""Benchmark: probing through the values part against probing through the compact WDL part.

Positions are drawn at random from the slices with the most pieces (either side to move), and
the same positions are probed in one run through the ``values`` part (``probe_batch``,
``probe``) and through the two-bit ``wdl`` part (``probe_batch_wdl``, ``probe_wdl`` on the
database opened ``wdl_only``, as a WDL-only copy is), which reads a capture position's code
where the slice stores it and otherwise resolves it through its captures. Results are
checked to agree. The WDL batch is also timed on the positions without a capture pending and
on those with one apart (in slices that leave captures to the prober, the latter are
resolved through their captures: move generation, the bulk of the time). One line per case:

    python scripts/bench_probe.py DB [--wdl WDL_DB] [--positions 5000000] [--pieces 5]

``--wdl`` probes the WDL part of another database (e.g. the WDL-only copy of ``DB`` made by
``tablebase export --wdl-only``) instead of ``DB`` opened ``wdl_only``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def sample_positions(tb, count: int, pieces: int | None, seed: int = 0) -> list[np.ndarray]:
    """``count`` positions (wm, wk, bm, bk, white-to-move arrays) from the slices of
    ``pieces`` pieces (default: the most in the database), distinct ones repeated."""
    from tablebase.material.index import BINOM, position_from_index

    v = tb.variant
    slices = tb.slices()
    top = pieces or max(s.pieces for s in slices)
    slices = [s for s in slices if s.pieces == top]
    rng = np.random.default_rng(seed)
    boards: list[list[int]] = [[], [], [], []]
    per_slice = 200_000 // len(slices) + 1
    for s in slices:
        for idx in rng.integers(0, s.size(v), per_slice):
            *b, ok = position_from_index(int(idx), v.squares, v.per_row, *tuple(s), BINOM)
            if ok:
                for k in range(4):
                    boards[k].append(int(b[k]))
    distinct = len(boards[0])
    reps = max(1, count // distinct)
    arrs = [np.array(b * reps, dtype=np.uint64) for b in boards]
    wtm = np.tile(rng.integers(0, 2, distinct).astype(bool), reps)
    return [*arrs, wtm]


def capture_pending(tb, arrs) -> np.ndarray:
    """Bool per position: the side to move must capture (whether its slice stores the
    code or not)."""
    from tablebase.material.index import BINOM
    from tablebase.storage.wdl import LOC_CAPTURE, LOC_WON, locate_batch

    v = tb.variant
    loc = np.empty(arrs[0].shape[0], dtype=np.int64)
    none_stored = np.zeros(tb._wdl_offsets.shape[0], dtype=np.bool_)  # find every capture
    locate_batch(
        tb._wdl_offsets, none_stored, v.neighbours, v.rules, BINOM, arrs[4], *arrs[:4], loc
    )
    return (loc == LOC_CAPTURE) | (loc == LOC_WON)


CLOCK = time.perf_counter  # --cpu-time: time.process_time (CPU seconds of every thread)


def time_batch(fn, arrs, repeat: int = 3) -> float:
    fn(*arrs)  # warm: load the slices, compile
    best = float("inf")
    for _ in range(repeat):
        t0 = CLOCK()
        fn(*arrs)
        best = min(best, CLOCK() - t0)
    return arrs[0].shape[0] / best


def time_single(fn, positions, rounds: int = 3) -> float:
    for p in positions:
        fn(p)  # warm
    best = float("inf")
    for _ in range(rounds):
        t0 = CLOCK()
        for p in positions:
            fn(p)
        best = min(best, CLOCK() - t0)
    return best / len(positions) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--wdl", type=Path, default=None, help="probe this database's WDL part")
    ap.add_argument("--positions", type=int, default=5_000_000)
    ap.add_argument("--pieces", type=int, default=None, help="sample slices of N pieces")
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="rates per CPU second of the process (all threads) instead of per wall second: "
        "steadier on a shared machine; run with NUMBA_NUM_THREADS=1 for a one-core figure",
    )
    args = ap.parse_args()
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
    import numba

    import tablebase
    from tablebase.rules import has_capture
    from tablebase.rules.position import Position
    from tablebase.storage.files import TableFileError

    try:
        full = tablebase.open(args.db)
        wdl = tablebase.open(args.wdl or args.db, wdl_only=True)
    except (ValueError, OSError, TableFileError) as e:  # e.g. a folder not named after a variant
        ap.error(f"cannot open the database: {e}")
    arrs = sample_positions(wdl, args.positions, args.pieces)
    v = wdl.variant
    n = arrs[0].shape[0]
    singles = [
        Position(
            int(arrs[0][i]), int(arrs[1][i]), int(arrs[2][i]), int(arrs[3][i]), bool(arrs[4][i]), v
        )
        for i in range(0, min(n, 200_000), 97)
    ][:2000]
    captures = sum(has_capture(p) for p in singles) / len(singles)
    print(
        f"{args.db} (wdl part: {args.wdl or args.db}): {n:,} positions "
        f"({captures:.0%} with a capture pending), "
        f"{numba.get_num_threads()} threads, rates per {'CPU' if args.cpu_time else 'wall'} second"
    )
    if full.has_distances:
        got = wdl.probe_batch_wdl(*arrs)
        want = full.probe_batch_wdl(*arrs)
        if not np.array_equal(got, want):
            raise SystemExit(f"MISMATCH: {int((got != want).sum())} positions differ")
        rate = time_batch(full.probe_batch, arrs)
        print(f"  batch through values:        {rate:>14,.0f} positions/s")
        us = time_single(full.probe, singles)
        print(f"  one probe() through values:  {us:>14.2f} us")
        us = time_single(full.probe_wdl, singles)
        print(f"  one probe_wdl() via values:  {us:>14.2f} us")
    rate = time_batch(wdl.probe_batch_wdl, arrs)
    print(f"  batch through wdl:           {rate:>14,.0f} positions/s")
    must = capture_pending(wdl, arrs)
    for name, keep in (("without capture", ~must), ("with a capture", must)):
        part = [a[keep] for a in arrs]
        if part[0].shape[0]:
            rate = time_batch(wdl.probe_batch_wdl, part)
            print(f"    {name:<26} {rate:>14,.0f} positions/s ({part[0].shape[0]:,})")
    us = time_single(wdl.probe_wdl, singles)
    print(f"  one probe_wdl() through wdl: {us:>14.2f} us")
    quiet = [p for p in singles if not has_capture(p)]
    capture = [p for p in singles if has_capture(p)]
    for name, group in (("without capture", quiet), ("with a capture", capture)):
        if group:
            us = time_single(wdl.probe_wdl, group)
            print(f"    {name:<26} {us:>14.2f} us ({len(group)} positions)")
    flat = wdl._wdl_flat.nbytes
    print(f"  memory: wdl tables {flat / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
