"""Compiling the kernels before a build: once per version of the sources, in parallel.

Numba compiles a function the first time it is called with new argument types and keeps
the machine code in its cache (:mod:`tablebase.jitcache`: one folder per version of the
sources). Left to itself, a fresh install's first build compiled the solver's kernels in
its first pair task, in every worker process at once (each compiling the same kernels), for
about two minutes, and showed an ETA computed from that first slice's rate.

:func:`warm_up` compiles them instead, before any task starts, by running the work of a
build on the smallest inputs in :data:`PARTS` separate processes, each a different part of
the kernels, at the same time:

* ``solve``: the variant's 2 and 3 piece pairs solved in memory and written to a scratch
  folder (pass 1, the level passes of whole pairs, of men configurations and of slices that
  are their own mirror, the files' writer and its checks), and, ``larger``
  (``tablebase compile``, so at install), the 3-piece pairs solved again with four-byte
  state words, which only larger builds reach;
* ``probe``: move generation and perft, then, once the ``solve`` part has written the
  2-piece slices, the prober on them (single probes, the best moves, batches of values and
  of WDL codes); ``larger``, then a 3-piece pair with men solved again out of core, by
  bands (in a copy of the ``solve`` part's folder once it is complete), and the tools on
  the 3-piece folder: batches of probes with captures, a probe under the count, the
  verifier (sampled, and by blocks), a copy whose largest slice stores two-byte values
  (verified), the WDL-only copies (captures stored and left to the prober), probes of the
  folder and of each copy as a database larger than its cache sees them (no slice
  resident, blocks read one at a time and straight from the files), the Scan export, its
  comparison and probes of the exported files.

A part that reaches a kernel the other has compiled already loads it from the cache. When
both are done the cache folder is marked warm for the variant (a file ``.warm-<variant>``),
so later builds skip this; ``tablebase compile`` runs it ahead of time, ``larger``
included (marked ``.warm-<variant>-larger``), and ``make`` does at install. A build whose
cache is cold compiles only what every build needs, so that its first slice comes soon;
the rest compiles when a large pair first reaches it.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import shutil
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from tablebase.build.schedule import build_graph, end_with_parent
from tablebase.build.task import (
    BY_BANDS,
    by_men,
    entry_position,
    pair_memory,
    run_pair_task,
    solve_tables,
    tables_for_pair,
    task_mode,
)
from tablebase.build.verify import verify_database
from tablebase.material.slices import Slice, parse_slice
from tablebase.probe.cache import MIN_SLOTS
from tablebase.probe.database import Tablebase
from tablebase.probe.undercount import probe_under_count
from tablebase.rules import has_capture, legal_moves, perft
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant, get_variant
from tablebase.scanbb.export import compare_scan, export_scan
from tablebase.scanbb.files import ScanBitbases
from tablebase.scanbb.index import VARIANT_SUFFIX
from tablebase.storage.chunkio import BLOCK_BYTES
from tablebase.storage.export import export_database
from tablebase.storage.listing import slice_files
from tablebase.storage.reader import read_attrs, read_slice, read_wdl
from tablebase.storage.slicefile import slice_path
from tablebase.storage.writer import write_parts

log = logging.getLogger("tablebase.build.warmup")

PARTS = ("solve", "probe")
WARM_PIECES = 3  # the largest pairs the ``solve`` part builds
_MARKER = ".warm-{variant}"
_DONE = ".done"  # written by the ``solve`` part once every pair is written
_ENDED = ".ended"  # written by the ``solve`` part when its pairs are over, done or not
_READY = ".ready"  # written by the ``solve`` part in its folder once the 2-piece slices are


def _marker(variant: str, larger: bool = False) -> Path | None:
    folder = getattr(numba.config, "CACHE_DIR", None)  # set by tablebase.jitcache
    name = _MARKER.format(variant=variant) + ("-larger" if larger else "")
    return Path(folder) / name if folder else None


def is_warm(variant: str, larger: bool = False) -> bool:
    """Whether this version of the sources has compiled the build's kernels for
    ``variant`` (see the module docstring); ``larger``: those only larger builds reach too."""
    marker = _marker(variant, larger)
    return marker is not None and marker.exists()


def warm_up(variant: str, processes: int = 2, larger: bool = False) -> float:
    """Compile the kernels a build of ``variant`` needs (see the module docstring), in
    ``processes`` processes (1: one after the other in this process); ``larger``: those
    only larger builds reach too. Returns the seconds it took. Marks the cache folder warm
    (for ``larger`` builds too)."""
    t0 = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="tablebase-warmup-"))
    try:
        if processes <= 1:
            for part in PARTS:
                run_part(part, variant, str(scratch), larger=larger)
        else:
            ctx = mp.get_context("spawn")
            procs = [
                ctx.Process(
                    target=run_part,
                    args=(part, variant, str(scratch), os.getpid(), larger),
                    daemon=True,
                )
                for part in PARTS
            ]
            for p in procs:
                p.start()
            for p in procs:
                p.join()
            failed = [part for part, p in zip(PARTS, procs, strict=True) if p.exitcode]
            if failed:
                raise RuntimeError(
                    f"compiling the kernels failed in part {', '.join(failed)} "
                    f"(exit codes {[p.exitcode for p in procs]})"
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for marker in (_marker(variant), _marker(variant, True) if larger else None):
        if marker is not None:
            try:
                marker.touch()
            except OSError:
                pass  # a read-only cache: compiled again next time, nothing lost
    return time.perf_counter() - t0


def run_part(
    part: str, variant: str, scratch: str, parent: int | None = None, larger: bool = False
) -> None:
    """Run one part of the warm-up (``solve`` or ``probe``) in ``scratch``; in a process of
    its own (``parent``: the pid of the process that started it), dying with its parent;
    ``larger``: with its share of the kernels only larger builds reach."""
    if parent is not None:
        end_with_parent(parent)
    if part == "solve":
        _solve_part(variant, Path(scratch), larger)
    elif part == "probe":
        _probe_part(variant, Path(scratch), larger)
    else:
        raise ValueError(f"unknown warm-up part {part!r}")


def _solve_part(variant: str, scratch: Path, larger: bool = False) -> None:
    db = scratch / "db"
    db.mkdir()
    try:
        for task in build_graph(get_variant(variant), WARM_PIECES):
            if max(_pieces(n) for n in task.names) > 2:
                (scratch / _READY).touch()  # the 2-piece slices are written: probe them
            run_pair_task(variant, task.names, str(db), threads=1)
        (scratch / _DONE).touch()
    finally:  # also when a pair fails: the probe part stops waiting (and fails in turn)
        (scratch / _READY).touch()
        (scratch / _ENDED).touch()  # after _DONE: the probe part tells them apart
    if larger:
        v = get_variant(variant)
        for pair in _largest_pairs(v):  # each kind: by men, whole, its own mirror
            solve_tables(v, pair, tables_for_pair(db, v, pair), 1, vb=16)


def _largest_pairs(v: Variant) -> list[tuple[Slice, ...]]:
    """The pairs of :data:`WARM_PIECES` pieces the ``solve`` part builds."""
    return [
        tuple(parse_slice(n) for n in task.names)
        for task in build_graph(v, WARM_PIECES)
        if max(_pieces(n) for n in task.names) == WARM_PIECES
    ]


def _by_bands(variant: str, scratch: Path) -> None:
    """Once the ``solve`` part has written its pairs: a pair with men solved again out of
    core, by bands, under a cap below its task in memory (in a copy of the folder)."""
    while not (scratch / _ENDED).exists():
        time.sleep(0.05)
    if not (scratch / _DONE).exists():
        raise RuntimeError("the solve part of the warm-up failed")
    db = scratch / "db-bands"
    shutil.copytree(scratch / "db", db)
    v = get_variant(variant)
    pairs = _largest_pairs(v)
    for pair in pairs:
        cap = pair_memory(v, pair, db) - 1
        if by_men(v, pair) and task_mode(v, pair, cap, db) == BY_BANDS:
            for s in pair:
                slice_path(db, s).unlink()
            run_pair_task(variant, tuple(s.name for s in pair), str(db), 1, memory=cap)
            return
    if any(by_men(v, pair) for pair in pairs):  # else: no bands (king runs)
        raise RuntimeError(f"warm-up: no {WARM_PIECES}-piece pair of {variant} goes out of core")


def _pieces(name: str) -> int:
    return sum(int(c) for c in name)


def _probe_part(variant: str, scratch: Path, larger: bool = False) -> None:
    start = Position.start(variant)
    perft(start, 3)
    legal_moves(start)
    while not (scratch / _READY).exists():
        time.sleep(0.05)
    with Tablebase(scratch / "db", variant) as tb:
        pos = Position.from_fen(f"W:WK{tb.variant.squares}:BK1", variant)  # kings far apart
        tb.probe(pos)
        tb.probe_wdl(pos)
        tb.best_moves(pos)
        pieces = (pos.white_men, pos.white_kings, pos.black_men, pos.black_kings)
        boards = [np.full(4, b, dtype=np.uint64) for b in pieces]
        tb.probe_batch(*boards)
        tb.probe_batch_wdl(*boards)
    if larger:
        _by_bands(variant, scratch)
        _tools(variant, scratch)


def _tools(variant: str, scratch: Path) -> None:
    """On the complete folder of the ``solve`` part: batches of probes of every kind of
    position (captures included), a probe under the count, the verifier, the WDL-only
    copies, probes through a cache of a few blocks, and where Scan has bitbases of the
    variant, the Scan export, its comparison and probes of its files."""
    v = get_variant(variant)
    db = scratch / "db"
    rng = np.random.default_rng(0)
    positions = []
    for pair in _largest_pairs(v):
        for s in pair:
            for e in rng.integers(0, s.size(v), 64):
                try:
                    positions.append(entry_position(v, s, int(e)))
                except ValueError:
                    pass  # an entry that is not a position (a king run on no king)
    pieces = [(p.white_men, p.white_kings, p.black_men, p.black_kings) for p in positions]
    boards = [np.array(x, dtype=np.uint64) for x in zip(*pieces, strict=True)]
    with Tablebase(db, variant) as tb:
        tb.probe_many(positions)
        tb.probe_batch(*boards)
        tb.probe_batch_wdl(*boards)
        counted = next(p for p in positions if not has_capture(p))
        probe_under_count(tb, counted, 0)  # the count search and the draw rules
    verify_database(db, v, sample=256)
    verify_database(db, v, memory=1 << 10)  # every entry, by blocks (as under a small cap)
    verify_database(db, v, sample=256, memory=1 << 10)
    wide = _two_byte_copy(db, v, scratch / "wide")
    verify_database(wide, v, sample=256)
    verify_database(wide, v, memory=1 << 10)
    export_database(db, scratch / "wdl-only", wdl_only=True)
    export_database(db, scratch / "wdl-bare", wdl_only=True, resolve_captures=True)
    for folder, wdl_only in (
        (db, False),
        (wide, False),
        (scratch / "wdl-only", True),
        (scratch / "wdl-bare", True),
    ):
        _probe_uncached(folder, variant, wdl_only, positions[::4], boards)
    if v.name in VARIANT_SUFFIX:  # the variants Scan has bitbases of
        export_scan(db, scratch / "scan")
        compare_scan(db, scratch / "scan")
        bitbases = ScanBitbases(scratch / "scan", v)
        for p in positions[::16]:
            bitbases.probe(p)


def _two_byte_copy(db: Path, v: Variant, folder: Path) -> Path:
    """A copy of ``db`` whose largest slice stores its values with two bytes each (as a
    slice whose distances pass 254 plies does; the values themselves unchanged)."""
    shutil.copytree(db, folder)
    s = max((s for s, _ in slice_files(folder).slices), key=lambda t: t.size(v))
    path = slice_path(folder, s)
    values = read_slice(path, v, s).astype(np.uint16)
    packed = read_wdl(path, v, s)
    attrs = {k: a for k, a in read_attrs(path).items() if k not in ("parts", "value_bits")}
    path.unlink()
    write_parts(folder, v, s, attrs, packed, values)
    return folder


def _probe_uncached(
    db: Path, variant: str, wdl_only: bool, positions: list[Position], boards: list[np.ndarray]
) -> None:
    """Probes as a database larger than the cache sees them: no slice resident, a cache of
    a few blocks, blocks read one at a time and straight from the files; batches with
    either side to move, as one flag and one a position."""
    wtm = np.arange(boards[0].shape[0]) % 2 == 0
    with Tablebase(db, variant, wdl_only, MIN_SLOTS * BLOCK_BYTES, resident_pieces=0) as tb:
        for p in positions:
            tb.probe_wdl(p)
            if not wdl_only:
                tb.probe(p)
        wm, wk, bm, bk = boards
        for side in (True, False, wtm):
            tb.probe_batch_wdl(wm, wk, bm, bk, side)
            if not wdl_only:
                tb.probe_batch(wm, wk, bm, bk, side)
