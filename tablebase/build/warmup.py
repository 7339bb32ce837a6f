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
  are their own mirror, the files' writer and its checks);
* ``probe``: move generation and perft, then, once the ``solve`` part has written the
  2-piece slices, the prober on them (single probes, the best moves, batches of values and
  of WDL codes).

A part that reaches a kernel the other has compiled already loads it from the cache. When
both are done the cache folder is marked warm for the variant (a file ``.warm-<variant>``),
so later builds skip this; ``tablebase compile`` runs it ahead of time, and ``make``
does at install. A kernel that only larger builds reach (four-byte state words, out of
core bands) still compiles on its first use.
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
from tablebase.build.task import run_pair_task
from tablebase.probe.database import Tablebase
from tablebase.rules import legal_moves, perft
from tablebase.rules.position import Position
from tablebase.rules.variants import get_variant

log = logging.getLogger("tablebase.build.warmup")

PARTS = ("solve", "probe")
WARM_PIECES = 3  # the largest pairs the ``solve`` part builds
_MARKER = ".warm-{variant}"
_READY = ".ready"  # written by the ``solve`` part in its folder once the 2-piece slices are


def _marker(variant: str) -> Path | None:
    folder = getattr(numba.config, "CACHE_DIR", None)  # set by tablebase.jitcache
    return Path(folder) / _MARKER.format(variant=variant) if folder else None


def is_warm(variant: str) -> bool:
    """Whether this version of the sources has compiled the build's kernels for
    ``variant`` (see the module docstring)."""
    marker = _marker(variant)
    return marker is not None and marker.exists()


def warm_up(variant: str, processes: int = 2) -> float:
    """Compile the kernels a build of ``variant`` needs (see the module docstring), in
    ``processes`` processes (1: one after the other in this process); returns the seconds
    it took. Marks the cache folder warm."""
    t0 = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="tablebase-warmup-"))
    try:
        if processes <= 1:
            for part in PARTS:
                run_part(part, variant, str(scratch))
        else:
            ctx = mp.get_context("spawn")
            procs = [
                ctx.Process(
                    target=run_part, args=(part, variant, str(scratch), os.getpid()), daemon=True
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
    marker = _marker(variant)
    if marker is not None:
        try:
            marker.touch()
        except OSError:
            pass  # a read-only cache: compiled again next time, nothing lost
    return time.perf_counter() - t0


def run_part(part: str, variant: str, scratch: str, parent: int | None = None) -> None:
    """Run one part of the warm-up (``solve`` or ``probe``) in ``scratch``; in a process of
    its own (``parent``: the pid of the process that started it), dying with its parent."""
    if parent is not None:
        end_with_parent(parent)
    if part == "solve":
        _solve_part(variant, Path(scratch))
    elif part == "probe":
        _probe_part(variant, Path(scratch))
    else:
        raise ValueError(f"unknown warm-up part {part!r}")


def _solve_part(variant: str, scratch: Path) -> None:
    db = scratch / "db"
    db.mkdir()
    try:
        for task in build_graph(get_variant(variant), WARM_PIECES):
            if max(_pieces(n) for n in task.names) > 2:
                (scratch / _READY).touch()  # the 2-piece slices are written: probe them
            run_pair_task(variant, task.names, str(db), threads=1)
    finally:  # also when a pair fails: the probe part stops waiting (and fails in turn)
        (scratch / _READY).touch()


def _pieces(name: str) -> int:
    return sum(int(c) for c in name)


def _probe_part(variant: str, scratch: Path) -> None:
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
