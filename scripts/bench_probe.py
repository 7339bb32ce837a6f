"""Benchmark: probing through a bounded block cache, single positions and batches.

Two kinds of runs, on the same database, each with its peak memory against its budget, and
each done twice: through a cache of ``--cache`` bytes (the budget) and through an
*unbounded* one (a cache larger than the database's parts: every block read once stays, as
the prober before the cache kept every slice it touched):

- **fit**: positions drawn from the slices of ``--pieces`` pieces (default: the most in the
  database), ``--distinct`` ones (20,000: at most as many blocks, 312 MiB of 16 KiB
  blocks, within a cache of 1 GiB) repeated up to ``--positions``, probed through the
  ``values`` part (``probe_batch``, ``probe``) and through the two-bit ``wdl`` part
  (``probe_batch_wdl``, ``probe_wdl`` on the database opened ``wdl_only``): a working set
  that fits the cache once read (the rates are of the repeats, after a first pass).
- **random**: positions drawn uniformly over every entry of every slice (``--singles`` of
  them probed one at a time, ``--batch`` in one batch), in a fresh cache: every slice file
  opened first (one probe each), then the first probe of each position (its block read
  from the file: the cold cost; the file's bytes may be in the system's page cache) and
  the second (the block cached, if the cache holds it), median and 99th percentile per
  probe; the batch's rate the first time and the second.

Rates are per wall second and per CPU second of the process (all threads: steadier on a
shared machine). Results are checked to agree (values against WDL, budget against
unbounded). Memory: the process's peak resident memory during each run above its resident
memory when the run began (the kernel's high-water mark, reset before each run), against
the cache's size. ``--peer CHECKOUT`` runs this script again on another checkout of the
project (``PYTHONPATH=CHECKOUT``, e.g. the prober before the cache, whose
``tablebase.open`` takes no ``cache``: it reports the same lines against no budget) and
prints its lines after these.

    python scripts/bench_probe.py DB [--cache 1G] [--positions 5000000] [--pieces 5]
        [--distinct 20000] [--singles 20000] [--batch 2000000] [--runs fit,random]
        [--wdl WDL_DB] [--peer CHECKOUT [--peer-db DB]] [--no-unbounded]
"""

from __future__ import annotations

import argparse
import gc
import inspect
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CLOCK = time.perf_counter  # single probes; --cpu-time: time.process_time


def rss() -> int:
    """Resident memory of this process now (bytes)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def reset_peak() -> None:
    """Reset the kernel's high-water mark of this process's resident memory."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak() -> int:
    """The high-water mark of resident memory since :func:`reset_peak` (bytes)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


class Memory:
    """``with Memory(name, budget):`` prints the run's peak resident memory above its start."""

    def __init__(self, name: str, budget: int | None) -> None:
        self.name, self.budget = name, budget

    def __enter__(self) -> Memory:
        gc.collect()
        reset_peak()
        self.start = rss()
        return self

    def __exit__(self, *exc: object) -> None:
        above = (peak() - self.start) / 2**20
        budget = f"budget {self.budget / 2**20:.0f} MiB" if self.budget else "no budget"
        print(f"    memory: peak {above:,.0f} MiB above the run's start ({budget})")


def new_cache(size: str):  # type: ignore[no-untyped-def]
    """A block cache of ``size`` for the databases of one run (None where this version of
    the prober has none)."""
    import tablebase

    maker = getattr(tablebase, "BlockCache", None)
    return maker(size) if maker is not None else None


def open_db(path: Path, cache, wdl_only: bool = False):  # type: ignore[no-untyped-def]
    """``tablebase.open`` with the cache where this version of the prober has one."""
    import tablebase

    if "cache" in inspect.signature(tablebase.open).parameters:
        return tablebase.open(path, wdl_only=wdl_only, cache=cache)
    return tablebase.open(path, wdl_only=wdl_only)


def budget_of(tb) -> int | None:  # type: ignore[no-untyped-def]
    cache = getattr(tb, "cache", None)
    return getattr(cache, "capacity", None)


def sample(tb, count: int, slices, seed: int, weighted: bool) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    """``count`` positions (wm, wk, bm, bk, white-to-move arrays) of ``slices``: entries
    drawn uniformly over all their entries (``weighted``) or equally many per slice; the
    entries that are not positions are left out."""
    from tablebase.material.index import BINOM, position_from_index

    v = tb.variant
    rng = np.random.default_rng(seed)
    sizes = np.array([s.size(v) for s in slices], dtype=np.float64)
    share = sizes / sizes.sum() if weighted else np.full(len(slices), 1 / len(slices))
    per = rng.multinomial(int(count * 1.1) + len(slices), share)
    boards: list[list[int]] = [[], [], [], []]
    for s, k in zip(slices, per, strict=True):
        for idx in rng.integers(0, s.size(v), k):
            *b, ok = position_from_index(int(idx), v.squares, v.per_row, *tuple(s), BINOM)
            if ok:
                for g in range(4):
                    boards[g].append(int(b[g]))
    order = rng.permutation(len(boards[0]))[:count]
    arrs = [np.array(b, dtype=np.uint64)[order] for b in boards]
    return [*arrs, rng.integers(0, 2, arrs[0].shape[0]).astype(bool)]


def positions_of(tb, arrs, limit: int) -> list:  # type: ignore[no-untyped-def]
    from tablebase.rules.position import Position

    n = min(limit, arrs[0].shape[0])
    return [
        Position(*(int(a[i]) for a in arrs[:4]), bool(arrs[4][i]), tb.variant) for i in range(n)
    ]


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def rates(n: int, start: tuple[float, float]) -> tuple[float, float]:
    """Positions per wall second and per CPU second since ``start`` (:func:`clocks`)."""
    wall, cpu = clocks()
    return n / (wall - start[0]), n / max(cpu - start[1], 1e-9)


def show_rate(r: tuple[float, float]) -> str:
    return f"{r[0]:>12,.0f}/s wall {r[1]:>12,.0f}/s CPU"


def time_batch(fn, arrs, repeat: int = 3) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """The best rates (wall, CPU) of ``repeat`` calls after a first (blocks read, compiled)."""
    fn(*arrs)
    best = (0.0, 0.0)
    for _ in range(repeat):
        t0 = clocks()
        fn(*arrs)
        r = rates(arrs[0].shape[0], t0)
        best = (max(best[0], r[0]), max(best[1], r[1]))
    return best


def time_single(fn, positions, rounds: int = 5) -> float:  # type: ignore[no-untyped-def]
    """Microseconds per call, the best of ``rounds`` rounds (CPU time with ``--cpu-time``)."""
    for p in positions:
        fn(p)  # warm
    best = float("inf")
    for _ in range(rounds):
        t0 = CLOCK()
        for p in positions:
            fn(p)
        best = min(best, CLOCK() - t0)
    return best / len(positions) * 1e6


def latencies(fn, positions) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Microseconds of each call ``fn(p)``."""
    out = np.empty(len(positions))
    clock = time.perf_counter_ns
    for i, p in enumerate(positions):
        t0 = clock()
        fn(p)
        out[i] = clock() - t0
    return out / 1000


def describe(us: np.ndarray) -> str:
    return f"median {np.median(us):8.2f} us, p99 {np.percentile(us, 99):9.2f} us"


def unbounded_size(db: Path) -> int:
    """A cache larger than every part of the database (two bytes a value, a quarter byte
    a WDL code): nothing is ever evicted; memory is taken only as blocks are read."""
    import tablebase

    tb = tablebase.open(db, cache="64M") if "cache" in _open_params() else tablebase.open(db)
    total = sum(s.size(tb.variant) for s in tb.slices())
    return int(total * 2.25) + (1 << 27)


def _open_params() -> set[str]:
    import tablebase

    return set(inspect.signature(tablebase.open).parameters)


def run_fit(args, db: Path, wdl_db: Path, size, label: str) -> None:  # type: ignore[no-untyped-def]
    import numba

    from tablebase.rules import has_capture

    cache = new_cache(size)  # one budget for both
    full = open_db(db, cache)
    wdl = open_db(wdl_db, cache, wdl_only=True)
    slices = full.slices()
    top = args.pieces or max(s.pieces for s in slices)
    distinct = sample(wdl, args.distinct, [s for s in slices if s.pieces == top], 0, False)
    reps = max(1, args.positions // distinct[0].shape[0])
    arrs = [np.tile(a, reps) for a in distinct]
    singles = positions_of(wdl, [a[::7] for a in distinct], 2000)
    captures = sum(has_capture(p) for p in singles) / len(singles)
    print(
        f"fit, {label}: {arrs[0].shape[0]:,} positions of {top} pieces ({distinct[0].shape[0]:,} "
        f"distinct, {captures:.0%} with a capture pending), {numba.get_num_threads()} threads; "
        f"single probes per {'CPU' if CLOCK is time.process_time else 'wall'} time"
    )
    if full.has_distances:
        with Memory("values", budget_of(full)):
            got = wdl.probe_batch_wdl(*arrs)
            want = full.probe_batch_wdl(*arrs)
            if not np.array_equal(got, want):
                raise SystemExit(f"MISMATCH: {int((got != want).sum())} positions differ")
            print(f"  batch through values:        {show_rate(time_batch(full.probe_batch, arrs))}")
            us = time_single(full.probe, singles)
            print(f"  one probe() through values:  {us:>12.2f} us")
    with Memory("wdl", budget_of(wdl)):
        print(f"  batch through wdl:           {show_rate(time_batch(wdl.probe_batch_wdl, arrs))}")
        us = time_single(wdl.probe_wdl, singles)
        print(f"  one probe_wdl() through wdl: {us:>12.2f} us")
    full.close()
    wdl.close()


def run_random(args, db: Path, wdl_db: Path, size, label: str) -> dict:  # type: ignore[no-untyped-def]
    """The random run; the batches' answers by name (for the budget/unbounded check)."""
    probe = open_db(db, new_cache(size))
    slices = probe.slices()
    arrs = sample(probe, max(args.singles, args.batch), slices, 1, True)
    total = sum(s.size(probe.variant) for s in slices)
    print(
        f"random, {label}: positions uniform over the {total:,} entries of all {len(slices)} slices"
    )
    singles = positions_of(probe, arrs, args.singles)
    firsts = positions_of(probe, sample(probe, 4 * len(slices), slices, 2, False), 10**9)
    probe.close()
    answers = {}
    for name, wdl_only, fn in (
        ("probe()", False, "probe"),
        ("probe_wdl() wdl_only", True, "probe_wdl"),
    ):
        tb = open_db(wdl_db if wdl_only else db, new_cache(size), wdl_only)
        if not wdl_only and not tb.has_distances:
            continue
        with Memory(name, budget_of(tb)):
            opening = latencies(getattr(tb, fn), firsts)  # opens every slice file
            cold = latencies(getattr(tb, fn), singles)
            warm = latencies(getattr(tb, fn), singles)
            pad = " " * (len(f"{len(singles):,}") + len(name) + 8)
            print(f"  {len(firsts):,} probes opening the slice files: {describe(opening)}")
            print(f"  {len(singles):,} single {name}: first {describe(cold)}")
            print(f"  {pad}again {describe(warm)}")
        tb.close()
    batch = [a[: args.batch] for a in arrs]
    for name, wdl_only, fn in (
        ("probe_batch", False, "probe_batch"),
        ("probe_batch_wdl wdl_only", True, "probe_batch_wdl"),
    ):
        tb = open_db(wdl_db if wdl_only else db, new_cache(size), wdl_only)
        if not wdl_only and not tb.has_distances:
            continue
        with Memory(name, budget_of(tb)):
            got = []
            for _ in range(2):
                t0 = clocks()
                answers[name] = getattr(tb, fn)(*batch)
                got.append(rates(batch[0].shape[0], t0))
            print(f"  batch of {batch[0].shape[0]:,} {name}:")
            print(f"      first {show_rate(got[0])}")
            print(f"      again {show_rate(got[1])}")
        tb.close()
    return answers


def peer_options(args: argparse.Namespace) -> list[str]:
    """The options of this run for the peer's (its database given apart, no unbounded run)."""
    out = [f"--cache={args.cache}", f"--positions={args.positions}"]
    out += [f"--distinct={args.distinct}", f"--singles={args.singles}"]
    out += [f"--batch={args.batch}", f"--runs={args.runs}", "--no-unbounded"]
    if args.pieces:
        out.append(f"--pieces={args.pieces}")
    if args.wdl:
        out.append(f"--wdl={args.wdl}")
    if args.cpu_time:
        out.append("--cpu-time")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--wdl", type=Path, default=None, help="probe this database's WDL part")
    ap.add_argument("--cache", default="1G", help="cache size (default 1G)")
    ap.add_argument("--positions", type=int, default=5_000_000)
    ap.add_argument("--pieces", type=int, default=None, help="fit: slices of N pieces")
    ap.add_argument(
        "--distinct", type=int, default=20_000, help="fit: distinct positions (the working set)"
    )
    ap.add_argument("--singles", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=2_000_000)
    ap.add_argument("--runs", default="fit,random")
    ap.add_argument(
        "--no-unbounded", action="store_true", help="leave out the runs with an unbounded cache"
    )
    ap.add_argument("--peer", type=Path, default=None, help="run this script on CHECKOUT too")
    ap.add_argument(
        "--peer-db",
        type=Path,
        default=None,
        help="the peer's database (default: DB), e.g. "
        "an older format's copy for a prober that cannot read this one",
    )
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="single probes timed in CPU seconds of the process instead of wall seconds: "
        "steadier on a shared machine",
    )
    args = ap.parse_args()
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
    from tablebase.storage.slicefile import TableFileError

    runs = args.runs.split(",")
    try:
        open_db(args.db, new_cache(args.cache)).close()
    except (ValueError, OSError, TableFileError) as e:
        ap.error(f"cannot open the database: {e}")
    if args.peer is not None and not (args.peer / "tablebase" / "__init__.py").is_file():
        ap.error(f"--peer {args.peer}: not a checkout of the project (no tablebase/)")
    print(f"{args.db} (wdl part: {args.wdl or args.db})")
    sizes = [(args.cache, f"cache {args.cache}")]
    if not args.no_unbounded and "cache" in _open_params():
        big = unbounded_size(args.db)
        sizes.append((big, f"unbounded ({big / 2**30:.1f} GiB cache)"))
    wdl = args.wdl or args.db
    for size, label in sizes:
        if "fit" in runs:
            run_fit(args, args.db, wdl, size, label)
    answers = []
    for size, label in sizes:
        if "random" in runs:
            answers.append(run_random(args, args.db, wdl, size, label))
    for name in answers[0] if len(answers) > 1 else []:
        if not np.array_equal(answers[0][name], answers[1][name]):
            raise SystemExit(f"MISMATCH: {name} through the budget and unbounded differ")
    if args.peer is not None:
        env = dict(os.environ, PYTHONPATH=str(args.peer.resolve()))
        cmd = [sys.executable, __file__, str(args.peer_db or args.db), *peer_options(args)]
        print(f"peer: {args.peer} (the same runs, its prober)", flush=True)
        subprocess.run(cmd, env=env, check=True)


if __name__ == "__main__":
    main()
