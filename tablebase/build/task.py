"""The slice task: solve one slice pair from its solved dependencies and write its files.

:func:`run_pair_task` is the unit of work every scheduler (local processes, a cluster)
hands out: it reads its inputs (the smaller slices its captures and promotions reach) from
the database directory, solves, and writes one file per slice of the pair, each under a
temporary name and renamed when complete. A pair whose files exist and verify is skipped,
so rerunning a build resumes it. The algorithm itself is in :mod:`tablebase.solve`: its
skeleton (:mod:`tablebase.solve.skeleton`) runs the kernels of the passes over the whole pair
(:mod:`tablebase.solve.whole`), of king runs (:mod:`tablebase.solve.runs`) and of a pair with
men solved one men configuration at a time (:mod:`tablebase.solve.men`).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numba
import numpy as np

from tablebase.build import outofcore
from tablebase.build.faults import MemoryBudgetError, SliceWriteError, describe
from tablebase.material.index import BINOM, position_from_index, run_of_code
from tablebase.material.slices import Slice, flat_offsets, pair_dependencies, parse_slice
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant, get_variant
from tablebase.solve import memory as solve_memory
from tablebase.solve import men as solve_men
from tablebase.solve import skeleton
from tablebase.solve import stats as solve_stats
from tablebase.storage.checks import check_wdl_part
from tablebase.storage.reader import read_attrs, read_slice
from tablebase.storage.slicefile import SliceStats, TableFileError, slice_path
from tablebase.storage.writer import write_slice

if TYPE_CHECKING:
    from ctypes import c_int

    from tablebase.solve.bands import Plan

log = logging.getLogger("tablebase.build.task")


@dataclass(frozen=True)
class PairReport:
    """What a pair task did: per slice, its stats; how long it took; how many random
    table accesses the solve made (reads of solved tables, predecessor visits); and where
    the time went (:data:`PHASES`: reading the dependencies, pass 1, the level passes,
    counting and writing the files; zeros for a pair found complete)."""

    slices: tuple[str, ...]
    stats: tuple[SliceStats, ...]
    entries: int
    seconds: float
    skipped: bool
    random_accesses: int = 0
    phase_seconds: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)


PHASES = ("read", "pass 1", "levels", "write")  # the parts of PairReport.phase_seconds


class FlatTables:
    """Slices laid end to end in one value array, with ``offsets[material code]``."""

    def __init__(
        self,
        variant: Variant,
        slices: tuple[Slice, ...] | list[Slice],
        dtype: type = np.uint8,
    ) -> None:
        self.variant = variant
        self.offsets, total = flat_offsets({s.code: s.size(variant) for s in slices})
        self.vals: np.ndarray = np.zeros(total, dtype=dtype)
        self.where = {s: (int(self.offsets[s.code]), s.size(variant)) for s in slices}

    def view(self, s: Slice) -> np.ndarray:
        pos, size = self.where[s]
        return self.vals[pos : pos + size]

    def load(self, db: Path, s: Slice) -> None:
        """Read slice ``s`` from ``db`` straight into its place (checked)."""
        read_slice(slice_path(db, s), self.variant, s, out=self.view(s))

    def widen(self) -> None:
        """Hold two-byte values from now on (for a pair solved with four-byte state words); the
        one-byte array is let go."""
        self.vals = self.vals.astype(np.uint16)


@dataclass
class PairSolution:
    """The solved values of a pair (its slices end to end in one array) and its cost."""

    where: dict[Slice, tuple[int, int]]
    values: np.ndarray  # uint8, or uint16 where distances need two bytes
    random_accesses: int
    levels: int
    # per slice, a bit per entry: not a position, or a capture pending (the entries the
    # older, resolved WDL form leaves out: storage.write_slice(captures=False))
    unstored_bits: dict[Slice, np.ndarray]
    pass1_seconds: float = 0.0  # pass 1 of both slices (of the last solve, if widened)
    level_seconds: float = 0.0  # the level passes and the compaction into values

    def view(self, s: Slice) -> np.ndarray:
        pos, size = self.where[s]
        return self.values[pos : pos + size]

    def dont_care(self, s: Slice) -> np.ndarray:
        """Per entry of ``s``: not a position, or a capture pending (the older WDL form
        leaves these out and a probe resolves captures through their successors; the form
        written now stores capture positions and finds the non-positions itself). In slices
        with king runs only the entries that are not positions."""
        size = self.where[s][1]
        bits = np.unpackbits(self.unstored_bits[s], count=size, bitorder="little")
        return bits.view(np.bool_)


def _counts(s: Slice) -> np.ndarray:
    return np.array(tuple(s), dtype=np.int64)


def load_dependencies(
    db: Path, variant: Variant, pair: tuple[Slice, ...]
) -> dict[Slice, np.ndarray]:
    """Values of every slice the pair needs, read and checked from ``db``."""
    deps = sorted(pair_dependencies(pair[0]))
    return {d: read_slice(slice_path(db, d), variant, d) for d in deps}


def dependency_value_bytes(db: Path, pair: tuple[Slice, ...]) -> int:
    """Bytes per value the pair's dependencies are read with: 2 if one of them is stored
    with 16-bit values, else 1 (files not written yet count as 1)."""
    for d in pair_dependencies(pair[0]):
        path = slice_path(db, d)
        if path.exists() and read_attrs(path).get("value_bits", 8) == 16:
            return 2
    return 1


def pair_memory(variant: Variant, pair: tuple[Slice, ...], db: Path | None = None) -> int:
    """The estimated peak memory of the pair's task
    (:func:`tablebase.solve.memory.task_memory_bytes`)
    with its dependencies as stored in ``db`` now; without ``db``, read with one byte each
    (the build graph's estimate, before they exist). A pair solved by men configurations
    adds a configuration's scratch for each of numba's threads (:mod:`tablebase.solve.men`)."""
    deps = pair_dependencies(pair[0])
    scratch = 0
    if by_men(variant, pair):
        per_thread = solve_men.scratch_bytes(variant.squares, _counts(pair[0]), BINOM)
        scratch = per_thread * solve_men.pool_threads()
    return scratch + solve_memory.task_memory_bytes(
        sum(s.size(variant) for s in pair),
        sum(d.size(variant) for d in deps),
        max(s.size(variant) for s in pair),
        1 if db is None else dependency_value_bytes(db, pair),
    )


def dependency_tables(db: Path, variant: Variant, pair: tuple[Slice, ...]) -> FlatTables:
    """Every slice the pair needs, read and checked from ``db``, in one array."""
    deps = sorted(pair_dependencies(pair[0]))
    wide = dependency_value_bytes(db, pair) == 2
    t = FlatTables(variant, deps, np.uint16 if wide else np.uint8)
    for d in deps:
        t.load(db, d)
    return t


def tables_for_pair(db: Path, variant: Variant, pair: tuple[Slice, ...]) -> FlatTables:
    """The pair (zeroed, first) and its dependencies read from ``db``, in one array."""
    deps = sorted(pair_dependencies(pair[0]))
    t = FlatTables(variant, (*pair, *deps))
    for d in deps:
        t.load(db, d)
    return t


def solve_pair(
    variant: Variant, pair: tuple[Slice, ...], deps: dict[Slice, np.ndarray], threads: int = 1
) -> PairSolution:
    """Solve a slice pair given its dependencies' values."""
    t = FlatTables(variant, list(deps))
    for d, values in deps.items():
        t.view(d)[:] = values
    return solve_tables(variant, pair, t, threads)


def solve_tables(
    variant: Variant, pair: tuple[Slice, ...], deps: FlatTables, threads: int, vb: int = 8
) -> PairSolution:
    """Solve the pair from its dependencies ``deps`` (see :mod:`tablebase.solve.whole`) with
    two-byte state words, its values one byte each, or two where a distance passes one
    byte (a decided state word holds them). Where a word's undecided half overflows (an
    exit value over :func:`tablebase.solve.whole.max_value` or a quiet move count past its 7
    bits) the pair is solved again with four-byte state words (then ``deps`` is widened in
    place). Uses ``threads`` compiled threads (the level passes store counters without
    atomics on one thread). ``vb=16``: four-byte state words from the start."""
    numba.set_num_threads(min(max(1, threads), solve_men.pool_threads()))
    if vb == 8:
        try:
            return _solve(variant, pair, deps, threads, 8)
        except OverflowError as e:
            log.info(
                "%s: %s, solving again with four-byte state words",
                "+".join(s.name for s in pair),
                e,
            )
    if deps.vals.dtype == np.uint8:
        deps.widen()
    return _solve(variant, pair, deps, threads, 16)


# Set in a scheduler's worker process (:func:`work_for`): a shared integer
# (``multiprocessing.Value``), the threads each task may use now. The local scheduler
# shares its threads (jobs x threads) among the tasks running, so that a pair left alone
# at the end of a build (or waiting for nothing while the others wait for it) gets every
# core; a task reads it before each parallel pass. None: a task keeps the count it was given.
THREAD_SHARE: c_int | None = None


def pass_threads(threads: int) -> int:
    """Set and return the compiled threads of the next parallel pass: the scheduler's
    current share (:data:`THREAD_SHARE`) where it gives one, else ``threads``; at most
    numba's pool."""
    if THREAD_SHARE is not None:
        threads = THREAD_SHARE.value
    n = min(max(1, threads), solve_men.pool_threads())
    numba.set_num_threads(n)
    return n


def _solve(
    variant: Variant, pair: tuple[Slice, ...], deps: FlatTables | _Mapped, threads: int, vb: int
) -> PairSolution:
    nchunks = max(threads, solve_men.pool_threads() if THREAD_SHARE else 1) * 32
    got = skeleton.solve_pair_state(
        variant, pair, deps.vals, deps.offsets, vb, lambda: pass_threads(threads), nchunks
    )
    return PairSolution(
        got.where,
        got.values,
        got.random_accesses,
        got.levels,
        got.flags,
        got.pass1_seconds,
        got.level_seconds,
    )


def by_men(variant: Variant, pair: tuple[Slice, ...]) -> bool:
    """Whether the pair is solved one men configuration at a time (:mod:`tablebase.solve.men`:
    a variant without king runs, two slices with men, see :func:`tablebase.solve.men.applies`)."""
    return solve_men.solves(variant, pair)


def entry_position(variant: Variant, s: Slice, entry: int) -> Position:
    """The position (white to move, with its king runs) of entry ``entry`` of slice ``s``."""
    cw, cb = s.run_states(variant)
    board, code = divmod(int(entry), cw * cb)
    wm, wk, bm, bk, _ = position_from_index(
        board, variant.squares, variant.per_row, *tuple(s), BINOM
    )
    if cw * cb == 1:
        return Position(int(wm), int(wk), int(bm), int(bk), True, variant)
    limit = variant.king_move_limit
    wsq, wn = run_of_code(limit, wk, code // cb)
    bsq, bn = run_of_code(limit, bk, code % cb)
    runs = ((int(wsq) + 1 if wn else 0, int(wn)), (int(bsq) + 1 if bn else 0, int(bn)))
    return Position(int(wm), int(wk), int(bm), int(bk), True, variant, king_runs=runs)


def slice_stats(variant: Variant, s: Slice, values: np.ndarray) -> tuple[SliceStats, str]:
    """Counts of a solved slice and the FEN of its longest win ('' if none)."""
    cw, cb = s.run_states(variant)
    boards = values.shape[0] // (cw * cb)
    valid = solve_stats.valid_mask(boards, variant.squares, variant.per_row, _counts(s), BINOM)
    positions, wins, losses, top, example = solve_stats.value_counts(values, valid, cw * cb)
    del valid
    draws = positions - wins - losses
    longest, fen = -1, ""
    if wins:
        longest = top - 1
        fen = entry_position(variant, s, example).fen()
    else:
        example = -1
    stats = SliceStats(int(positions), int(wins), int(draws), int(losses), longest, int(example))
    return stats, fen


def pair_complete(db: Path, variant: Variant, pair: tuple[Slice, ...]) -> bool:
    """True if every file of the pair exists and verifies: its metadata against its digest
    (checked again), its values against their checksum and its WDL part against the values
    (:func:`tablebase.storage.checks.check_wdl_part`); damaged files are reported."""
    for s in pair:
        path = slice_path(db, s)
        if not path.exists():
            return False
        try:
            values = read_slice(path, variant, s, recheck=True)
            check_wdl_part(path, variant, s, values)
        except TableFileError as e:
            log.warning("%s; it will be regenerated", e)
            return False
    return True


# How a pair task runs under a memory cap (:func:`task_mode`)
IN_MEMORY, BY_BANDS, MAPPED = "in memory", "out of core", "dependencies mapped"


def task_mode(
    variant: Variant, pair: tuple[Slice, ...], memory: int | None, db: Path | None = None
) -> str:
    """How ``pair`` is solved under the cap ``memory`` (None: no cap):

    * :data:`IN_MEMORY` where its task fits (:func:`pair_memory`);
    * else :data:`BY_BANDS` (:mod:`tablebase.build.outofcore`): a pair that can be solved
      by men configurations (:func:`tablebase.solve.men.solvable`, even where that is
      slower in memory) whose least out-of-core task fits the cap;
    * else :data:`MAPPED`: the whole pair's state in memory, its dependencies read from a
      file of their values through the page cache (:func:`mapped_memory`), where that
      fits: a pair of men only (whose plan by bands, 16 bytes per configuration of one
      entry, outweighs it), of kings only (no men to cut by), or whose bands do not fit;
    * where none fits, the one that needs the least (the build refuses it, naming that).
    """
    whole = pair_memory(variant, pair, db)
    if memory is None or whole <= memory:
        return IN_MEMORY
    need = {IN_MEMORY: whole, MAPPED: mapped_memory(variant, pair)}
    if solve_men.solvable(variant, pair):
        need[BY_BANDS] = outofcore.least_memory(variant, pair)
    for mode in (BY_BANDS, MAPPED):
        if mode in need and need[mode] <= memory:
            return mode
    return min(need, key=lambda m: need[m])


def out_of_core(
    variant: Variant, pair: tuple[Slice, ...], memory: int | None, db: Path | None = None
) -> bool:
    """Whether ``pair`` is solved out of core by bands under the cap ``memory``
    (:func:`task_mode`)."""
    return task_mode(variant, pair, memory, db) == BY_BANDS


def mapped_memory(variant: Variant, pair: tuple[Slice, ...]) -> int:
    """The estimated peak memory of the pair's task with its dependencies mapped from a
    file (:data:`MAPPED`): the pair's state words as in memory, the writing of its files
    through a scratch folder (:func:`tablebase.build.outofcore.write_memory`), and what
    any task holds; the dependencies are page cache."""
    entries = sum(s.size(variant) for s in pair)
    return (
        int(solve_memory.PAIR_BYTES_PER_ENTRY * entries)
        + outofcore.write_memory(variant, pair)
        + solve_memory.FIXED_TASK_BYTES
    )


def planned_memory(
    variant: Variant, pair: tuple[Slice, ...], memory: int | None, db: Path | None = None
) -> int:
    """The estimated peak memory of the pair's task under the cap ``memory``
    (:func:`task_mode`): in memory (:func:`pair_memory`); out of core with the largest bands
    that fit (:func:`tablebase.build.outofcore.choose_plan`), or, where none fit, the least
    the out-of-core task needs; or with its dependencies mapped (:func:`mapped_memory`)."""
    mode = task_mode(variant, pair, memory, db)
    if mode == IN_MEMORY:
        return pair_memory(variant, pair, db)
    if mode == MAPPED:
        return mapped_memory(variant, pair)
    assert memory is not None
    p = outofcore.choose_plan(variant, pair, memory)
    if p is None:
        return outofcore.least_memory(variant, pair)
    return outofcore.task_memory(variant, p)


def run_pair_task(
    variant_name: str,
    pair_names: tuple[str, ...],
    db: str,
    threads: int = 1,
    memory: int | None = None,
) -> PairReport:
    """Solve and write one slice pair (the scheduler-independent unit of work); out of core,
    by bands, where the pair does not fit the cap ``memory`` in memory
    (:func:`out_of_core`)."""
    variant = get_variant(variant_name)
    pair = tuple(parse_slice(n) for n in pair_names)
    dbp = Path(db)
    t0 = time.perf_counter()
    found = complete_report(variant, pair, dbp, t0)
    if found is not None:
        return found
    entries = sum(s.size(variant) for s in pair)
    if threads > 0:
        pass_threads(threads)
    mode = task_mode(variant, pair, memory, dbp)
    if mode == BY_BANDS:
        assert memory is not None
        return _run_out_of_core(variant, pair, dbp, threads, memory, t0)
    scratch = None
    if mode == MAPPED:
        scratch, solution = _solve_mapped(variant, pair, dbp, threads)
        t_read = 0.0
    else:
        tables = dependency_tables(dbp, variant, pair)
        t_read = time.perf_counter() - t0
        solution = solve_tables(variant, pair, tables, threads)
        del tables
    t_write = time.perf_counter()
    out = []
    for s in pair:
        values = solution.view(s)
        pass_threads(threads)
        stats, fen = slice_stats(variant, s, values)
        if PARENT_PID is not None and os.getppid() != PARENT_PID:
            os._exit(1)  # the build that asked for this table is gone: write nothing
        try:  # the file is written with plain I/O: a full disk is an OSError with its errno
            write_slice(dbp, variant, s, values, stats, fen, scratch=scratch)  # captures stored
        except OSError as e:
            raise SliceWriteError(s.name, str(slice_path(dbp, s)), describe(e)) from None
        out.append(stats)
    if scratch is not None:
        outofcore.remove_scratch(scratch)
    t_end = time.perf_counter()
    return PairReport(
        pair_names,
        tuple(out),
        entries,
        t_end - t0,
        False,
        solution.random_accesses,
        (t_read, solution.pass1_seconds, solution.level_seconds, t_end - t_write),
    )


def _solve_mapped(
    variant: Variant, pair: tuple[Slice, ...], db: Path, threads: int
) -> tuple[Path, PairSolution]:
    """Solve ``pair`` whole (:data:`MAPPED`) with its dependencies' values in the file
    ``deps.raw`` of its scratch folder (:func:`tablebase.build.outofcore.write_dependencies`,
    kept by a rerun), mapped read-only; where a value overflows the two-byte state words,
    again with four-byte ones from a file of two-byte dependency values. Returns the
    scratch folder (the slices' writer works in it) and the solution."""
    folder = outofcore.scratch_folder(db, pair)
    folder.mkdir(parents=True, exist_ok=True)
    numba.set_num_threads(min(max(1, threads), solve_men.pool_threads()))
    log.info("%s: solved whole, its dependencies mapped from disk", _label(pair))
    wide = dependency_value_bytes(db, pair) == 2
    for vb, two in ((8, wide), (16, True)):
        path = folder / ("deps16.raw" if two else "deps.raw")
        outofcore.write_dependencies(path, db, variant, pair, two)
        vals, offsets = outofcore.map_dependencies(path, variant, pair, two)
        try:
            solution = _solve(variant, pair, _Mapped(vals, offsets), threads, vb)
        except OverflowError as e:
            if vb == 16:
                raise
            log.info("%s: %s, solving again with four-byte state words", _label(pair), e)
            del vals
            continue
        return folder, solution
    raise AssertionError("unreachable")


@dataclass
class _Mapped:
    """Dependencies as :func:`_solve` reads them (``vals``, ``offsets``), mapped from a file."""

    vals: np.ndarray
    offsets: np.ndarray


def _label(pair: tuple[Slice, ...]) -> str:
    return "+".join(s.name for s in pair)


def complete_report(
    variant: Variant, pair: tuple[Slice, ...], db: Path, t0: float
) -> PairReport | None:
    """The report of a pair whose files exist and verify (:func:`pair_complete`): skipped,
    with its stored stats, ``t0`` the task's start (``time.perf_counter``); None if the
    pair is to be solved. The scratch folder of a complete pair solved out of core (left
    by a build killed after its files were written) is removed."""
    if not pair_complete(db, variant, pair):
        return None
    left = outofcore.scratch_folder(db, pair)
    if left.exists():
        outofcore.remove_scratch(left)
    stats = tuple(_stored_stats(db, s) for s in pair)
    entries = sum(s.size(variant) for s in pair)
    names = tuple(s.name for s in pair)
    return PairReport(names, stats, entries, time.perf_counter() - t0, True)


def entry_fen(variant: Variant, s: Slice, entry: int) -> str:
    """The FEN of entry ``entry`` of slice ``s`` (:func:`entry_position`)."""
    return entry_position(variant, s, entry).fen()


# Set in a scheduler's worker process (:func:`work_for`) to the pid of the build it works for.
PARENT_PID: int | None = None


def work_for(parent: int, share: c_int | None = None) -> None:
    """Make this process a worker of the build ``parent``: its tasks write no table once
    that process is gone (:data:`PARENT_PID`), and take the compiled threads of each pass
    from ``share`` where given (:data:`THREAD_SHARE`)."""
    global PARENT_PID, THREAD_SHARE
    PARENT_PID = parent
    THREAD_SHARE = share


def _parent_gone() -> bool:
    return PARENT_PID is not None and os.getppid() != PARENT_PID


def out_of_core_plan(variant: Variant, pair: tuple[Slice, ...], memory: int) -> Plan:
    """The bands ``pair`` is solved by under the cap ``memory``
    (:func:`tablebase.build.outofcore.choose_plan`), logged;
    :class:`~tablebase.build.faults.MemoryBudgetError` if even bands of one configuration do
    not fit."""
    p = outofcore.choose_plan(variant, pair, memory)
    names = "+".join(s.name for s in pair)
    if p is None:
        need = outofcore.least_memory(variant, pair) / (1 << 30)
        raise MemoryBudgetError(
            f"slice pair {names} needs at least {need:.1f} GiB even out of core, more "
            f"than the memory budget of {memory / (1 << 30):.1f} GiB (--memory)"
        )
    log.info(
        "%s: out of core, %d bands of up to %d men configurations (estimated %.1f GiB)",
        names, len(p.bands), p.band_configs, outofcore.task_memory(variant, p) / (1 << 30),
    )  # fmt: skip
    return p


def _run_out_of_core(
    variant: Variant, pair: tuple[Slice, ...], db: Path, threads: int, memory: int, t0: float
) -> PairReport:
    """:func:`run_pair_task` by bands under the cap ``memory``."""
    p = out_of_core_plan(variant, pair, memory)
    wide = dependency_value_bytes(db, pair) == 2
    t_solve = time.perf_counter()
    stats, reads, _, t_end = outofcore.solve_and_write(
        db, variant, pair, p, wide, lambda: pass_threads(threads), _parent_gone,
        partial(entry_fen, variant),
    )  # fmt: skip
    t_all = time.perf_counter() - t0
    return PairReport(
        tuple(s.name for s in pair),
        stats,
        sum(s.size(variant) for s in pair),
        t_all,
        False,
        reads,
        (t_solve - t0, 0.0, t_all - (t_solve - t0) - t_end, t_end),
    )


def _stored_stats(db: Path, s: Slice) -> SliceStats:
    a = read_attrs(slice_path(db, s))
    return SliceStats(
        a["positions"],
        a["wins"],
        a["draws"],
        a["losses"],
        a["longest_win"],
        a["longest_win_index"],
    )
