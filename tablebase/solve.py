"""Retrograde solver for one slice and its colour mirror (compiled passes).

Values are one byte per position: ``0`` draw (or not yet decided while solving), otherwise
``dtw + 1`` where ``dtw`` is the distance-to-win in plies for the side to move. Wins have an
odd ``dtw`` (even byte), losses an even ``dtw`` (odd byte); ``1`` is "no legal move: lost".
A successor's byte ``s > 0`` gives the mover the candidate ``s + 1``.

All slices of a solve live in one flat byte array; ``offsets[code]`` is where the slice with
material code ``code`` starts (``-1`` if absent). The pair being solved is placed first, the
already-solved slices it depends on after it.

The passes, for a pair ``X, X'`` (``X'`` = the colour mirror of ``X``):

1. **Initialise.** For every position: no legal move → lost in 0. A capture is pending →
   every successor lies in a smaller, solved slice, so the value is final now. Otherwise
   mark it final in ``aux`` (a drawn capture position must not be revisited). Otherwise
   summarise the moves that leave the pair (promotions) in ``aux``: a win through an exit
   (``aux > 0``: its byte), a drawn exit (``aux = -1``: never a loss), or only exits the
   opponent wins (``aux = -(byte the position would have as a loss)``).
2. **Propagate by levels.** For byte ``L = 1, 2, ...``: positions whose exit gives a win at
   ``L + 1`` are set; loss candidates whose exits cap out at ``L + 1`` are checked forward.
   Then for every position with byte ``L`` its quiet predecessors (unmoves, in the mirror
   slice) are visited: if ``L`` is a loss they are wins at ``L + 1``; if ``L`` is a win each
   undecided predecessor's counter of moves not yet known to lose is decremented, and at 0
   (and exits no later than ``L + 1``) it is a loss at ``L + 1``. Breadth-first order makes
   every distance exact.
3. **Draws.** What is still undecided when no level is left is a draw (byte 0).

Pass 1 runs in parallel threads (each position is written once); pass 2 is sequential
because of the shared counters. Independent pairs run in parallel processes.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tablebase.index import (
    _unrank_colex,
    cursor_boards,
    cursor_next,
    cursor_start,
    popcount,
    position_from_index,
    position_index,
    reverse_board,
)
from tablebase.rules import movegen as mg

AUX_INVALID = np.int16(-32768)  # index entry that is not a position
AUX_FINAL = np.int16(-32767)  # decided by pass 1 (a capture position), even if drawn
MISSING = 255  # lookup sentinel: a slice the solve was not given

# Working memory of a pair task (used by the scheduler's memory budget): bytes per entry of
# the pair being solved, and per entry of each dependency read in.
PAIR_BYTES_PER_ENTRY = 4
DEPENDENCY_BYTES_PER_ENTRY = 1


def task_memory_bytes(pair_entries: int, dependency_entries: int) -> int:
    """Estimated peak memory of solving a pair of ``pair_entries`` index entries whose
    dependencies hold ``dependency_entries`` entries (working state, tables, fixed cost)."""
    fixed = 256 << 20  # interpreter, numba and its compiled code
    return (
        PAIR_BYTES_PER_ENTRY * pair_entries
        + DEPENDENCY_BYTES_PER_ENTRY * dependency_entries
        + fixed
    )


@njit(cache=True, inline="always")
def material_code(wm, wk, bm, bk):
    return ((popcount(wm) * 8 + popcount(wk)) * 8 + popcount(bm)) * 8 + popcount(bk)


@njit(cache=True)
def lookup(vals, offsets, nsq, width, binom, wm, wk, bm, bk):
    """Byte of a white-to-move position; 1 when white has no pieces; MISSING if unknown."""
    if (wm | wk) == 0:
        return 1
    off = offsets[material_code(wm, wk, bm, bk)]
    if off < 0:
        return MISSING
    return np.int64(vals[off + position_index(nsq, width, wm, wk, bm, bk, binom)])


@njit(cache=True)
def successor_byte(vals, offsets, nbr, rules, binom, rev16, wm, wk, bm, bk, moves, i):
    """Byte of the position after move ``i`` of ``moves`` (white to move in wm..bk)."""
    nsq = rules[0]
    width = rules[5]
    a, b, c, d = mg.make_move(
        rules, True, wm, wk, bm, bk, moves[i, mg.F_FROM], moves[i, mg.F_TO], moves[i, mg.F_CAP]
    )
    # (a, b) are black's, (c, d) white's; flip so that black becomes white to move
    return lookup(
        vals,
        offsets,
        nsq,
        width,
        binom,
        reverse_board(a, nsq, rev16),
        reverse_board(b, nsq, rev16),
        reverse_board(c, nsq, rev16),
        reverse_board(d, nsq, rev16),
    )


@njit(cache=True)
def combine(best, s):
    """Fold successor byte ``s`` into the running best byte for the mover (-1 = none yet).

    Ranking: a win (even byte) beats a draw beats a loss; among wins the smaller byte, among
    losses the larger byte.
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


@njit(cache=True)
def _is_exit(rules, wm, moves, i):
    """A quiet move leaving the pair: a white man reaching row 0 (crowned)."""
    frm = moves[i, mg.F_FROM]
    to = moves[i, mg.F_TO]
    return (wm >> frm) & mg.ONE and (mg.promotion_row(rules, True) >> to) & mg.ONE


@njit(cache=True)
def _init_range(vals, aux, cnt, offsets, nbr, rules, binom, rev16, off, lo, hi, counts):
    nsq = rules[0]
    width = rules[5]
    moves = mg.new_move_buffer_nb()
    ws = mg.new_workspace_nb()
    cur = np.zeros((4, 8), dtype=np.int64)
    boards = np.zeros(5, dtype=np.uint64)
    free1 = np.zeros(64, dtype=np.int64)
    free2 = np.zeros(64, dtype=np.int64)
    cursor_start(lo, nsq, width, counts, binom, cur)
    cursor_boards(nsq, width, counts, cur, 0, boards, free1, free2)
    for idx in range(lo, hi):
        if idx > lo:
            cursor_boards(
                nsq,
                width,
                counts,
                cur,
                cursor_next(nsq, width, counts, cur),
                boards,
                free1,
                free2,
            )
        if boards[4] == 0:
            aux[off + idx] = AUX_INVALID
            continue
        wm, wk, bm, bk = boards[0], boards[1], boards[2], boards[3]
        n = mg.generate_moves(nbr, rules, True, wm, wk, bm, bk, moves, ws)
        if n == 0:
            vals[off + idx] = 1
            continue
        if moves[0, mg.F_NCAP] > 0:
            best = -1
            for i in range(n):
                s = successor_byte(
                    vals, offsets, nbr, rules, binom, rev16, wm, wk, bm, bk, moves, i
                )
                if s == MISSING:
                    raise RuntimeError("a slice needed for a capture is missing")
                best = combine(best, s)
            if best > 254:
                raise RuntimeError("distance-to-win overflows one byte")
            vals[off + idx] = best
            aux[off + idx] = AUX_FINAL
            continue
        best = -1
        inside = 0
        for i in range(n):
            if not _is_exit(rules, wm, moves, i):
                inside += 1
            else:
                s = successor_byte(
                    vals, offsets, nbr, rules, binom, rev16, wm, wk, bm, bk, moves, i
                )
                if s == MISSING:
                    raise RuntimeError("a slice needed for a promotion is missing")
                best = combine(best, s)
        cnt[off + idx] = inside
        if best < 0:
            continue
        if best == 0:
            aux[off + idx] = -1
        elif best % 2 == 0:
            aux[off + idx] = best
        else:
            aux[off + idx] = -best


@njit(cache=True, parallel=True)
def init_slice(vals, aux, cnt, offsets, nbr, rules, binom, rev16, off, size, counts, nchunks):
    """Pass 1 over one slice of the pair (see module docstring)."""
    step = (size + nchunks - 1) // nchunks
    for c in prange(nchunks):
        lo = c * step
        hi = min(size, lo + step)
        if lo < hi:
            _init_range(vals, aux, cnt, offsets, nbr, rules, binom, rev16, off, lo, hi, counts)


@njit(cache=True)
def level_slice(vals, aux, cnt, offsets, nbr, rules, binom, rev16, off, size, counts, level):
    """Pass 2, one level, over one slice of the pair; returns how many positions were set.

    ``cnt`` holds, per undecided quiet position, how many of its moves inside the pair do
    not yet lead to an opponent win; it reaches 0 exactly when the last one does.
    """
    nsq = rules[0]
    width = rules[5]
    preds = np.zeros((4096, 7), dtype=np.uint64)
    new = np.uint8(level + 1)
    nset = 0
    for idx in range(size):
        v = vals[off + idx]
        if v == 0:
            a = aux[off + idx]
            # exits that decide this position at the next level
            if a == level + 1 or (a == -(level + 1) and cnt[off + idx] == 0):
                vals[off + idx] = new
                nset += 1
            continue
        if v != level:
            continue
        wm, wk, bm, bk, ok = position_from_index(
            idx, nsq, width, counts[0], counts[1], counts[2], counts[3], binom
        )
        k = mg.quiet_unmoves(nbr, rules, True, wm, wk, bm, bk, preds, False)
        for j in range(k):
            if preds[j, 6]:
                continue  # un-promotion: the predecessor has more men, another slice
            # predecessor: black to move -> flip to white to move
            pwm = reverse_board(preds[j, 0], nsq, rev16)
            pwk = reverse_board(preds[j, 1], nsq, rev16)
            pbm = reverse_board(preds[j, 2], nsq, rev16)
            pbk = reverse_board(preds[j, 3], nsq, rev16)
            poff = offsets[material_code(pwm, pwk, pbm, pbk)]
            pidx = poff + position_index(nsq, width, pwm, pwk, pbm, pbk, binom)
            if vals[pidx] != 0:
                continue
            pa = aux[pidx]
            if pa == AUX_FINAL:
                continue
            if level % 2 == 1:
                vals[pidx] = new  # a predecessor of a loss is a win
                nset += 1
            else:
                cnt[pidx] -= 1
                if cnt[pidx] == 0 and (pa == 0 or (pa < -1 and -pa <= level + 1)):
                    vals[pidx] = new  # every move now leads to an opponent win
                    nset += 1
    return nset


@njit(cache=True)
def max_byte(vals, lo, hi):
    m = 0
    for i in range(lo, hi):
        if vals[i] > m:
            m = vals[i]
    return m


@njit(cache=True)
def max_aux(aux, lo, hi):
    m = 0
    for i in range(lo, hi):
        a = aux[i]
        if a != AUX_INVALID and a != AUX_FINAL:
            if a > m:
                m = a
            elif -a > m and a < -1:
                m = -a
    return m


@njit(cache=True, parallel=True)
def verify_range(vals, offsets, nbr, rules, binom, rev16, off, counts, indices, nchunks):
    """Local consistency: each listed position's byte re-derived from its successors.

    Returns a boolean array, True where the stored byte is wrong.
    """
    nsq = rules[0]
    width = rules[5]
    bad = np.zeros(indices.shape[0], dtype=np.bool_)
    m = indices.shape[0]
    step = (m + nchunks - 1) // nchunks
    for c in prange(nchunks):
        moves = mg.new_move_buffer_nb()
        ws = mg.new_workspace_nb()
        for t in range(c * step, min(m, (c + 1) * step)):
            idx = indices[t]
            wm, wk, bm, bk, ok = position_from_index(
                idx, nsq, width, counts[0], counts[1], counts[2], counts[3], binom
            )
            stored = np.int64(vals[off + idx])
            if not ok:
                bad[t] = stored != 0
                continue
            n = mg.generate_moves(nbr, rules, True, wm, wk, bm, bk, moves, ws)
            if n == 0:
                bad[t] = stored != 1
                continue
            best = -1
            for i in range(n):
                s = successor_byte(
                    vals, offsets, nbr, rules, binom, rev16, wm, wk, bm, bk, moves, i
                )
                if s == MISSING:
                    best = -2  # cannot be re-derived: reported as inconsistent
                    break
                best = combine(best, s)
            bad[t] = best != stored
    return bad


@njit(cache=True)
def valid_mask(size, nsq, width, counts, binom):
    """Which index entries are real positions (False where two men share a square)."""
    out = np.ones(size, dtype=np.bool_)
    if counts[0] == 0 or counts[2] == 0:
        return out
    a = nsq - width
    n_bm = binom[a, counts[2]]
    block = size // (binom[a, counts[0]] * n_bm)  # king placements per men placement
    for r_wm in range(binom[a, counts[0]]):
        wm = _unrank_colex(r_wm, counts[0], a, binom) << np.uint64(width)
        for r_bm in range(n_bm):
            if wm & _unrank_colex(r_bm, counts[2], a, binom):
                start = (r_wm * n_bm + r_bm) * block
                out[start : start + block] = False
    return out
