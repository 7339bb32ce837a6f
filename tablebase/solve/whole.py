"""Retrograde solver for one slice and its colour mirror (compiled passes).

This module holds the state words every part shares and the kernels of passes 1 and 3
over a whole pair; the level passes' kernels and their schedule are in
:mod:`tablebase.solve.levels`; :mod:`tablebase.solve.skeleton` runs them (its chunk
runners and level driver, the part's layout given as a mode). A pair with men and enough
king placements per men configuration is solved one configuration at a time instead
(:mod:`tablebase.solve.men`), with this module's pass 1 and the same rules for the levels;
slices with king runs have their own pass 1 and predecessors (:mod:`tablebase.solve.runs`).

**Values.** A stored value is one byte per position (two where a slice needs distances over
254 plies, see ``docs/FORMAT.md``): ``0`` draw, otherwise ``dtw + 1`` where ``dtw`` is the
distance-to-win in plies for the side to move. Wins have an odd ``dtw`` (even byte), losses an
even ``dtw`` (odd byte); ``1`` is "no legal move: lost". A successor's byte ``s > 0`` gives
the mover the candidate ``s + 1``.

**Working state.** While a pair is solved, each of its entries holds one state word of
``2 * vb`` bits, so the state of an entry is one memory access and the whole working set
is 2 bytes per entry (``uint16``, ``vb = 8``; ``vb = 16``, a ``uint32``, only where an
undecided word's half overflows, see :func:`tablebase.build.task.solve_tables`):

* decided: ``DEC | value`` (``DEC`` = top bit; the value takes every bit below it, so a
  two-byte state word (``vb = 8``) holds decided distances far beyond one byte,
  :func:`max_decided`).
  Invalid entries and drawn capture positions are decided draws, so nothing later
  revisits them;
* undecided: ``count << vb | exit`` — ``count`` is the number of the position's quiet moves
  inside the pair not yet known to lose (they lead to an opponent win), ``exit`` summarises
  its moves that leave the pair (promotions, into solved slices): ``0`` none, ``EXIT_DRAW``
  (all ones) a drawn exit (never a loss), else the best exit's candidate value (even: a win
  through the exit at that value; odd: only losing exits, so a loss no sooner than that).

The already-solved slices the pair depends on are one flat value array, ``offsets[material
code]`` giving where each starts (``-1`` if absent).

**Layout.** Both parts of a pair ``X, X'`` are indexed by the boards of ``X``: the first part
holds them with white to move (``X`` in its own index order), the second with black to move
(entry ``i``: board ``i`` of ``X``, black to move, which is the position of ``X'`` seen from
the other side). A quiet move of black leaves the board nearly as it was, so the
predecessors of a position lie at nearly the same index: a black king's un-move changes only
the black kings' part of the index, the last one, and positions expanded one after the other
in index order share their men and white kings. With ``X'`` in its own order instead, where
each predecessor is turned round and its colours swapped, the moved king lands in the
middle part of the index and every predecessor visit was a cache miss over the whole slice
(English 0304+0403 on one thread: 56 ns per predecessor visit, 35 ns now). Once
solved, the second part is put into ``X'``'s index order (:func:`to_file_order`). A slice
that is its own mirror (``X = X'``) is one part, in its own order, its predecessors found on
its flipped board (:data:`tablebase.solve.skeleton.OWN_MIRROR`).

**Passes** for a pair ``X, X'`` (``X'`` = the colour mirror of ``X``):

1. **Initialise** (parallel, each entry written once). No legal move: lost (value 1). A
   capture pending: every successor lies in a smaller, solved slice, so the value is final
   now (decided, even when drawn). Otherwise count the quiet moves inside the pair with
   bitboard steps and look up the moves that leave it (promotions) for ``exit``.
2. **Propagate by levels** ``L = 1, 2, ...`` (parallel): positions whose exit decides them at
   ``L + 1`` are set (a win through the exit; a loss when no inside move is left). Every
   position of value ``L`` visits its quiet predecessors (un-moves, in the other part): if
   ``L`` is a loss they are wins at ``L + 1``; if ``L`` is a win each undecided
   predecessor's ``count`` drops by one, and at 0 (with exits no later than ``L + 1``) it is a
   loss at ``L + 1``. Breadth-first order makes every distance exact. Threads change a state
   word only by compare-and-swap (:mod:`tablebase.solve.atomics`), from undecided to decided or
   to one count less, so no update is lost and a decided value never changes; a position
   set during level ``L`` has ``L + 1`` and is expanded only in the next level. The
   predecessor indices of several expanded positions
   (:data:`~tablebase.solve.levels.VISIT_BATCH`) are computed
   first and prefetched, so their cache misses overlap. A level reads only the blocks of
   :data:`~tablebase.solve.levels.WORK_BLOCK` entries that have work at
   it: a block's *due* level (the next value or exit level of its own words, found when it
   was last read) has come, or one of its positions was set during the level before
   (``touched``, one mark per block and parity of the level). Slices with long wins have
   150 levels and more, and reading every word at every level cost more than the work.
   The due blocks are found a stretch ahead and their state prefetched, and read before
   the positions they hold are expanded (:func:`level_stretch`).
3. **Draws.** What is still undecided when no level is left is a draw; the state array is
   then compacted in place into the value array (the low half of each word), and the
   second part put in its slice's order in the room left free.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tablebase.material.index import (
    cursor_at,
    cursor_boards,
    cursor_next,
    cursor_start,
    index_of_counted,
    lowest_square,
    popcount,
    position_index,
    reverse_board,
)
from tablebase.material.slices import UNCODED, material_code
from tablebase.rules import geometry
from tablebase.rules.captures import capture_successors
from tablebase.rules.geometry import ONE, ZERO, promotion_row
from tablebase.rules.kernel import kernel
from tablebase.rules.makemove import make_move
from tablebase.rules.movebuffer import MAX_MOVES, new_successor_buffer_nb, new_workspace_nb
from tablebase.rules.quiet import king_quiet_count
from tablebase.solve.atomics import prefetch

MISSING = -1  # lookup sentinel: a slice the solve was not given
NO_PIECES = -2  # place sentinel: the side to move has no piece left (lost, value 1)


def state_dtype(vb: int) -> type:
    """The state word of ``vb``-bit values: ``uint16`` for 8, ``uint32`` for 16."""
    return {8: np.uint16, 16: np.uint32}[vb]


def max_value(vb: int) -> int:
    """Largest exit value the undecided state word of ``vb``-bit values holds (the
    all-ones exit is :data:`EXIT_DRAW`)."""
    return (1 << vb) - 2


@njit(cache=True)
def max_decided(vb: int) -> int:
    """Largest value a decided state word of ``vb``-bit values holds: every bit below the
    decided bit, at most what a two-byte file holds (``uint16``, all ones reserved). So
    a pair whose distances pass one byte (English 1231+3112: losses in 254 plies) is
    solved with two-byte state words all the same; only its values are two bytes."""
    return min((1 << (2 * vb - 1)) - 2, (1 << 16) - 2)


@njit(cache=True, inline="always")
def place_after(offsets, nsq, width, binom, a, b, c, d):
    """Where the position ``(a, b)`` to move against ``(c, d)`` (black to move, as the move
    functions return it) lies in the flat tables once flipped to white to move; NO_PIECES
    if the side to move has no piece, MISSING if its slice is not in the tables."""
    if (a | b) == 0:
        return NO_PIECES
    wm = reverse_board(a, nsq)
    wk = reverse_board(b, nsq)
    bm = reverse_board(c, nsq)
    bk = reverse_board(d, nsq)
    code = material_code(wm, wk, bm, bk)
    if code == UNCODED or offsets[code] < 0:
        return MISSING
    return offsets[code] + position_index(nsq, width, wm, wk, bm, bk, binom)


@njit(cache=True)
def combine(best, s):
    """Fold successor value ``s`` into the running best value for the mover (-1 = none yet).

    Ranking: a win (even value) beats a draw beats a loss; among wins the smaller value,
    among losses the larger value.
    """
    if s == 0:
        cand = 0
    else:
        cand = s + 1
    if best < 0:
        return cand
    best_win = best > 0 and best % 2 == 0
    cand_win = cand > 0 and cand % 2 == 0
    if cand_win:
        if not best_win or cand < best:
            return cand
        return best
    if best_win:
        return best
    if cand == 0 or best == 0:
        return 0
    return max(best, cand)


@njit(cache=True, inline="always")
def flip_board(nsq, wm, wk, bm, bk):
    """The colour flip of a board: turned round (180 degrees) and its colours swapped, so
    that a position with black to move becomes its twin with white to move."""
    return (
        reverse_board(bm, nsq),
        reverse_board(bk, nsq),
        reverse_board(wm, nsq),
        reverse_board(wk, nsq),
    )


# --- pass 1 ------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def quiet_exits(offsets, rules, binom, board, where, m):
    """For a white-to-move position without a capture (``board``: white men, white kings,
    black men, black kings): the number of quiet moves staying in the pair (counted with
    bitboard steps), and the places in the flat tables of the positions its promotions
    lead to, appended to ``where`` from ``m`` on; returns ``(inside, new m)``."""
    nbr = rules.nbr
    wm, wk, bm, bk = board
    nsq = rules.nsq
    width = rules.width
    full = (ONE << np.uint64(nsq)) - ONE
    empty = full & ~(wm | wk | bm | bk)
    promo = promotion_row(rules, True)
    inside = 0
    for d in range(2):  # white men step towards row 0: directions 0 and 1
        t = geometry.step(wm, width, d) & empty
        inside += popcount(t & ~promo)
        ex = t & promo
        while ex:
            to = lowest_square(ex)
            ex &= ex - ONE
            frm = nbr[to, 3 - d]  # the square one step back
            a, b, c, e = make_move(
                rules, True, (wm, wk, bm, bk), np.uint64(frm), np.uint64(to), ZERO
            )
            q = place_after(offsets, nsq, width, binom, a, b, c, e)
            if q == MISSING:
                raise RuntimeError("a slice needed for a promotion is missing")
            where[m] = q
            m += 1
    return inside + king_quiet_count(rules, wk, empty), m


PENDING = 64  # positions whose table reads pass 1 resolves together (their misses overlap)
# The top value a pass-1 kernel returns when a value, an exit value or a quiet move count
# does not fit the state word (the body of a parallel loop cannot raise); the caller raises
# OverflowError.
OVERFLOW = 1 << 40
PENDING_PLACES = MAX_MOVES + 4 * PENDING


@kernel
def _resolve(words, vals, queue, npend, top):
    """Pass 1's pending positions (``queue``: ``where, starts, pend, inside`` of
    :func:`init_scratch`): position ``k`` is entry ``pend[k]``, its successors outside the
    pair lie at ``where[starts[k]:starts[k + 1]]`` (read now, their cache lines requested
    when they were found), and ``inside[k]`` is -1 for a capture position (every successor
    is outside) or its number of quiet moves inside the pair. Writes each state word into
    ``words`` (:class:`~tablebase.solve.records.Words`); returns the largest value or exit
    value seen, ``top`` the largest so far (:data:`OVERFLOW` if one does not fit the state
    word)."""
    where, starts, pend, inside = queue
    state, soff, vb = words.state, words.soff, words.vb
    dec = 1 << (2 * vb - 1)
    exit_draw = (1 << vb) - 1
    vmax = exit_draw - 1
    dmax = max_decided(vb)
    for k in range(npend):
        best = -1
        for i in range(starts[k], starts[k + 1]):
            q = where[i]
            best = combine(best, 1 if q == NO_PIECES else np.int64(vals[q]))
        idx = pend[k]
        if inside[k] < 0:
            if best > dmax:
                return OVERFLOW
            state[soff + idx] = dec | best
            top = max(top, best)
            continue
        if best > vmax:
            return OVERFLOW
        ex = 0
        if best == 0:
            ex = exit_draw
        elif best > 0:
            ex = best
            top = max(top, best)
        state[soff + idx] = (inside[k] << vb) | ex
    return top


@njit(cache=True)
def init_scratch():
    """Scratch space of one caller of :func:`init_range` (a kernel, which allocates
    nothing): the capture search's results and stack, the cursor, its boards and free
    squares, and the queue of pending positions."""
    return (
        new_successor_buffer_nb(),
        new_workspace_nb(),
        np.zeros((4, 8), dtype=np.int64),
        np.zeros(5, dtype=np.uint64),
        np.zeros(64, dtype=np.int64),
        np.zeros(64, dtype=np.int64),
        np.zeros(PENDING_PLACES, dtype=np.int64),
        np.zeros(PENDING + 1, dtype=np.int64),
        np.zeros(PENDING, dtype=np.int64),
        np.zeros(PENDING, dtype=np.int64),
    )


@kernel
def init_range(words, tables, rules, shape, entries, scratch):
    """Pass 1 over ``entries`` (a :class:`~tablebase.solve.records.Entries`:
    entries ``lo..hi`` of one part of the pair, boards of ``shape``; where ``flip``, each
    board with black to move, solved as its colour flip), reading the solved ``tables``
    (:class:`~tablebase.solve.records.Tables`) and writing ``words``
    (:class:`~tablebase.solve.records.Words`); returns (top value, :data:`OVERFLOW` if a
    value does not fit the state word, table reads). Sets bit ``idx - foff`` (``foff`` a
    multiple of 8) of ``flags`` for entries that are not positions or have a capture
    pending (the entries the compact WDL part need not store). ``scratch``:
    :func:`init_scratch`. The boards are decoded from the entries, or, where ``wks`` is not
    empty, are the men ``wm``, ``bm`` with the kings ``wks[idx - lo]``, ``bks[idx - lo]``
    (one men configuration, :mod:`tablebase.solve.men`, whose boards are all positions).

    A position that reads solved tables (a capture pending, or promotions) has the places of
    those reads computed and prefetched, then waits in a queue of :data:`PENDING` positions
    (:func:`_resolve`), so that its cache misses overlap with the work on the next ones."""
    nsq = rules.nsq
    width = rules.width
    state, soff, vb, flags, foff = words
    vals, offsets = tables
    counts, binom = shape
    lo, hi, flip, wks, bks, wm0, bm0 = entries
    dec = 1 << (2 * vb - 1)
    succ, ws, cur, boards, free1, free2, where, starts, pend, inside = scratch
    queue = (where, starts, pend, inside)
    npend = 0
    m = 0  # places queued
    given = wks.shape[0] > 0
    if given:  # the men, flipped once
        fwm, fbm = reverse_board(bm0, nsq), reverse_board(wm0, nsq)
    else:
        cursor_start(lo, nsq, width, counts, binom, cur)
        cursor_boards(nsq, width, counts, cur, 0, boards, free1, free2)
    top = 0
    reads = 0
    for idx in range(lo, hi):
        if given:
            j = idx - lo
            if flip:
                wm, bm = fwm, fbm
                wk, bk = reverse_board(bks[j], nsq), reverse_board(wks[j], nsq)
            else:
                wm, wk, bm, bk = wm0, wks[j], bm0, bks[j]
        else:
            if idx > lo:
                changed = cursor_next(nsq, width, counts, cur)
                cursor_boards(nsq, width, counts, cur, changed, boards, free1, free2)
            if boards[4] == 0:
                state[soff + idx] = dec  # not a position: a decided draw nobody reads
                flags[(idx - foff) >> 3] |= np.uint8(1 << (idx & 7))
                continue
            wm, wk, bm, bk = boards[0], boards[1], boards[2], boards[3]
            if flip:
                wm, wk, bm, bk = flip_board(nsq, wm, wk, bm, bk)
        if npend == PENDING or m > PENDING_PLACES - MAX_MOVES:
            starts[npend] = m
            top = _resolve(words, vals, queue, npend, top)
            if top == OVERFLOW:
                return top, reads
            npend = 0
            m = 0
        n = capture_successors(rules, True, wm, wk, bm, bk, succ, ws)
        if n:
            flags[(idx - foff) >> 3] |= np.uint8(1 << (idx & 7))
            starts[npend] = m
            for i in range(n):
                q = place_after(
                    offsets, nsq, width, binom, succ[i, 0], succ[i, 1], succ[i, 2],
                    succ[i, 3],
                )  # fmt: skip
                if q == MISSING:
                    raise RuntimeError("a slice needed for a capture is missing")
                where[m] = q
                if q >= 0:
                    prefetch(vals, q)
                m += 1
            reads += n
            pend[npend] = idx
            inside[npend] = -1
            npend += 1
            continue
        m0 = m
        count, m = quiet_exits(offsets, rules, binom, (wm, wk, bm, bk), where, m)
        if count >= (1 << (vb - 1)):
            return OVERFLOW, reads
        if m > m0:  # promotions: resolved with the queue
            for i in range(m0, m):
                prefetch(vals, where[i])
            reads += m - m0
            starts[npend] = m0
            pend[npend] = idx
            inside[npend] = count
            npend += 1
            continue
        if count == 0:
            state[soff + idx] = dec | 1  # no legal move: lost
            top = max(top, 1)
            continue
        state[soff + idx] = count << vb
    starts[npend] = m
    top = _resolve(words, vals, queue, npend, top)
    return top, reads


# --- pass 3 ------------------------------------------------------------------------------


@njit(cache=True)
def compact_values(state, vb, out):
    """Pass 3: the value of every entry (undecided = draw 0) into ``out``, which may be the
    low-half view of ``state`` or ``state`` itself (``out[i]`` is written after
    ``state[i]`` is read and never lies beyond it); ``out`` must hold the largest value
    (a ``vb``-bit type, or two bytes where decided values passed it)."""
    dec = 1 << (2 * vb - 1)
    for i in range(state.shape[0]):
        s = np.int64(state[i])
        out[i] = s ^ dec if s & dec else 0


@njit(cache=True, parallel=True)
def to_file_order(part, out, flags, geometry, shape, nchunks):
    """The colour mirror's part of a solved pair
    (:data:`tablebase.solve.skeleton.BLACK_TO_MOVE`: entry ``i`` is
    board ``i`` of the pair's first slice, black to move) into the mirror slice's own index
    order: ``out[j]`` is the value of entry ``j`` of the slice of ``shape`` (``geometry``:
    the board's squares and squares per row), and bit ``j`` of ``out_flags`` (zeroed)
    that of ``part_flags`` (``flags`` = ``(part_flags, out_flags)``); entries that are not
    positions get
    0 and their bit. Writes in order and reads ``part`` at random, the places of
    :data:`PENDING` entries found and prefetched before they are read, so that their
    cache misses overlap."""
    part_flags, out_flags = flags
    nsq, width = geometry
    counts, binom = shape
    size = out.shape[0]
    bcounts = np.array([counts[2], counts[3], counts[0], counts[1]], dtype=np.int64)
    step = (size + nchunks - 1) // nchunks
    step = (step + 7) // 8 * 8  # whole bytes of flags per chunk: no two threads share one
    for c in prange(nchunks):
        lo = c * step
        hi = min(size, lo + step)
        if lo >= hi:
            continue
        cur, boards, free1, free2 = cursor_at(lo, nsq, width, counts, binom)
        where = np.zeros(PENDING, dtype=np.int64)
        for j0 in range(lo, hi, PENDING):
            j1 = min(hi, j0 + PENDING)
            for j in range(j0, j1):
                if j > lo:
                    changed = cursor_next(nsq, width, counts, cur)
                    cursor_boards(nsq, width, counts, cur, changed, boards, free1, free2)
                if boards[4] == 0:
                    where[j - j0] = -1
                    continue
                wm, wk, bm, bk = flip_board(nsq, boards[0], boards[1], boards[2], boards[3])
                i = index_of_counted(nsq, width, (wm, wk, bm, bk), bcounts, binom)
                where[j - j0] = i
                prefetch(part, i)
                prefetch(part_flags, i >> 3)
            for j in range(j0, j1):
                i = where[j - j0]
                bit = np.uint8(1 << (j & 7))
                if i < 0:
                    out[j] = 0
                    out_flags[j >> 3] |= bit
                    continue
                out[j] = part[i]
                if (part_flags[i >> 3] >> (i & 7)) & 1:
                    out_flags[j >> 3] |= bit
