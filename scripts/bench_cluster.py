"""Benchmark the Dask backend against the local one: wall time of ``tablebase generate``.

Runs ``tablebase generate --pieces N`` into fresh temporary directories, once with the
local process pool and once with ``--scheduler local-cluster:W`` (W worker processes on
this machine), and prints both wall times, the Dask overhead in percent, and whether the
two databases are byte-identical. The times include starting (and for Dask, stopping) the
workers, as a user would see them.

    python scripts/bench_cluster.py --pieces 4
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-c", "from tablebase.cli import main; main()"]


def generate(db: Path, variant: str, pieces: int, extra: list[str]) -> float:
    """Wall seconds of one ``tablebase generate`` run into the fresh directory ``db``."""
    cmd = [*CLI, "generate", "--variant", variant, "--pieces", str(pieces), "--db", str(db)]
    t0 = time.perf_counter()
    proc = subprocess.run([*cmd, *extra], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"{' '.join(cmd + extra)} failed:\n{proc.stderr}")
    return seconds


def digests(db: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(db.iterdir())}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pieces", type=int, default=4, help="Up to N pieces (default 4).")
    ap.add_argument("--variant", default="international")
    ap.add_argument("--workers", type=int, default=2, help="Dask workers (default 2).")
    ap.add_argument("--repeat", type=int, default=1, help="Runs per backend; median shown.")
    ap.add_argument("--no-warmup", action="store_true", help="Skip the 2-piece warm-up run.")
    args = ap.parse_args(argv)

    cluster = f"local-cluster:{args.workers}"
    backends = {"local": [], cluster: ["--scheduler", cluster]}  # name -> extra CLI arguments
    times: dict[str, list[float]] = {name: [] for name in backends}
    same = True
    with tempfile.TemporaryDirectory(prefix="bench_cluster_") as tmp:
        if not args.no_warmup:  # numba's on-disk cache, imports: not part of either figure
            generate(Path(tmp) / "warmup", args.variant, 2, [])
        for r in range(args.repeat):
            sums = {}
            order = list(backends) if r % 2 == 0 else list(reversed(backends))
            for name in order:
                db = Path(tmp) / f"{name.replace(':', '-')}-{r}"
                times[name].append(generate(db, args.variant, args.pieces, backends[name]))
                sums[name] = digests(db)
                shutil.rmtree(db)
                print(f"run {r + 1}: {name:>16}: {times[name][-1]:7.1f} s", flush=True)
            same = same and len(set(map(str, sums.values()))) == 1

    local, dask = (statistics.median(t) for t in times.values())
    print(
        f"\n{args.variant}, 2-{args.pieces} pieces, {os.cpu_count()} cores, "
        f"median of {args.repeat}:"
    )
    print(f"  local processes      : {local:7.1f} s")
    print(f"  {cluster:<21}: {dask:7.1f} s")
    print(f"  Dask overhead        : {100 * (dask - local) / local:+6.1f} %")
    print(f"  identical files      : {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
