"""The solver's passes for slices with king runs (Frisian's three-move king limit).

Where a variant bars a player who still has men from more than ``limit`` quiet moves in a
row with the same king, the run of each side is part of the position, and a slice's entries
are its boards times the run states of both sides (:func:`tablebase.material.index.entry_index`).
The passes, the working state and the values are those of :mod:`tablebase.solve.whole`; only the
moves differ:

* a quiet move of a man (a promotion too) ends the mover's run; a quiet move of a king
  continues the run when that king made it (``n + 1``) and starts one otherwise (``n = 1``);
  the king whose run has reached ``limit`` makes no quiet move (captures are always
  allowed, and end the run);
* the side that did not move keeps its run, unless a capture took the king it belongs to or
  its last man (then it has no run states at all);
* so the predecessors of a position, whose black side has just moved, are: with black's run
  ``0``, black's man un-moves, from any black run state; with a run ``n`` of king ``K``,
  only ``K``'s un-moves, from the run ``n - 1`` of ``K`` (``n >= 2``) or, for ``n = 1``, from
  no run or a run of any other black king. White's run is the same in both.

Pass 1 runs per board: the captures and the promotions depend only on the run of the side
not moving, the quiet moves inside the pair only on the mover's, so each is worked out once
per board and combined over the run states. These kernels are run by
:mod:`tablebase.solve.skeleton` (mode ``KING_RUNS``), with the level schedule of
:mod:`tablebase.solve.whole`. A variant without king runs never comes here: its slices have
one run state (the position checks of :func:`tablebase.solve.skeleton.verify_range` read
:func:`place_runs` and :func:`kept_run` with the limit 0, which then change nothing).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.material.index import (
    cursor_boards,
    cursor_next,
    cursor_start,
    entry_index,
    index_of_counted,
    index_with_men,
    lowest_square,
    men_rank,
    mirror_run_code,
    popcount,
    reverse_board,
    run_of_code,
    run_states,
)
from tablebase.material.slices import UNCODED, material_code
from tablebase.rules.captures import has_capture
from tablebase.rules.geometry import ONE, ZERO, promotion_row, step
from tablebase.rules.kernel import kernel
from tablebase.rules.makemove import make_move, play_row
from tablebase.rules.movebuffer import new_move_buffer_nb, new_workspace_nb
from tablebase.rules.movegen import generate_moves
from tablebase.rules.quiet import king_quiet_count
from tablebase.solve.whole import MISSING, NO_PIECES, OVERFLOW, combine, max_decided


@njit(cache=True, inline="always")
def place_runs(offsets, rules, binom, board, mover, other):
    """Where the position ``board`` = ``(a, b, c, d)``, ``(a, b)`` to move against ``(c,
    d)`` (black to move, as the move functions return it), with the runs ``mover`` =
    ``(asq, an)`` of the side to move and ``other`` = ``(csq, cn)`` of the other (0-based
    squares before the flip; ``n`` 0: no run), lies in the flat tables once flipped to
    white to move; NO_PIECES or MISSING as :func:`tablebase.solve.whole.place_after`."""
    a, b, c, d = board
    asq, an = mover
    csq, cn = other
    nsq = rules.nsq
    width = rules.width
    limit = rules.king_limit
    if (a | b) == 0:
        return NO_PIECES
    wm = reverse_board(a, nsq)
    wk = reverse_board(b, nsq)
    bm = reverse_board(c, nsq)
    bk = reverse_board(d, nsq)
    code = material_code(wm, wk, bm, bk)
    if code == UNCODED or offsets[code] < 0:
        return MISSING
    runs = (nsq - 1 - asq, an, nsq - 1 - csq, cn)
    return offsets[code] + entry_index(nsq, width, limit, (wm, wk, bm, bk), runs, binom)


@njit(cache=True, inline="always")
def kept_run(sq, n, men, kings):
    """The run ``(sq, n)`` of the side that did not move, after the move left it ``men``
    and ``kings``: kept while the king is still there and the side has men."""
    if n > 0 and men != 0 and (kings >> np.uint64(sq)) & ONE:
        return sq, n
    return -1, 0


@njit(cache=True, inline="always")
def king_quiet_moves(nbr, flying, sq, empty):
    """Number of quiet moves of the king on ``sq`` (diagonal, as far as empty if flying)."""
    n = 0
    for d in range(4):
        f = nbr[sq, d]
        while f >= 0 and (empty >> np.uint64(f)) & ONE:
            n += 1
            if not flying:
                break
            f = nbr[f, d]
    return n


@kernel
def quiet_inside(rules, wm, wk, bm, bk):
    """Number of white's quiet moves that stay in the pair: men's steps off the promotion
    row and every king move (bitboard steps)."""
    nsq = rules.nsq
    width = rules.width
    full = (ONE << np.uint64(nsq)) - ONE
    empty = full & ~(wm | wk | bm | bk)
    promo = promotion_row(rules, True)
    inside = 0
    for d in range(2):
        inside += popcount(step(wm, width, d) & empty & ~promo)
    return inside + king_quiet_count(rules, wk, empty)


@kernel
def _promotions(tables, rules, binom, board, black_run):
    """Best candidate value among white's promotions (-1 if none) on ``board`` (white men,
    white kings, black men, black kings) when black's run is ``black_run`` = ``(bsq,
    bn)``, and how many tables were read."""
    nbr = rules.nbr
    vals, offsets = tables
    wm, wk, bm, bk = board
    nsq = rules.nsq
    width = rules.width
    full = (ONE << np.uint64(nsq)) - ONE
    empty = full & ~(wm | wk | bm | bk)
    promo = promotion_row(rules, True)
    best = -1
    reads = 0
    for d in range(2):
        ex = step(wm, width, d) & empty & promo
        while ex:
            to = lowest_square(ex)
            ex &= ex - ONE
            frm = nbr[to, 3 - d]
            a, b, c, e = make_move(
                rules, True, (wm, wk, bm, bk), np.uint64(frm), np.uint64(to), ZERO
            )
            q = place_runs(offsets, rules, binom, (a, b, c, e), black_run, (-1, 0))
            reads += 1
            if q == MISSING:
                raise RuntimeError("a slice needed for a promotion is missing")
            best = combine(best, 1 if q == NO_PIECES else np.int64(vals[q]))
    return best, reads


@njit(cache=True)
def init_scratch(cb):
    """Scratch space of one caller of :func:`init_range` (a kernel, which allocates
    nothing) for slices whose black side has ``cb`` run states: a move buffer, the capture
    search's stack, the cursor, its boards and free squares, and one value per black run."""
    return (
        new_move_buffer_nb(),
        new_workspace_nb(),
        np.zeros((4, 8), dtype=np.int64),
        np.zeros(5, dtype=np.uint64),
        np.zeros(64, dtype=np.int64),
        np.zeros(64, dtype=np.int64),
        np.zeros(cb, dtype=np.int64),
    )


@kernel
def init_range(words, tables, rules, shape, lo, hi, scratch):
    """Pass 1 over the boards ``lo..hi`` of one slice with run states (boards of ``shape``),
    reading the solved ``tables`` (:class:`~tablebase.solve.records.Tables`) and writing
    ``words`` (:class:`~tablebase.solve.records.Words`, ``foff`` 0); returns (top value,
    :data:`tablebase.solve.whole.OVERFLOW` if a value does not fit the state word, table reads).
    Flags only the entries that are not positions: capture positions keep
    their own WDL code (their value depends on the other side's run), so a reader may take
    it as stored. ``scratch``: :func:`init_scratch`."""
    nbr = rules.nbr
    nsq = rules.nsq
    width = rules.width
    flying = rules.flying
    limit = rules.king_limit
    state, soff, vb, flags, _ = words
    vals, offsets = tables
    counts, binom = shape
    dec = 1 << (2 * vb - 1)
    exit_draw = (1 << vb) - 1
    vmax = exit_draw - 1
    cw = run_states(limit, counts[0], counts[1])
    cb = run_states(limit, counts[2], counts[3])
    per = cw * cb
    moves, ws, cur, boards, free1, free2, by_black = scratch
    full = (ONE << np.uint64(nsq)) - ONE
    cursor_start(lo, nsq, width, counts, binom, cur)
    cursor_boards(nsq, width, counts, cur, 0, boards, free1, free2)
    top = 0
    reads = 0
    for bi in range(lo, hi):
        if bi > lo:
            changed = cursor_next(nsq, width, counts, cur)
            cursor_boards(nsq, width, counts, cur, changed, boards, free1, free2)
        base = bi * per
        if boards[4] == 0:
            for c in range(per):
                state[soff + base + c] = dec
                flags[(base + c) >> 3] |= np.uint8(1 << ((base + c) & 7))
            continue
        wm, wk, bm, bk = boards[0], boards[1], boards[2], boards[3]
        if has_capture(rules, True, wm, wk, bm, bk):
            n = generate_moves(rules, True, wm, wk, bm, bk, moves, ws)
            for r in range(cb):
                bsq, bn = run_of_code(limit, bk, r)
                best = -1
                for i in range(n):
                    a, b, c, d = play_row(wm, wk, bm, bk, moves, i)
                    ksq, kn = kept_run(bsq, bn, a, b)
                    q = place_runs(offsets, rules, binom, (a, b, c, d), (ksq, kn), (-1, 0))
                    if q == MISSING:
                        raise RuntimeError("a slice needed for a capture is missing")
                    best = combine(best, 1 if q == NO_PIECES else np.int64(vals[q]))
                reads += n
                if best > max_decided(vb):
                    return OVERFLOW, reads
                by_black[r] = best
                top = max(top, best)
            for c in range(per):
                state[soff + base + c] = dec | by_black[c % cb]
            continue
        inside = quiet_inside(rules, wm, wk, bm, bk)
        if inside >= (1 << (vb - 1)):
            return OVERFLOW, reads
        for r in range(cb):
            bsq, bn = run_of_code(limit, bk, r)
            best, got = _promotions(tables, rules, binom, (wm, wk, bm, bk), (bsq, bn))
            reads += got
            if best > vmax:
                return OVERFLOW, reads
            by_black[r] = best
        empty = full & ~(wm | wk | bm | bk)
        for w in range(cw):
            wsq, wn = run_of_code(limit, wk, w)
            mine = inside
            if wn == limit:  # this king may not move quietly again
                mine -= king_quiet_moves(nbr, flying, wsq, empty)
            for r in range(cb):
                best = by_black[r]
                e = soff + base + w * cb + r
                if mine == 0 and best < 0:
                    state[e] = dec | 1  # no legal move: lost
                    top = max(top, 1)
                    continue
                ex = 0
                if best == 0:
                    ex = exit_draw
                elif best > 0:
                    ex = best
                    top = max(top, best)
                state[e] = (mine << vb) | ex
    return top, reads


@njit(cache=True, inline="always")
def predecessor_indices(rules, shape, board, codes, moff, out):
    """Indices (``moff`` + entry in the mirror slice) of every position from which black's
    quiet move leads to this white-to-move position ``board`` (white men, white kings,
    black men, black kings; of the slice of ``shape``) with the run codes ``codes`` =
    ``(wcode, bcode)``, without leaving the pair (see the module docstring); returns how
    many were written."""
    nbr = rules.nbr
    wm, wk, bm, bk = board
    wcode, bcode = codes
    counts, binom = shape
    nsq = rules.nsq
    width = rules.width
    flying = rules.flying
    limit = rules.king_limit
    wm, wk, bm, bk = np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk)
    full = (ONE << np.uint64(nsq)) - ONE
    empty = full & ~(wm | wk | bm | bk)
    pbm = reverse_board(wm, nsq)
    pbk = reverse_board(wk, nsq)
    rbm = reverse_board(bm, nsq)
    rbk = reverse_board(bk, nsq)
    nwm, nwk, nbm, nbk = counts[2], counts[3], counts[0], counts[1]  # the mirror slice's
    mcounts = (nwm, nwk, nbm, nbk)
    cwm = run_states(limit, nwm, nwk)  # black's run states, white in the mirror
    cbm = run_states(limit, nbm, nbk)
    per = cwm * cbm
    other = mirror_run_code(limit, counts[1], wcode)  # white's run, unchanged
    m = 0
    if cwm == 1 or bcode > 0:
        # a black king's un-move: any king when black has no run states, else the run's
        ksq, kn = run_of_code(limit, bk, bcode)
        kings = bk
        r_men = men_rank(nsq, width, rbm, pbm, nbm, binom)  # the men stay where they are
        men = rbm | pbm
        while kings:
            to = lowest_square(kings)
            kings &= kings - ONE
            if cwm > 1 and to != ksq:
                continue
            base = rbk ^ (ONE << np.uint64(nsq - 1 - to))
            for d in range(4):
                f = nbr[to, d]
                while f >= 0 and (empty >> np.uint64(f)) & ONE:
                    pwk = base | (ONE << np.uint64(nsq - 1 - f))
                    b = index_with_men(nsq, width, r_men, men, (pwk, pbk), mcounts, binom)
                    if cwm == 1:
                        out[m] = moff + b * per + other
                        m += 1
                    else:
                        # the king came from f: in the mirror it stands on nsq-1-f
                        rank = popcount(pwk & ((ONE << np.uint64(nsq - 1 - f)) - ONE))
                        if kn >= 2:
                            out[m] = moff + (b * cwm + 1 + limit * rank + kn - 2) * cbm + other
                            m += 1
                        else:
                            out[m] = moff + (b * cwm) * cbm + other
                            m += 1
                            for j in range(nwk):
                                if j == rank:
                                    continue
                                for k in range(limit):
                                    out[m] = moff + (b * cwm + 1 + limit * j + k) * cbm + other
                                    m += 1
                    if not flying:
                        break
                    f = nbr[f, d]
    if cwm == 1 or bcode == 0:
        # a black man's un-move (one step back, from the row above), from any black run
        men = bm
        while men:
            to = lowest_square(men)
            men &= men - ONE
            base = rbm ^ (ONE << np.uint64(nsq - 1 - to))
            for d in range(2):
                f = nbr[to, d]
                if f >= 0 and (empty >> np.uint64(f)) & ONE:
                    pwm = base | (ONE << np.uint64(nsq - 1 - f))
                    b = index_of_counted(nsq, width, (pwm, rbk, pbm, pbk), mcounts, binom)
                    for c in range(cwm):
                        out[m] = moff + (b * cwm + c) * cbm + other
                        m += 1
    return m
