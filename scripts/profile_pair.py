"""Profile one pair's solve by compiled kernel: Linux ``perf`` with the kernels' names.

``perf`` sees numba's code as anonymous memory. This script compiles the kernels in its own
process (a fresh numba cache folder, so nothing is loaded from an object file whose
symbols numba does not keep), solves the pair from the dependencies in ``--db`` (read first,
untimed) under ``perf record -p`` on its own process, then writes ``/tmp/perf-<pid>.map``
(every compiled function's address and size, the convention ``perf report`` reads for
JIT code) and prints the share of the samples per function. Helpers compiled
``inline="always"`` are counted in the kernel that inlines them; ``--no-inline`` is not
offered because it would measure other code.

    python scripts/profile_pair.py --variant international --pair 1211 --db DB [--threads 1]
    python scripts/profile_pair.py ... --write        # the files' writing too (to a temp folder)

The compile takes minutes (the fresh cache); the pair's dependencies must be in ``DB``. The
result is written to stdout; ``--keep DIR`` keeps ``perf.data`` and the map for ``perf
annotate``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

FRESH = tempfile.mkdtemp(prefix="profile-pair-numba-")
os.environ["NUMBA_CACHE_DIR"] = FRESH  # before tablebase is imported (tablebase.jitcache)

import numba  # noqa: E402
from numba.core.registry import CPUDispatcher  # noqa: E402

from tablebase.build import task  # noqa: E402
from tablebase.material.slices import parse_slice  # noqa: E402
from tablebase.rules.variants import get_variant  # noqa: E402
from tablebase.storage.writer import write_slice  # noqa: E402


def compiled_functions() -> list[tuple[int, str]]:
    """``(address, name)`` of every function compiled in this process so far."""
    seen: set[int] = set()
    out: list[tuple[int, str]] = []
    for mod in list(sys.modules.values()):
        name = getattr(mod, "__name__", "")
        if not (name.startswith("tablebase") or name.startswith("numba")):
            continue
        for obj in list(vars(mod).values()):
            if not isinstance(obj, CPUDispatcher) or id(obj) in seen:
                continue
            seen.add(id(obj))
            for cres in obj.overloads.values():
                lib = cres.library
                module = getattr(lib, "_final_module", None)
                if module is None:
                    continue
                for fn in module.functions:
                    if fn.is_declaration:
                        continue
                    try:
                        addr = lib.get_pointer_to_function(fn.name)
                    except Exception:  # noqa: BLE001 - a name the engine does not export
                        continue
                    if addr:
                        out.append((addr, f"{obj.py_func.__module__}.{obj.py_func.__name__}"))
    return sorted(set(out))


def write_map(pid: int, funcs: list[tuple[int, str]]) -> Path:
    """``/tmp/perf-<pid>.map``: each function from its address to the next one's."""
    path = Path(f"/tmp/perf-{pid}.map")
    with open(path, "w") as f:
        for (a, name), (b, _) in zip(funcs, [*funcs[1:], (funcs[-1][0] + 65536, "")], strict=True):
            f.write(f"{a:x} {max(1, min(b - a, 1 << 24)):x} {name}\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="international")
    ap.add_argument("--pair", required=True, help="a slice of the pair, e.g. 1211")
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--write", action="store_true", help="profile the files' writing too")
    ap.add_argument("--keep", type=Path, help="keep perf.data and the map here")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    if shutil.which("perf") is None:
        print("perf is not installed", file=sys.stderr)
        return 2
    v = get_variant(args.variant)
    first = parse_slice(args.pair)
    pair = first.pair
    print(f"compiling into a fresh cache ({FRESH}): the pair solved once untimed", flush=True)
    tables = task.dependency_tables(args.db, v, pair)
    t = time.perf_counter()
    task.solve_tables(v, pair, tables, args.threads)
    print(f"first solve (compiling) {time.perf_counter() - t:.1f} s", flush=True)
    tables = task.dependency_tables(args.db, v, pair)
    out = Path(tempfile.mkdtemp(prefix="profile-pair-"))
    data = out / "perf.data"
    rec = subprocess.Popen(
        ["perf", "record", "-q", "-F", "999", "-g", "-o", str(data), "-p", str(os.getpid())],
        stdout=subprocess.DEVNULL,
    )
    time.sleep(1.0)
    t = time.perf_counter()
    sol = task.solve_tables(v, pair, tables, args.threads)
    solve_s = time.perf_counter() - t
    if args.write:
        for s in pair:
            stats, fen = task.slice_stats(v, s, sol.view(s))
            write_slice(out, v, s, sol.view(s), stats, fen)
    total_s = time.perf_counter() - t
    rec.send_signal(signal.SIGINT)
    rec.wait()
    mp = write_map(os.getpid(), compiled_functions())
    print(
        f"solve {solve_s:.1f} s (pass 1 {sol.pass1_seconds:.1f}, levels {sol.level_seconds:.1f})"
        + (f", with the files {total_s:.1f} s" if args.write else "")
    )
    rep = subprocess.run(
        ["perf", "report", "-i", str(data), "--no-children", "--stdio", "-q", "-g", "none",
         "--sort", "symbol", "--percent-limit", "0.3"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    shares: Counter[str] = Counter()
    for line in rep.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith("%"):
            shares[" ".join(parts[2:])] += float(parts[0][:-1])
    for name, pct in shares.most_common(args.top):
        print(f"{pct:6.2f}%  {name}")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(data, args.keep / "perf.data")
        shutil.copy(mp, args.keep / mp.name)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(FRESH, ignore_errors=True)
    numba.config.reload_config()
    return 0


if __name__ == "__main__":
    sys.exit(main())
