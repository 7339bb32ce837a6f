"""Cluster sizing: positions, memory per task and disk for 5-, 6- and 7-piece databases.

Prints Markdown tables (reproduced in ``docs/CLUSTER.md``), computed from the slice sizes
(:meth:`Slice.size`) and the pair dependencies (:func:`pair_dependencies`):

* memory of a pair task: :func:`tablebase.solve.memory.task_memory_bytes` of the pair's entries
  and its dependencies' entries, the same estimate the local scheduler's ``--memory``
  budget uses, so this table follows the solver's working state;
* disk of a slice ~ its entries x the bits per entry measured on the files of an existing
  2-4 piece database (``--db``; gzip-compressed HDF5).

    python scripts/cluster_sizing.py --db data/international
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tablebase.build.schedule import parse_size
from tablebase.build.task import (
    BY_BANDS,
    IN_MEMORY,
    MAPPED,
    out_of_core,
    pair_memory,
    planned_memory,
    task_mode,
)
from tablebase.material.slices import all_slices, build_pairs, pair_dependencies
from tablebase.rules.variants import Variant, get_variant
from tablebase.solve.memory import task_memory_bytes


def human(n: float) -> str:
    """Bytes with a binary prefix: ``1.5 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def count(n: float) -> str:
    """A count with a short suffix: ``46.0 G``."""
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.1f} {suffix}"
    return f"{n:.0f}"


def measured_bits(variant: Variant, db: Path, pieces: int) -> dict[int, tuple[int, int]]:
    """Per piece count up to ``pieces``: (file bytes, entries) of the slices found in ``db``."""
    out: dict[int, tuple[int, int]] = {}
    for s in all_slices(pieces):
        path = db / s.file_name()
        if not path.exists():
            sys.exit(f"{path} is missing: build it first (tablebase generate --pieces {pieces})")
        size, entries = out.get(s.pieces, (0, 0))
        out[s.pieces] = (size + path.stat().st_size, entries + s.size(variant))
    return out


def row(cells: list) -> str:
    """One Markdown table row."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", default="international")
    ap.add_argument("--db", type=Path, default=None, help="A 2-4 piece database to measure.")
    ap.add_argument("--measure", type=int, default=4, help="Measure files up to N pieces.")
    ap.add_argument("--pieces", type=int, nargs="+", default=[5, 6, 7])
    ap.add_argument(
        "--cap",
        default=None,
        help="A memory cap (20G): the memory of each pair's task under it, in memory or out "
        "of core (the plan `generate --memory` would take), and the pairs above it.",
    )
    args = ap.parse_args(argv)
    variant = get_variant(args.variant)
    db = args.db or Path("data") / variant.name

    measured = measured_bits(variant, db, args.measure)
    total_bytes = sum(b for b, _ in measured.values())
    total_entries = sum(e for _, e in measured.values())
    bits = 8 * total_bytes / total_entries
    print(f"Measured on the 2-{args.measure} piece {variant.name} files: {bits:.2f} bits per")
    print(
        "entry overall ("
        + ", ".join(f"{p} pieces {8 * b / e:.2f}" for p, (b, e) in sorted(measured.items()))
        + ").\n"
    )

    fixed = task_memory_bytes(0, 0)
    big = 10**9  # the function's rates, read off it rather than from its constants
    per_pair = (task_memory_bytes(big, 0, 0) - fixed) / big
    per_dep = (task_memory_bytes(0, big, 0) - fixed) / big
    per_write = (task_memory_bytes(0, 0, big) - fixed) / big
    print(
        "Memory of a pair task (`tablebase.solve.memory.task_memory_bytes`, the estimate behind "
        f"`--memory`): {per_pair:g} bytes per entry of the pair, {per_dep:g} per entry of "
        f"the dependencies it loads, {per_write:g} per entry of its larger slice while that "
        f"is written, and {human(fixed)} for the process.\n"
    )
    columns = [
        "pieces",
        "slices",
        "pair tasks",
        "positions",
        "largest slice",
        "memory, largest task",
        "memory, median task",
        "disk, largest slice",
        "disk, all N-piece slices",
        "disk, 2..N total",
    ]
    print(row(columns))
    print(row(["---:"] * len(columns)))
    cumulative = sum(s.size(variant) for s in all_slices(min(args.pieces) - 1))
    for n in args.pieces:
        slices = all_slices(n, n)
        pairs = [p for p in build_pairs(n) if p[0].pieces == n]
        entries = sum(s.size(variant) for s in slices)
        cumulative += entries
        largest = max(s.size(variant) for s in slices)
        mem = sorted(pair_memory(variant, p) for p in pairs)
        cells = [n, len(slices), len(pairs), count(entries), count(largest)]
        cells += [human(mem[-1]), human(mem[len(mem) // 2])]
        cells += [human(x * bits / 8) for x in (largest, entries, cumulative)]
        print(row(cells))

    n = max(args.pieces)
    pairs = [p for p in build_pairs(n) if p[0].pieces == n]
    heavy = sorted(pairs, key=lambda p: -pair_memory(variant, p))[:5]
    print(f"\nThe {len(heavy)} most memory-hungry {n}-piece tasks:\n")
    print("| pair | entries | dependency entries | memory |")
    print("|---|---:|---:|---:|")
    for p in heavy:
        entries = sum(s.size(variant) for s in p)
        deps = sum(d.size(variant) for d in pair_dependencies(p[0]))
        print(
            f"| {'+'.join(s.name for s in p)} | {count(entries)} | {count(deps)} "
            f"| {human(pair_memory(variant, p))} |"
        )
    out_of_core_table(variant, n, pairs)
    if args.cap:
        cap_table(variant, n, pairs, parse_size(args.cap))


def out_of_core_table(variant: Variant, n: int, pairs: list) -> None:
    """The memory of the ``n``-piece pair tasks that can go out of core by bands of men
    configurations (:mod:`tablebase.build.outofcore`): the solve with bands of a whole
    group of equal advancement (the largest band's window, both parts, plus what it reads,
    the threads' scratch and the plan: :func:`tablebase.build.outofcore.task_memory` less
    the writing), the least (:func:`tablebase.build.outofcore.least_memory`), and the
    writing of the slices, which holds nothing of a slice's size (its parts are
    memory-mapped files, the file is built on disk)."""
    from tablebase.build import outofcore
    from tablebase.solve import bands
    from tablebase.solve.memory import FIXED_TASK_BYTES

    by_band = [p for p in pairs if out_of_core(variant, p, 0)]
    print(
        f"\nOut of core by bands ({len(by_band)} of the {len(pairs)} {n}-piece pairs can be "
        "solved by men configurations; the others stay in memory). Solve: the largest band "
        "of whole groups (its window of two- or four-byte state words, both parts, its own "
        "configurations and those it reads, plus the threads' scratch and the plan; the "
        "dependencies are memory-mapped, page cache). Write: the slices' files, their parts "
        "memory-mapped.\n"
    )
    print("| pair | in memory | out of core: solve, bands of a group | solve, least | write |")
    print("|---|---:|---:|---:|---:|")
    rows = []
    for p in sorted(by_band, key=lambda p: -pair_memory(variant, p))[:8]:
        plan = bands.plan(variant, p, 1 << 62)
        solve = bands.band_memory(variant, plan) + FIXED_TASK_BYTES
        del plan
        least = outofcore.least_memory(variant, p) - FIXED_TASK_BYTES
        least_solve = least if least > outofcore.write_memory(variant, p) else None
        rows.append((pair_memory(variant, p), p, solve, least_solve))
    for mem, p, solve, least_solve in rows:
        least_txt = "write-bound" if least_solve is None else human(least_solve + FIXED_TASK_BYTES)
        print(
            f"| {'+'.join(s.name for s in p)} | {human(mem)} | {human(solve)} | {least_txt} "
            f"| {human(outofcore.write_memory(variant, p) + FIXED_TASK_BYTES)} |"
        )


def cap_table(variant: Variant, n: int, pairs: list, cap: int) -> None:
    """Each ``n``-piece pair's task under the memory cap ``cap``, as ``generate --memory``
    plans it (:func:`tablebase.build.task.task_mode`, :func:`~tablebase.build.task.planned_memory`):
    in memory where it fits, else out of core with the largest bands that fit, else whole
    with its dependencies mapped, else the least it needs; the largest tasks and every
    pair above the cap."""
    rows = []
    for p in pairs:
        rows.append((planned_memory(variant, p, cap), task_mode(variant, p, cap), p))
    rows.sort(key=lambda r: -r[0])
    over = [r for r in rows if r[0] > cap]
    modes = {m: sum(1 for r in rows if r[1] == m) for m in (BY_BANDS, MAPPED, IN_MEMORY)}
    print(
        f"\nUnder a cap of {human(cap)}, of the {len(pairs)} {n}-piece pairs: "
        f"{modes[BY_BANDS]} go out of core by bands, {modes[MAPPED]} are solved whole with "
        f"their dependencies mapped, {modes[IN_MEMORY]} in memory; largest task "
        f"{human(rows[0][0])}; {len(over)} above the cap.\n"
    )
    print("| pair | task under the cap | how | in memory |")
    print("|---|---:|---|---:|")
    for mem, how, p in rows[: max(8, len(over))]:
        print(
            f"| {'+'.join(s.name for s in p)} | {human(mem)} | {how} "
            f"| {human(pair_memory(variant, p))} |"
        )


if __name__ == "__main__":
    main()
