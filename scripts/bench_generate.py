"""Benchmark: generate International databases and probe them.

For each piece count: wall time, index entries per second, peak memory of the whole process
tree (sampled from /proc), bytes on disk and bits per entry; then warm batch probes per
second and the time of one probe through the Python API.

    python scripts/bench_generate.py --pieces 4 --pieces 5 [--jobs 2] [--scheduler S]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np


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


def run_generate(pieces: int, db: Path, jobs: int | None, scheduler: str | None) -> dict:
    cmd = [sys.executable, "-m", "tablebase.cli", "generate", "--variant", "international",
           "--pieces", str(pieces), "--db", str(db)]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    if scheduler:
        cmd += ["--scheduler", scheduler]
    peak = 0
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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
    return {"wall": wall, "peak": peak}


def bench_probes(db: Path) -> tuple[float, float]:
    import tablebase
    from tablebase.index import BINOM, position_from_index
    from tablebase.slices import parse_slice

    with tablebase.open(db) as tb:
        v = tb.variant
        rng = np.random.default_rng(0)
        slices = [s for s in tb.slices() if s.pieces == max(x.pieces for x in tb.slices())]
        boards = [[], [], [], []]
        for s in slices:
            for idx in rng.integers(0, s.size(v), 200_000 // len(slices) + 1):
                wm, wk, bm, bk, ok = position_from_index(int(idx), v.squares, v.per_row,
                                                         *tuple(s), BINOM)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, action="append", help="piece counts (default 4)")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--scheduler", default=None, help="e.g. local-cluster:2 (cluster backend)")
    ap.add_argument("--keep", type=Path, default=None, help="generate here and keep the files")
    ap.add_argument("--probe-only", type=Path, default=None, help="only time probes of this db")
    args = ap.parse_args()
    from tablebase.rules.variants import INTERNATIONAL
    from tablebase.slices import all_slices

    if args.probe_only:
        batch, single = bench_probes(args.probe_only)
        print(f"{args.probe_only}: batch probe {batch:,.0f} positions/s, single probe "
              f"{single:.1f} us")
        return
    for pieces in args.pieces or [4]:
        base = args.keep or Path(tempfile.mkdtemp(prefix="bench_gen_"))
        db = base / f"international-{pieces}"
        if db.exists():
            shutil.rmtree(db)
        entries = sum(s.size(INTERNATIONAL) for s in all_slices(pieces))
        r = run_generate(pieces, db, args.jobs, args.scheduler)
        disk = sum(f.stat().st_size for f in db.glob("*.h5"))
        batch, single = bench_probes(db)
        backend = args.scheduler or f"local jobs={args.jobs or os.cpu_count()}"
        print(
            f"2-{pieces} pieces [{backend}]: {r['wall']:.1f} s, {entries:,} entries, "
            f"{entries / r['wall']:,.0f} entries/s, peak memory {r['peak'] / 2**30:.2f} GiB, "
            f"disk {disk / 1e6:.1f} MB ({8 * disk / entries:.2f} bits/entry), "
            f"batch probe {batch:,.0f} positions/s, single probe {single:.1f} us",
            flush=True,
        )
        if not args.keep:
            shutil.rmtree(base)


if __name__ == "__main__":
    main()
