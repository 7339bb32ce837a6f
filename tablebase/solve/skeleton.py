"""The solver's skeleton: one chunk runner per pass and one level driver for every pair.

A pair is solved in parts, each a run of the pair's state words (:mod:`tablebase.solve.whole`
describes the words, the passes and the layout). What differs between the parts is data,
the part's mode, which picks the small kernels the one skeleton calls:

* :data:`WHITE_TO_MOVE`: the pair's first slice in its own index order; its predecessors
  are black's un-moves (:func:`tablebase.solve.levels.predecessor_indices`);
* :data:`BLACK_TO_MOVE`: the colour mirror, held as the first slice's boards with black to
  move; its predecessors are white's un-moves, and it is put into its own index order once
  solved (:func:`tablebase.solve.whole.to_file_order`);
* :data:`OWN_MIRROR`: a slice that is its own mirror, one part in its own order, its
  predecessors white's un-moves on its flipped board;
* :data:`KING_RUNS`: a slice whose entries are its boards times the run states of both sides
  (Frisian), in its own order; pass 1 works per board (:func:`tablebase.solve.runs.init_range`)
  and its predecessors follow the runs (:func:`tablebase.solve.runs.predecessor_indices`);
* men configurations (:mod:`tablebase.solve.men`): a pair of two slices with men, solved one
  men configuration at a time, groups of configurations of equal advancement in turn, each
  configuration's pass 1 and levels by one thread.

The chunk runners (:func:`init_slice`, :func:`level_slice`, :func:`verify_range`) split a
part into chunks of whole bytes of flag bits and whole blocks of the level schedule, which
the threads take as they free up; :func:`solve_pair_state` is the driver: pass 1 over each
part, then the levels ``1, 2, ...`` over every part until a level sets nothing new, then
the values compacted and the mirror's part put in its own order.

Numba compiles a function that takes another compiled function as an argument, or closes
over one, once per process (the cache keys hold the callee's identity), which would cost
every pair task its compilation; so the kernels are chosen by ``mode`` inside one compiled
function instead, a branch on a value fixed for the whole call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from tablebase.material.index import (
    BINOM,
    black_kings_at,
    board_prefix,
    index_parts,
    position_from_index,
    run_of_code,
    run_states,
)
from tablebase.material.slices import Slice
from tablebase.rules.geometry import ONE, ZERO
from tablebase.rules.kernel import kernel
from tablebase.rules.makemove import play_row
from tablebase.rules.movebuffer import (
    MAX_MOVES,
    move_captured,
    move_from,
    move_to,
    new_move_buffer_nb,
    new_workspace_nb,
)
from tablebase.rules.movegen import generate_moves
from tablebase.rules.variants import Variant
from tablebase.solve import levels, men, runs, whole
from tablebase.solve.levels import (
    DUE_AHEAD,
    UNMOVE_ROWS,
    level_scratch,
    level_stretch,
    update_if_full,
    update_predecessors,
    work_blocks,
)
from tablebase.solve.records import Entries, Part, Shape, Tables, Updates, Words
from tablebase.solve.whole import MISSING, NO_PIECES, OVERFLOW, combine, flip_board
from tablebase.storage.values import value_dtype

# The modes of a part (see the module docstring).
WHITE_TO_MOVE = 0
BLACK_TO_MOVE = 1
OWN_MIRROR = 2
KING_RUNS = 3

PASS1_SEGMENTS = 8  # pass 1 of a part in this many parallel calls, to follow the threads


@njit(cache=True, inline="always")
def chunk(c, lo, hi, nchunks, align):
    """Bounds of chunk ``c`` of ``nchunks`` over ``lo..hi``, its length a multiple of
    ``align`` (so that no two threads share a byte of flag bits); empty past the end."""
    step = (hi - lo + nchunks - 1) // nchunks
    step = (step + align - 1) // align * align
    a = lo + c * step
    return a, min(hi, a + step)


# --- pass 1 ------------------------------------------------------------------------------


@njit(cache=True, parallel=True)
def init_slice(words, tables, rules, shape, lo, hi, nchunks, mode):
    """Pass 1 over units ``lo..hi`` of the part ``words`` writes
    (:class:`~tablebase.solve.records.Words`, ``foff`` 0: boards of ``shape`` laid out as
    ``mode`` says; a unit is an entry, or a board with its run states for
    :data:`KING_RUNS`; ``lo`` a multiple of 8, so that a call writes whole bytes of flag
    bits), reading the solved ``tables``; returns ``(largest value or exit value seen,
    tables read)``, the largest :data:`tablebase.solve.whole.OVERFLOW` if a value does not
    fit the state word. The flag bits (one per entry of the part, zeroed) get the entries
    without a stored WDL code: not positions, or a capture pending (in slices with king
    runs only the former)."""
    out = np.zeros((nchunks, 2), dtype=np.int64)
    counts = shape.counts
    for c in prange(nchunks):
        a, b = chunk(c, lo, hi, nchunks, 8)
        if a < b:
            if mode == KING_RUNS:
                cb = run_states(rules.king_limit, counts[2], counts[3])
                t, r = runs.init_range(words, tables, rules, shape, a, b, runs.init_scratch(cb))
            else:
                none = np.empty(0, dtype=np.uint64)
                t, r = whole.init_range(
                    words, tables, rules, shape,
                    Entries(a, b, mode == BLACK_TO_MOVE, none, none, ZERO, ZERO),
                    whole.init_scratch(),
                )  # fmt: skip
            out[c, 0] = t
            out[c, 1] = r
    return out[:, 0].max(), out[:, 1].sum()


# --- pass 2 ------------------------------------------------------------------------------


@kernel
def _level_range(part, upd, rules, shape, blo, bhi, level, scratch):
    """Level ``level`` over blocks ``blo..bhi`` of ``part`` (a
    :class:`~tablebase.solve.records.Part`: boards of ``shape``, laid out as its mode says)
    whose quiet predecessors all lie in the part ``upd`` updates
    (:class:`~tablebase.solve.records.Updates`; the same part for :data:`OWN_MIRROR`);
    returns (set, visits). Only the blocks due at this
    level are read, :data:`tablebase.solve.levels.DUE_AHEAD` at a time
    (:func:`tablebase.solve.levels.level_stretch`); then the entries of value ``level``
    among them are expanded, their predecessors updated
    :data:`tablebase.solve.levels.VISIT_BATCH` at a time, so that more of their cache misses
    overlap (the updates of a level commute: any order gives the same result).
    ``scratch``: :func:`tablebase.solve.levels.level_scratch` of :func:`unmove_rows`."""
    nsq = rules.nsq
    width = rules.width
    counts, binom = shape
    mode, vb, moff = part.mode, upd.vb, upd.moff
    where, _, _, expand = scratch
    nwm, nwk, nbm, nbk = counts[0], counts[1], counts[2], counts[3]
    # entries in index order are mostly decoded in part: the run of entries that differ in
    # their black kings only shares the men and white kings (without runs); the run states
    # of one board share the board (with runs)
    nfree = nsq - nwm - nbm - nwk  # squares left to black kings
    d_wk = binom[nsq - nwm - nbm, nwk]
    d_bk = binom[nfree, nbk]
    limit = rules.king_limit
    cb = run_states(limit, nbm, nbk)
    per = run_states(limit, nwm, nwk) * cb
    base = -d_bk  # the first entry of the run of entries that differ in black kings only
    last = -1  # the board decoded last (runs)
    wm = wk = bm = bk = np.uint64(0)
    head = r_wk = 0
    nset = 0
    visits = 0
    m = 0  # predecessors queued in where
    for c0 in range(blo, bhi, DUE_AHEAD):
        c1 = min(bhi, c0 + DUE_AHEAD)
        n, ne = level_stretch(part, c0, c1, level, vb, scratch)
        nset += n
        for j in range(ne):
            idx = expand[j]
            if mode == KING_RUNS:
                bi = idx // per
                code = idx - bi * per
                if bi != last:
                    wm, wk, bm, bk, _ = position_from_index(
                        bi, nsq, width, nwm, nwk, nbm, nbk, binom
                    )
                    last = bi
                k = runs.predecessor_indices(
                    rules, shape, (wm, wk, bm, bk), (code // cb, code % cb), moff,
                    where[m:],
                )  # fmt: skip
            else:
                if idx < base or idx - base >= d_bk:
                    q = idx // d_bk
                    wm, wk, bm = board_prefix(q, nsq, width, nwm, nwk, nbm, binom)
                    base = q * d_bk
                    r_wk = q % d_wk
                    head = q - r_wk
                r_bk = idx - base
                bk = black_kings_at(r_bk, nbk, nfree, binom, wm | wk | bm)
                a, b, c, d = wm, wk, bm, bk  # wm, wk, bm serve the next entries too
                h, rw, rb = head, r_wk, r_bk
                if mode == OWN_MIRROR:  # black's un-moves, seen on the flipped board
                    a, b, c, d = flip_board(nsq, wm, wk, bm, bk)
                    h, rw, rb = index_parts(nsq, width, (a, b, c, d), counts, binom)
                k = levels.predecessor_indices(
                    rules, shape, (a, b, c, d), (h, rw, rb), (mode != WHITE_TO_MOVE, True),
                    moff, where[m:],
                )  # fmt: skip
            visits += k
            m, n = update_if_full(upd, where, m + k, level)
            nset += n
    nset += update_predecessors(upd, where, m, level)
    return nset, visits


@njit(cache=True)
def unmove_rows(mode):
    """Room for the predecessors of one position: a king's un-move with runs comes from
    several run states."""
    return UNMOVE_ROWS * 4 if mode == KING_RUNS else UNMOVE_ROWS


@njit(cache=True, parallel=True)
def level_slice(part, upd, rules, shape, level, nchunks):
    """Pass 2, one level, over one part of the pair (:class:`~tablebase.solve.records.Part`:
    boards of ``shape``, laid out as its mode says); returns (positions set, predecessor
    visits). The part's blocks in ``due`` have the level each has work at next
    (:func:`tablebase.solve.levels.block_due`), in ``touched`` a mark where a position was
    set in the level before (by parity of the level); ``upd`` updates the part holding its
    predecessors. Each chunk of threads owns whole blocks."""
    out = np.zeros((nchunks, 2), dtype=np.int64)
    for c in prange(nchunks):
        blo, bhi = chunk(c, 0, work_blocks(part.size), nchunks, 1)
        if blo < bhi:
            a, b = _level_range(
                part, upd, rules, shape, blo, bhi, level,
                level_scratch(unmove_rows(part.mode)),
            )  # fmt: skip
            out[c, 0] = a
            out[c, 1] = b
    return out[:, 0].sum(), out[:, 1].sum()


# --- checking ----------------------------------------------------------------------------


NOT_A_POSITION = -1  # successor_places: the entry is no position
QUIET, CAPTURING = 0, 1  # successor_kinds: the position's side to move can capture or not


@njit(cache=True)
def successor_places(offsets, rules, shape, idx, buffers, out):
    """The places in the flat tables (``offsets``) of the successors of entry ``idx`` of the
    slice of ``shape`` (``buffers``: a move buffer and a capture workspace), generated by
    the move generator (every legal move; with king runs, the barred king's quiet moves
    taken out and the runs worked out forward), into ``out``: how many, or
    :data:`NOT_A_POSITION`. A place is :data:`MISSING` where the tables lack the
    successor's slice (the rest of the moves then not generated), :data:`NO_PIECES` where
    the side to move is left without pieces. ``out[-1]`` is set to :data:`CAPTURING` if a
    move captures, else :data:`QUIET`."""
    nsq = rules.nsq
    width = rules.width
    counts, binom = shape
    moves, ws = buffers
    limit = rules.king_limit
    cb = run_states(limit, counts[2], counts[3])
    per = run_states(limit, counts[0], counts[1]) * cb
    bi = idx // per
    code = idx - bi * per
    wm, wk, bm, bk, ok = position_from_index(
        bi, nsq, width, counts[0], counts[1], counts[2], counts[3], binom
    )
    if not ok:
        return NOT_A_POSITION
    wsq, wn = run_of_code(limit, wk, code // cb)
    bsq, bn = run_of_code(limit, bk, code % cb)
    n = generate_moves(rules, True, wm, wk, bm, bk, moves, ws)
    out[-1] = QUIET
    k = 0
    for i in range(n):
        frm = np.int64(move_from(moves, i))
        to = np.int64(move_to(moves, i))
        capture = move_captured(moves, i) != 0
        if capture:
            out[-1] = CAPTURING
        king = (wk >> np.uint64(frm)) & ONE
        if not capture and king and wn == limit and frm == wsq:
            continue  # the barred king
        a, b, cc, d = play_row(wm, wk, bm, bk, moves, i)
        ksq, kn = runs.kept_run(bsq, bn, a, b)
        msq, mn = -1, 0
        if not capture and king:
            msq = to
            mn = wn + 1 if (wn > 0 and frm == wsq) else 1
        q = runs.place_runs(offsets, rules, binom, (a, b, cc, d), (ksq, kn), (msq, mn))
        out[k] = q
        k += 1
        if q == MISSING:
            break
    return k


@njit(cache=True, inline="always")
def rederived(places, n, got):
    """The value an entry's successors give (``got[i]``: the value at ``places[i]``, read
    where the place is a table's), or -2 if a successor's slice is missing."""
    best = -1
    for i in range(n):
        q = places[i]
        if q == MISSING:
            return -2
        best = combine(best, 1 if q == NO_PIECES else np.int64(got[i]))
    return 1 if best == -1 else best  # no legal move: lost


@njit(cache=True, parallel=True)
def verify_range(tables, rules, shape, off, indices, nchunks):
    """Local consistency of the slice of ``shape`` at ``off`` in the flat ``tables``
    (:class:`~tablebase.solve.records.Tables`): each
    listed entry's value re-derived from its successors (:func:`successor_places`); a
    successor missing from the tables makes the entry inconsistent. Returns a boolean
    array, True where the stored value is wrong."""
    vals = tables.vals
    m = indices.shape[0]
    bad = np.zeros(m, dtype=np.bool_)
    for c in prange(nchunks):
        lo, hi = chunk(c, 0, m, nchunks, 1)
        moves = new_move_buffer_nb()
        ws = new_workspace_nb()
        places = np.empty(MAX_MOVES + 1, dtype=np.int64)
        got = np.zeros(MAX_MOVES, dtype=np.int64)
        for t in range(lo, hi):
            idx = indices[t]
            stored = np.int64(vals[off + idx])
            n = successor_places(tables.offsets, rules, shape, idx, (moves, ws), places)
            if n == NOT_A_POSITION:
                bad[t] = stored != 0
                continue
            for i in range(n):
                q = places[i]
                got[i] = vals[q] if q >= 0 else 0
            bad[t] = rederived(places, n, got) != stored
    return bad


@njit(cache=True, parallel=True)
def sample_successors(offsets, rules, shape, indices, nchunks):
    """:func:`successor_places` of each listed entry, end to end: ``(starts, places,
    kinds)``, entry ``t``'s places ``places[starts[t]:starts[t + 1]]``, its kind
    :data:`QUIET`, :data:`CAPTURING` or :data:`NOT_A_POSITION` (no places). For a check
    that reads the successors' values where they lie instead of holding the tables."""
    m = indices.shape[0]
    kinds = np.empty(m, dtype=np.int8)
    sizes = np.zeros(m + 1, dtype=np.int64)
    for c in prange(nchunks):  # counted, then written: the sample, not the slice, is held
        lo, hi = chunk(c, 0, m, nchunks, 1)
        moves = new_move_buffer_nb()
        ws = new_workspace_nb()
        places = np.empty(MAX_MOVES + 1, dtype=np.int64)
        for t in range(lo, hi):
            n = successor_places(offsets, rules, shape, indices[t], (moves, ws), places)
            kinds[t] = NOT_A_POSITION if n == NOT_A_POSITION else places[-1]
            sizes[t + 1] = max(n, 0)
    starts = np.cumsum(sizes)
    out = np.empty(starts[-1], dtype=np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(c, 0, m, nchunks, 1)
        moves = new_move_buffer_nb()
        ws = new_workspace_nb()
        places = np.empty(MAX_MOVES + 1, dtype=np.int64)
        for t in range(lo, hi):
            if kinds[t] == NOT_A_POSITION:
                continue
            n = successor_places(offsets, rules, shape, indices[t], (moves, ws), places)
            out[starts[t] : starts[t] + n] = places[:n]
    return starts, out, kinds


@njit(cache=True, parallel=True)
def sample_disagreements(starts, places, got, stored, kinds, nchunks):
    """Per entry of a :func:`sample_successors` sample, True where its stored value
    (``stored``) is not the one its successors' values (``got``, beside ``places``) give
    (an entry that is no position must store 0)."""
    m = stored.shape[0]
    bad = np.zeros(m, dtype=np.bool_)
    for c in prange(nchunks):
        lo, hi = chunk(c, 0, m, nchunks, 1)
        for t in range(lo, hi):
            if kinds[t] == NOT_A_POSITION:
                bad[t] = stored[t] != 0
                continue
            a = starts[t]
            b = starts[t + 1]
            bad[t] = rederived(places[a:b], b - a, got[a:b]) != stored[t]
    return bad


# --- the driver --------------------------------------------------------------------------


@dataclass
class SolvedState:
    """What :func:`solve_pair_state` returns: the pair's values end to end (each part in its
    slice's own index order), where each slice lies in them, per slice the bits of the
    entries without a stored WDL code, the levels run, the random table accesses made, and
    the seconds of pass 1 and of the levels with the compaction."""

    values: np.ndarray
    where: dict[Slice, tuple[int, int]]
    flags: dict[Slice, np.ndarray]
    levels: int
    random_accesses: int
    pass1_seconds: float
    level_seconds: float


def _counts(s: Slice) -> np.ndarray:
    return np.array(tuple(s), dtype=np.int64)


def part_modes(variant: Variant, pair: tuple[Slice, ...]) -> dict[Slice, int]:
    """The mode of each part of ``pair`` (without king runs, both parts indexed by the first
    slice's boards, so that every position's predecessors lie on nearly the same board,
    close together in the state)."""
    if variant.king_move_limit > 0:
        return {s: KING_RUNS for s in pair}
    if len(pair) == 1:
        return {pair[0]: OWN_MIRROR}
    return {pair[0]: WHITE_TO_MOVE, pair[1]: BLACK_TO_MOVE}


class _PairState:
    """The working state of a pair being solved: its parts end to end, each part's blocks
    in the level schedule, its flag bits, its mode and the boards it is laid out by."""

    def __init__(self, variant: Variant, pair: tuple[Slice, ...], vb: int) -> None:
        self.variant, self.pair, self.vb = variant, pair, vb
        self.where: dict[Slice, tuple[int, int]] = {}
        self.blocks: dict[Slice, int] = {}
        total = nblocks = 0
        for s in pair:
            self.where[s], self.blocks[s] = (total, s.size(variant)), nblocks
            total += s.size(variant)
            nblocks += work_blocks(s.size(variant))
        self.total = total
        self.state: np.ndarray = np.empty(total, dtype=whole.state_dtype(vb))
        # the level passes' schedule, per block of entries: the level it has work at next
        # (0: every block is read at level 1), and the blocks of positions set during the
        # level before, by its parity
        self.due = np.zeros(nblocks, dtype=np.uint16)
        self.touched = np.zeros((2, nblocks), dtype=np.uint8)
        self.flags = {s: np.zeros((n + 7) // 8, dtype=np.uint8) for s, (_, n) in self.where.items()}
        self.mode = part_modes(variant, pair)
        # the boards each part is laid out by: its own, or the first slice's
        self.board = {s: _counts(s if self.mode[s] == KING_RUNS else pair[0]) for s in pair}


def solve_pair_state(
    variant: Variant,
    pair: tuple[Slice, ...],
    vals: np.ndarray,
    offsets: np.ndarray,
    vb: int,
    threads: Callable[[], int],
    nchunks: int,
) -> SolvedState:
    """Solve ``pair`` from its dependencies (the flat tables ``vals``, ``offsets``) with
    ``2 * vb``-bit state words: pass 1 over each part (or, for a pair solved by men
    configurations, :mod:`tablebase.solve.men` group by group), the levels over every part
    until none sets a position, the values compacted in place, the mirror's part put in its
    own order. ``threads()`` sets and returns the compiled threads of the next parallel
    call; ``nchunks`` chunks per call. Raises OverflowError where a value, an exit value or
    a move count does not fit the state word."""
    p = _PairState(variant, pair, vb)
    by_men = men.solves(variant, pair)
    old_chunk = numba.set_parallel_chunksize(1)  # chunks are handed out as threads free up
    try:
        t0 = time.perf_counter()
        level = 1
        if by_men:  # pass 1 and the levels together, one men configuration at a time
            top, reads = men.solve_pair(
                p.state, p.where[pair[0]][0], p.where[pair[1]][0], vals, offsets, variant, pair,
                vb, p.flags[pair[0]], p.flags[pair[1]], threads,
            )  # fmt: skip
            level = top + 1  # no level pass over the whole pair is left
        else:
            top, reads = _pass1(p, vals, offsets, threads, nchunks)
        t1 = time.perf_counter()
        level, top, visits = _levels(p, level, top, threads, nchunks)
    finally:
        numba.set_parallel_chunksize(old_chunk)
    values, flags = _values(p, top, by_men, threads, nchunks)
    t2 = time.perf_counter()
    return SolvedState(values, p.where, flags, level - 1, reads + visits, t1 - t0, t2 - t1)


def _pass1(
    p: _PairState, vals: np.ndarray, offsets: np.ndarray, threads: Callable[[], int], nchunks: int
) -> tuple[int, int]:
    """Pass 1 over every part of ``p``, in segments (the thread count may change between
    them); returns (largest value or exit value, tables read)."""
    v = p.variant
    top = reads = 0
    for s in p.pair:
        off, size = p.where[s]
        units = s.boards(v) if p.mode[s] == KING_RUNS else size
        step = -(-units // (8 * PASS1_SEGMENTS)) * 8
        for lo in range(0, units, step):
            threads()
            t, r = init_slice(
                Words(p.state, off, p.vb, p.flags[s], 0), Tables(vals, offsets), v.rules,
                Shape(p.board[s], BINOM), lo, min(units, lo + step), nchunks, p.mode[s],
            )  # fmt: skip
            top, reads = max(top, int(t)), reads + int(r)
        if top >= OVERFLOW:
            raise OverflowError(
                f"a value, an exit value or a move count does not fit the {2 * p.vb}-bit "
                f"state word in {s.name}"
            )
    return top, reads


def _levels(
    p: _PairState, level: int, top: int, threads: Callable[[], int], nchunks: int
) -> tuple[int, int, int]:
    """The level driver: levels ``level, level + 1, ...`` over every part of ``p`` while a
    value up to ``top`` may still be expanded (a level that sets a position raises
    ``top``); returns (the level after the last, the largest value, predecessor visits)."""
    v = p.variant
    vmax = whole.max_decided(p.vb)
    visits = 0
    while level <= top:
        if level + 1 > vmax:
            raise OverflowError(f"distance-to-win beyond {vmax - 1} plies in {p.pair[0].name}")
        nset = 0
        for s in p.pair:
            off, size = p.where[s]
            m = s.mirror
            atomic = threads() > 1  # one thread stores counters without atomics
            part = Part(p.state, p.due, p.touched, off, p.blocks[s], size, p.mode[s])
            upd = Updates(p.state, p.touched, p.where[m][0], p.blocks[m], p.vb, atomic)
            n, k = level_slice(part, upd, v.rules, Shape(p.board[s], BINOM), level, nchunks)
            nset, visits = nset + int(n), visits + int(k)
        if nset:
            top = max(top, level + 1)
        level += 1
    return level, top, visits


def _values(
    p: _PairState, top: int, by_men: bool, threads: Callable[[], int], nchunks: int
) -> tuple[np.ndarray, dict[Slice, np.ndarray]]:
    """Pass 3: the values of ``p`` (largest ``top``) in the low half of each state word,
    which leaves room for the mirror's part in file order; or, where decided values passed
    one byte, two bytes each in place. Returns them with the flag bits of each slice."""
    v, pair = p.variant, p.pair
    wide = p.vb == 8 and value_dtype(top - 1) != np.uint8
    words = p.state if wide else p.state.view(np.uint8 if p.vb == 8 else np.uint16)
    values = words[: p.total]
    whole.compact_values(p.state, p.vb, values)
    flags = dict(p.flags)
    s = pair[-1]
    if p.mode[s] != BLACK_TO_MOVE:
        return values, flags
    off, size = p.where[s]
    # the room compact_values left free, or a new array
    in_order = np.empty(size, words.dtype) if wide else words[p.total : p.total + size]
    s_flags = np.zeros_like(flags[s])
    threads()
    order = men.to_file_order if by_men else whole.to_file_order  # men: config by config
    counts = p.board[pair[0]] if by_men else _counts(s)
    order(
        values[off : off + size], in_order, (flags[s], s_flags), (v.squares, v.per_row),
        Shape(counts, BINOM), nchunks,
    )  # fmt: skip
    values[off : off + size] = in_order
    flags[s] = s_flags
    return values, flags
