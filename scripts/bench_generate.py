"""Benchmark: generate International databases and probe them.

For each piece count: wall time, index entries per second, peak memory of the whole process
tree (sampled from /proc), bytes on disk and bits per entry; then warm batch probes per
second and the time of one probe through the Python API. Then the physical limit: this
machine's random-gather rate (a compiled microbenchmark: random uint8 and uint16 reads from
an array the size of the largest pair's working state, one thread and all threads), the
random accesses the build made per entry (``PairReport.random_accesses``, summed over the
solved pairs) and what fraction of the memory-bound limit the build reached.

    python scripts/bench_generate.py --pieces 4 --pieces 5 [--jobs 2] [--scheduler S]
    python scripts/bench_generate.py --pieces 5 --pair-threads    # largest pair, 1 vs 2 threads
    python scripts/bench_generate.py --pieces 5 --compare-jobs    # whole build, 1 vs 2 jobs

A/B against an older version, alternately in one invocation (this machine's speed drifts
between runs, so only a ratio measured in one run means anything):

    python scripts/bench_generate.py --pieces 5 --ab 7445c2a [--runs 3] [--variant english]
    python scripts/bench_generate.py --pieces 4 --ab-python /opt/old/.venv/bin/python

``--ab COMMIT`` checks the commit out into ``.bench/<commit>`` (a git worktree, ignored) with
a virtual environment of its own, the first time; ``--ab-python`` names the interpreter of an
installed copy instead. Each side first builds 2-3 pieces untimed (its kernels compiled and
cached), then the sides build from an empty folder in turn, ``--runs`` times each; printed:
each run's wall time, the ratio of each pair of runs (older / today: above 1 is faster
today) and the median ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from numba import njit, prange

CLI = [sys.executable, "-m", "tablebase.cli"]


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants."""
    total = 0
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            status = (d / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        p = int(d.name)
        children.setdefault(int(fields.get("PPid", "0").strip() or 0), []).append(p)
        rss[p] = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    stack = [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def run_generate(
    db: Path,
    args: list[str],
    jobs: int | None = None,
    scheduler: str | None = None,
    threads: int | None = None,
) -> dict:
    """Run ``tablebase generate`` (``args`` say what to build) in a child process: wall
    time, peak memory of its process tree, and the summed reports of the pairs it solved."""
    cmd = [*CLI, "generate", "--variant", "international", "--db", str(db), *args]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    if threads:
        cmd += ["--threads", str(threads)]
    if scheduler:
        cmd += ["--scheduler", scheduler]
    report = db.with_name(db.name + ".reports.json")
    env = dict(os.environ, TABLEBASE_BENCH_REPORTS=str(report))
    peak = 0
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--run-cli", *cmd[3:]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            done.wait(0.2)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    _, err = proc.communicate()
    done.set()
    th.join()
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"generate failed:\n{err[-3000:]}")
    summary = json.loads(report.read_text()) if report.exists() else {}
    report.unlink(missing_ok=True)
    return {"wall": wall, "peak": peak, **summary}


def run_cli_recording_reports(argv: list[str]) -> None:
    """``tablebase`` with ``argv``, the schedulers' reports summed into the JSON file named
    by ``TABLEBASE_BENCH_REPORTS`` (random accesses: None until the solver counts them)."""
    from tablebase import cli
    from tablebase.build.cluster import DaskScheduler
    from tablebase.build.schedule import LocalScheduler
    from tablebase.build.task import PHASES

    reports: list = []
    for cls in (LocalScheduler, DaskScheduler):
        original = cls.run

        def run(self, *a, _original=original, **kw):
            out = _original(self, *a, **kw)
            reports.extend(out)
            return out

        cls.run = run
    try:
        cli.main(argv, standalone_mode=True)
    finally:
        solved = [r for r in reports if not r.skipped]
        counts = [getattr(r, "random_accesses", None) for r in solved]
        summary = {
            "solved_entries": sum(r.entries for r in solved),
            "solve_seconds": sum(r.seconds for r in solved),
            "random_accesses": None if None in counts else sum(counts),
            "phase_seconds": [sum(r.phase_seconds[k] for r in solved) for k in range(len(PHASES))],
        }
        Path(os.environ["TABLEBASE_BENCH_REPORTS"]).write_text(json.dumps(summary))


# --- the physical limit: random gathers -------------------------------------------------


@njit(cache=True, inline="always")
def _xorshift(x):
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    return x


@njit(cache=True)
def _gather_one(data, mask, n, seed):
    """Sum of ``n`` reads at random indices (``index & mask``) of ``data``, one thread."""
    x = np.uint64(seed) | np.uint64(1)
    total = 0
    for _ in range(n):
        x = _xorshift(x)
        total += data[x & mask]
    return total


@njit(cache=True, parallel=True)
def _gather_all(data, mask, n, seed, parts):
    """The same spread over ``parts`` independent streams in parallel threads."""
    sums = np.zeros(parts, dtype=np.int64)
    per = n // parts
    for p in prange(parts):
        x = (np.uint64(seed) + np.uint64(p) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
        total = 0
        for _ in range(per):
            x = _xorshift(x)
            total += data[x & mask]
        sums[p] = total
    return sums.sum()


def gather_rates(nbytes: int, seconds: float = 1.0) -> dict[str, float]:
    """Random reads per second from an array of about ``nbytes`` (rounded to a power of two
    so that an index is a mask): uint8 and uint16, one thread and all numba threads."""
    import numba

    size = 1 << max(20, int(nbytes - 1).bit_length())
    data = np.ones(size, dtype=np.uint8)  # touched: no page faults while timing
    rates = {}
    for dtype in (np.uint8, np.uint16):
        view = data.view(dtype)
        mask = np.uint64(view.shape[0] - 1)
        threads = numba.get_num_threads()
        for label, fn in (
            ("1 thread", lambda n, v=view, m=mask: _gather_one(v, m, n, 12345)),
            (
                f"{threads} threads",
                lambda n, v=view, m=mask, t=threads: _gather_all(v, m, n, 12345, 8 * t),
            ),
        ):
            fn(1 << 16)  # compile
            n = 1 << 20
            while True:
                t0 = time.perf_counter()
                fn(n)
                dt = time.perf_counter() - t0
                if dt >= seconds / 4 or n >= 1 << 34:
                    break
                n *= 4
            rates[f"{np.dtype(dtype).name} {label}"] = n / dt
    rates["_bytes"] = size
    return rates


def largest_pair(pieces: int):
    """The pair of ``pieces`` pieces with the most entries (the build's longest task)."""
    from tablebase.material.slices import build_pairs
    from tablebase.rules.variants import INTERNATIONAL

    pairs = [p for p in build_pairs(pieces) if p[0].pieces == pieces]
    return max(pairs, key=lambda p: sum(s.size(INTERNATIONAL) for s in p))


def pair_state_bytes(pieces: int) -> int:
    """Bytes of the largest pair's working state and dependencies (the solver's estimate,
    without its fixed part)."""
    from tablebase.material.slices import pair_dependencies
    from tablebase.rules.variants import INTERNATIONAL
    from tablebase.solve.memory import task_memory_bytes

    pair = largest_pair(pieces)
    entries = sum(s.size(INTERNATIONAL) for s in pair)
    deps = sum(d.size(INTERNATIONAL) for d in pair_dependencies(pair[0]))
    return task_memory_bytes(entries, deps) - task_memory_bytes(0, 0)


def print_limit(r: dict, gather: dict[str, float]) -> None:
    """The random-access line: accesses per entry and the fraction of the memory-bound
    limit (the accesses at the all-thread uint8 gather rate) the build reached."""
    key = next(k for k in gather if k.startswith("uint8") and not k.endswith("1 thread"))
    rate = gather[key]
    accesses = r.get("random_accesses")
    entries = r.get("solved_entries") or 0
    if accesses is None or not entries:
        print(
            "  random accesses per entry: n/a (the solver does not report random_accesses); "
            "x % of the memory-bound limit: n/a",
            flush=True,
        )
        return
    limit_seconds = accesses / rate
    print(
        f"  random accesses per entry: {accesses / entries:.2f} ({accesses:,} in all); "
        f"at {rate / 1e6:,.0f} M gathers/s ({key}) they need {limit_seconds:.1f} s: "
        f"the build ran at {100 * limit_seconds / r['wall']:.1f} % of the memory-bound limit",
        flush=True,
    )


def print_phases(r: dict) -> None:
    """Where the pair tasks spent their time, summed over the pairs (task seconds: with two
    jobs the sum is about twice the wall time)."""
    from tablebase.build.task import PHASES

    phases = r.get("phase_seconds")
    total = r.get("solve_seconds") or 0.0
    if not phases or not total:
        return
    parts = ", ".join(
        f"{name} {sec:.1f} s ({100 * sec / total:.0f} %)"
        for name, sec in zip(PHASES, phases, strict=True)
    )
    print(f"  pair tasks: {total:.1f} task-seconds in all; {parts}", flush=True)


def pair_threads(pieces: int, base: Path) -> None:
    """Build the largest pair of ``pieces`` alone (``--material``) with ``--threads 1`` and
    ``--threads 2``, each into a folder that already holds its dependencies."""
    from tablebase.material.slices import pair_dependencies

    pair = largest_pair(pieces)
    name = pair[0].name
    deps_db = base / "deps"
    deps = sorted({d.name for d in pair_dependencies(pair[0])})
    r = run_generate(deps_db, [a for d in deps for a in ("--material", d)])
    print(f"dependencies of {'+'.join(s.name for s in pair)} built in {r['wall']:.1f} s")
    times = {}
    for threads in (1, 2):
        db = base / f"threads-{threads}"
        shutil.copytree(deps_db, db)
        r = run_generate(db, ["--material", name], jobs=1, threads=threads)
        times[threads] = r
        print(
            f"pair {'+'.join(s.name for s in pair)} alone, --threads {threads}: "
            f"{r['wall']:.1f} s wall, {r['solve_seconds']:.1f} s in the task, "
            f"peak memory {r['peak'] / 2**30:.2f} GiB",
            flush=True,
        )
    print(
        f"--threads 2 vs --threads 1: {times[1]['wall'] / times[2]['wall']:.2f}x wall, "
        f"{times[1]['solve_seconds'] / times[2]['solve_seconds']:.2f}x in the task",
        flush=True,
    )


def bench_probes(db: Path) -> tuple[float, float]:
    import tablebase
    from tablebase.material.index import BINOM, position_from_index
    from tablebase.material.slices import parse_slice

    with tablebase.open(db) as tb:
        v = tb.variant
        rng = np.random.default_rng(0)
        slices = [s for s in tb.slices() if s.pieces == max(x.pieces for x in tb.slices())]
        boards = [[], [], [], []]
        for s in slices:
            for idx in rng.integers(0, s.size(v), 200_000 // len(slices) + 1):
                wm, wk, bm, bk, ok = position_from_index(
                    int(idx), v.squares, v.per_row, *tuple(s), BINOM
                )
                if ok:
                    for i, b in enumerate((wm, wk, bm, bk)):
                        boards[i].append(int(b))
        arrs = [np.array(b * 25, dtype=np.uint64) for b in boards]  # ~5 million positions
        tb.probe_batch(*arrs)  # warm: load and check the slices, compile
        t0 = time.perf_counter()
        tb.probe_batch(*arrs)
        batch_rate = arrs[0].shape[0] / (time.perf_counter() - t0)
        fen = "W:WK38:B4,18"
        tb.probe(fen)
        n = 20_000
        from tablebase.rules.position import Position

        pos = Position.from_fen(fen, v)
        t0 = time.perf_counter()
        for _ in range(n):
            tb.probe(pos)
        single_us = (time.perf_counter() - t0) / n * 1e6
        del parse_slice
    return batch_rate, single_us


# --- A/B against an older version ---------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent


def baseline_python(commit: str) -> Path:
    """The interpreter of ``commit`` checked out into ``.bench/<commit>`` with its own
    virtual environment (made the first time)."""
    full = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{commit}^{{commit}}"],
        capture_output=True, text=True,
    )  # fmt: skip
    if full.returncode:
        sys.exit(f"--ab: {commit!r} is not a commit of this repository")
    sha = full.stdout.strip()
    tree = REPO / ".bench" / sha[:12]
    py = tree / ".venv" / "bin" / "python"
    if py.exists():
        return py
    if not tree.exists():
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), sha], check=True
        )
    print(f"installing {sha[:12]} into {tree}/.venv ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "-e", str(tree)], check=True)
    return py


def timed_generate(python: Path | None, db: Path, args: list[str]) -> float:
    """Wall seconds of ``tablebase generate`` from an empty folder ``db`` with today's code
    (``python`` None) or with the copy whose interpreter is ``python``."""
    if db.exists():
        shutil.rmtree(db)
    if python is None:
        cmd = [sys.executable, "-m", "tablebase.cli"]
        where = REPO
    else:  # run outside any checkout, so that the copy's own package is imported
        cmd = [str(python), "-c", "import sys; from tablebase.cli import main; main(sys.argv[1:])"]
        where = db.parent
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*cmd, "generate", "--db", str(db), *args],
        cwd=where, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"generate failed ({python or 'today'}):\n{proc.stderr[-3000:]}")
    return wall


def ab_runs(baseline: Path, label: str, variant: str, pieces: int, runs: int) -> None:
    """Build ``variant`` up to ``pieces`` with the baseline and today's code in turn
    (``runs`` each, from empty folders) and print the ratio of each pair and the median."""
    base = Path(tempfile.mkdtemp(prefix="bench_ab_"))
    args = ["--variant", variant, "--pieces", str(pieces)]
    try:
        for who, py in (("baseline", baseline), ("today", None)):  # compile, untimed
            timed_generate(py, base / f"warm-{who}", ["--variant", variant, "--pieces", "3"])
        ratios = []
        for k in range(runs):
            # alternate which side goes first, so that a drift favours neither
            order = [("baseline", baseline), ("today", None)]
            if k % 2:
                order.reverse()
            walls = {who: timed_generate(py, base / who, args) for who, py in order}
            ratios.append(walls["baseline"] / walls["today"])
            print(
                f"{variant} 2-{pieces} run {k + 1}: {label} {walls['baseline']:.1f} s, "
                f"today {walls['today']:.1f} s, ratio {ratios[-1]:.2f}x",
                flush=True,
            )
        print(
            f"{variant} 2-{pieces}: today / {label} median ratio {np.median(ratios):.2f}x "
            f"over {runs} alternating runs (above 1: today is faster)",
            flush=True,
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--run-cli":
        run_cli_recording_reports(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, action="append", help="piece counts (default 4)")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--threads", type=int, default=None, help="numba threads per pair task")
    ap.add_argument("--scheduler", default=None, help="e.g. local-cluster:2 (cluster backend)")
    ap.add_argument("--keep", type=Path, default=None, help="generate here and keep the files")
    ap.add_argument("--probe-only", type=Path, default=None, help="only time probes of this db")
    ap.add_argument(
        "--pair-threads",
        action="store_true",
        help="also build the largest pair alone with --threads 1 and --threads 2",
    )
    ap.add_argument(
        "--compare-jobs",
        action="store_true",
        help="build with --jobs 1 and --jobs 2 (instead of --jobs) and print the speedup",
    )
    ap.add_argument("--ab", metavar="COMMIT", help="A/B against this commit (see above)")
    ap.add_argument("--ab-python", type=Path, help="A/B against the copy of this interpreter")
    ap.add_argument("--runs", type=int, default=3, help="alternating runs of each side (A/B)")
    ap.add_argument("--variant", default="international", help="variant built in an A/B")
    ap.add_argument("--gather-seconds", type=float, default=1.0, help="time per gather measurement")
    args = ap.parse_args()
    from tablebase.material.slices import all_slices
    from tablebase.rules.variants import INTERNATIONAL

    if args.ab or args.ab_python:
        py = args.ab_python or baseline_python(args.ab)
        for pieces in args.pieces or [4]:
            ab_runs(py, args.ab or str(py), args.variant, pieces, args.runs)
        return
    if args.probe_only:
        batch, single = bench_probes(args.probe_only)
        print(
            f"{args.probe_only}: batch probe {batch:,.0f} positions/s, single probe {single:.1f} us"
        )
        return
    for pieces in args.pieces or [4]:
        base = args.keep or Path(tempfile.mkdtemp(prefix="bench_gen_"))
        entries = sum(s.size(INTERNATIONAL) for s in all_slices(pieces))
        walls = {}
        for jobs in (1, 2) if args.compare_jobs else (args.jobs,):
            db = (
                base / f"international-{pieces}"
                if jobs == args.jobs
                else (base / f"international-{pieces}-jobs{jobs}")
            )
            if db.exists():
                shutil.rmtree(db)
            r = run_generate(db, ["--pieces", str(pieces)], jobs, args.scheduler, args.threads)
            walls[jobs] = r["wall"]
            disk = sum(f.stat().st_size for f in db.glob("*.h5"))
            batch, single = bench_probes(db)
            backend = args.scheduler or f"local jobs={jobs or os.cpu_count()}"
            print(
                f"2-{pieces} pieces [{backend}]: {r['wall']:.1f} s, {entries:,} entries, "
                f"{entries / r['wall']:,.0f} entries/s, peak memory {r['peak'] / 2**30:.2f} GiB, "
                f"disk {disk / 1e6:.1f} MB ({8 * disk / entries:.2f} bits/entry), "
                f"batch probe {batch:,.0f} positions/s, single probe {single:.1f} us",
                flush=True,
            )
        if args.compare_jobs:
            print(f"--jobs 2 vs --jobs 1: {walls[1] / walls[2]:.2f}x", flush=True)
        gather = gather_rates(max(256 << 20, pair_state_bytes(pieces)), args.gather_seconds)
        print(
            f"  random gathers from {gather.pop('_bytes') / 2**30:.2f} GiB: "
            + ", ".join(f"{k} {v / 1e6:,.0f} M/s" for k, v in gather.items()),
            flush=True,
        )
        print_limit(r, gather)
        print_phases(r)
        if args.pair_threads:
            pair_threads(pieces, base / "pair-threads")
        if not args.keep:
            shutil.rmtree(base)


if __name__ == "__main__":
    main()
