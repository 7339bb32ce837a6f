"""Dense combinatorial index of a slice: position ↔ integer, both directions compiled.

Scheme (version :data:`INDEX_SCHEME`), for a slice ``(wm, wk, bm, bk)`` with white to move,
``n`` squares and ``w`` squares per row (``A = n - w`` squares a man may stand on)::

    index = ((r_wm * C(A, bm) + r_bm) * C(F, wk) + r_wk) * C(F - wk, bk) + r_bk

where ``F = n - wm - bm``. ``r_x`` is the colex rank ``sum C(x_i, i + 1)`` of the sorted
0-based coordinates ``x_i`` of that piece group: white men use ``square - w`` (they never
stand on row 0), black men ``square`` (never on the last row), white kings their rank among
squares without men, black kings their rank among squares without men or white kings.
Kings are ranked gaplessly; the two men groups are ranked independently, so entries where a
white and a black man share a square are unused ("gaps", a few percent for few men).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.rules.bits import deposit, lowest_square, popcount, reversed_bits
from tablebase.rules.kernel import kernel

INDEX_SCHEME = 1
MAX_N = 64
MAX_K = 16


def _binomials() -> np.ndarray:
    t = np.zeros((MAX_N + 1, MAX_K + 1), dtype=np.int64)
    for n in range(MAX_N + 1):
        t[n, 0] = 1
        for k in range(1, min(n, MAX_K) + 1):
            t[n, k] = t[n - 1, k - 1] + (t[n - 1, k] if k <= n - 1 else 0)
    return t


BINOM = _binomials()

ONE = np.uint64(1)


@njit(cache=True, inline="always")
def _rank_men(bb, offset, binom):
    r = np.int64(0)
    i = 1
    while bb:
        sq = lowest_square(bb)
        bb &= bb - ONE
        r += binom[sq - offset, i]
        i += 1
    return r


@njit(cache=True, inline="always")
def rank_among_free(bb, occupied, binom):
    """Colex rank of the squares of ``bb`` counted among the squares not in ``occupied``
    (how kings are ranked, :func:`index_with_men`)."""
    r = np.int64(0)
    i = 1
    while bb:
        sq = lowest_square(bb)
        low = (ONE << np.uint64(sq)) - ONE
        bb &= bb - ONE
        r += binom[sq - popcount(occupied & low), i]
        i += 1
    return r


@kernel
def position_index(nsq, width, wm, wk, bm, bk, binom):
    """Index of a white-to-move position in its slice (counts taken from the bitboards)."""
    counts = (popcount(wm), popcount(wk), popcount(bm), popcount(bk))
    return index_of_counted(nsq, width, (wm, wk, bm, bk), counts, binom)


@njit(cache=True, inline="always")
def index_of_counted(nsq, width, board, counts, binom):
    """:func:`position_index` of ``board`` (white men, white kings, black men, black kings)
    when the slice's piece counts ``counts`` (in the same order) are already known."""
    wm, wk, bm, bk = board
    r_men = men_rank(nsq, width, wm, bm, counts[2], binom)
    return index_with_men(nsq, width, r_men, wm | bm, (wk, bk), counts, binom)


@njit(cache=True, inline="always")
def men_rank(nsq, width, wm, bm, nbm, binom):
    """The men's part of the index (white men, then black men): what positions that differ
    only in their kings share, so that :func:`index_with_men` need not rank the men again."""
    return _rank_men(wm, width, binom) * binom[nsq - width, nbm] + _rank_men(bm, 0, binom)


@njit(cache=True, inline="always")
def index_parts(nsq, width, board, counts, binom):
    """The index :func:`index_of_counted` of ``board`` (white men, white kings, black men,
    black kings; ``counts`` its pieces in that order) in its parts ``(head, r_wk, r_bk)``: the
    men's part times the white kings' placements, the white kings' rank among the squares
    free of men, the black kings' among those free of men and white kings; the index is
    ``(head + r_wk) * binom[nsq - nwm - nbm - nwk, nbk] + r_bk``."""
    wm, wk, bm, bk = board
    nwm, nwk, nbm = counts[0], counts[1], counts[2]
    men = wm | bm
    head = men_rank(nsq, width, wm, bm, nbm, binom) * binom[nsq - nwm - nbm, nwk]
    return head, rank_among_free(wk, men, binom), rank_among_free(bk, men | wk, binom)


@njit(cache=True, inline="always")
def index_with_men(nsq, width, r_men, men, kings, counts, binom):
    """:func:`index_of_counted` from the men's rank :func:`men_rank`, the men's squares and
    the kings ``(white kings, black kings)``."""
    wk, bk = kings
    nwm, nwk, nbm, nbk = counts[0], counts[1], counts[2], counts[3]
    free = nsq - nwm - nbm
    r_wk = rank_among_free(wk, men, binom)
    r_bk = rank_among_free(bk, men | wk, binom)
    return (r_men * binom[free, nwk] + r_wk) * binom[free - nwk, nbk] + r_bk


@njit(cache=True, inline="always")
def unrank_colex(r, k, n, binom):
    """Sorted coordinates (as a bitboard over 0..n-1) of the colex rank ``r`` of k-subsets."""
    out = np.uint64(0)
    hi = n - 1
    for i in range(k, 0, -1):
        # largest x in [i-1, hi] with C(x, i) <= r
        if i == 1:
            lo = r  # C(x, 1) = x
        elif i == 2:
            # C(x, 2) = x(x-1)/2 <= r: x = floor((1 + sqrt(1 + 8r)) / 2); r < C(64, 2), so
            # rounding can move the estimate by one at most, which the loops correct
            lo = np.int64((1.0 + np.sqrt(1.0 + 8.0 * r)) * 0.5)
            while binom[lo, 2] > r:
                lo -= 1
            while lo < hi and binom[lo + 1, 2] <= r:
                lo += 1
        else:  # by bisection
            lo = i - 1
            while lo < hi:
                mid = (lo + hi + 1) >> 1
                if binom[mid, i] <= r:
                    lo = mid
                else:
                    hi = mid - 1
        r -= binom[lo, i]
        out |= ONE << np.uint64(lo)
        hi = lo - 1
    return out


@njit(cache=True)
def colex_boards(k, n, binom):
    """The ``C(n, k)`` sets of ``k`` squares among ``0..n-1`` as bitboards, in colex rank
    order: for callers that test every placement of one group of men against each of
    another's, so that the inner loop unranks nothing."""
    out = np.empty(binom[n, k], dtype=np.uint64)
    for r in range(out.shape[0]):
        out[r] = unrank_colex(r, k, n, binom)
    return out


@njit(cache=True, inline="always")
def _spread(coords, occupied):
    """Map coordinates among the squares not in ``occupied`` back to squares: the x-th
    free square (:func:`tablebase.rules.bits.deposit`)."""
    return deposit(coords, ~np.uint64(occupied))


@kernel
def position_from_index(idx, nsq, width, nwm, nwk, nbm, nbk, binom):
    """Inverse of :func:`position_index`: ``(wm, wk, bm, bk, valid)``.

    ``valid`` is False for the unused entries where a white and a black man coincide, and
    for indices past the slice's end.
    """
    a = nsq - width
    free = nsq - nwm - nbm
    d_bk = binom[free - nwk, nbk]
    d_wk = binom[free, nwk]
    d_bm = binom[a, nbm]
    r_bk = idx % d_bk
    idx //= d_bk
    r_wk = idx % d_wk
    idx //= d_wk
    r_bm = idx % d_bm
    r_wm = idx // d_bm
    if r_wm >= binom[a, nwm]:  # past the slice's last entry: no position
        return np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0), False
    wm = unrank_colex(r_wm, nwm, a, binom) << np.uint64(width)
    bm = unrank_colex(r_bm, nbm, a, binom)
    if wm & bm:
        return wm, np.uint64(0), bm, np.uint64(0), False
    men = wm | bm
    wk = _spread(unrank_colex(r_wk, nwk, free, binom), men)
    bk = _spread(unrank_colex(r_bk, nbk, free - nwk, binom), men | wk)
    return wm, wk, bm, bk, True


@njit(cache=True, inline="always")
def board_prefix(q, nsq, width, nwm, nwk, nbm, binom):
    """The men and white kings shared by the entries whose index divided by the number of
    black kings' placements is ``q`` (entries differing only in their black kings):
    ``(wm, wk, bm)``. For callers that decode many entries in index order
    (:func:`black_kings_at`)."""
    a = nsq - width
    free = nsq - nwm - nbm
    d_wk = binom[free, nwk]
    d_bm = binom[a, nbm]
    r_wk = q % d_wk
    q //= d_wk
    wm = unrank_colex(q // d_bm, nwm, a, binom) << np.uint64(width)
    bm = unrank_colex(q % d_bm, nbm, a, binom)
    wk = _spread(unrank_colex(r_wk, nwk, free, binom), wm | bm)
    return wm, wk, bm


@njit(cache=True, inline="always")
def black_kings_at(r_bk, nbk, n, binom, taken):
    """The black kings of rank ``r_bk`` among the ``n`` squares not in ``taken`` (the men
    and white kings of :func:`board_prefix`)."""
    return _spread(unrank_colex(r_bk, nbk, n, binom), taken)


@njit(cache=True, inline="always")
def reverse_board(x, nsq):
    """Square s ↔ square nsq-1-s (0-based): the 180 degree rotation.

    The 64 bits are reversed by the CPU (:func:`tablebase.rules.bits.reversed_bits`:
    registers only; the solver does this four times per capture successor and per
    predecessor of a slice that is its own mirror, and a table in memory would cost cache
    misses).
    """
    x = reversed_bits(x)
    return x >> np.uint64(64 - nsq)


# --- sequential enumeration ------------------------------------------------------------
# A cursor walks a slice's entries in index order without unranking each one: the black
# kings' combination advances fastest (its colex successor), then the white kings', black
# men's and white men's, and only the bitboards of the groups that changed are rebuilt.
# ``cur`` is an int64[4, 8] array of coordinates, rows: white men, black men, white kings,
# black kings (the order of significance in the index is wm, bm, wk, bk).


@njit(cache=True, inline="always")
def _colex_next(cur, g, k, n):
    """Advance the sorted coordinates ``cur[g, :k]`` (values < n) to the colex successor;
    False (and reset to 0..k-1) when it was the last combination. (The row is indexed in
    place: a row view would cost an atomic reference count per call.)"""
    for i in range(k):
        limit = cur[g, i + 1] if i + 1 < k else n
        if cur[g, i] + 1 < limit:
            cur[g, i] += 1
            for j in range(i):
                cur[g, j] = j
            return True
    for j in range(k):
        cur[g, j] = j
    return False


@njit(cache=True)
def cursor_start(idx, nsq, width, counts, binom, cur):
    """Set ``cur`` to the coordinates of entry ``idx``."""
    a = nsq - width
    free = nsq - counts[0] - counts[2]
    d_bk = binom[free - counts[1], counts[3]]
    d_wk = binom[free, counts[1]]
    d_bm = binom[a, counts[2]]
    r_bk = idx % d_bk
    idx //= d_bk
    r_wk = idx % d_wk
    idx //= d_wk
    _unrank_into(cur, 0, idx // d_bm, counts[0], a, binom)
    _unrank_into(cur, 1, idx % d_bm, counts[2], a, binom)
    _unrank_into(cur, 2, r_wk, counts[1], free, binom)
    _unrank_into(cur, 3, r_bk, counts[3], free - counts[1], binom)


@njit(cache=True)
def cursor_at(idx, nsq, width, counts, binom):
    """A cursor at entry ``idx`` with its boards built: ``(cur, boards, free1, free2)`` for
    :func:`cursor_next` and :func:`cursor_boards`."""
    cur = np.zeros((4, 8), dtype=np.int64)
    boards = np.zeros(5, dtype=np.uint64)
    free1 = np.zeros(64, dtype=np.int64)
    free2 = np.zeros(64, dtype=np.int64)
    cursor_start(idx, nsq, width, counts, binom, cur)
    cursor_boards(nsq, width, counts, cur, 0, boards, free1, free2)
    return cur, boards, free1, free2


@njit(cache=True, inline="always")
def _unrank_into(cur, g, r, k, n, binom):
    """Row ``g`` of a cursor: the sorted coordinates of the colex rank ``r`` of k-subsets
    of 0..n-1."""
    bits = unrank_colex(r, k, n, binom)
    j = 0
    while bits:
        cur[g, j] = lowest_square(bits)
        bits &= bits - ONE
        j += 1


@njit(cache=True, inline="always")
def cursor_next(nsq, width, counts, cur):
    """Advance ``cur`` one entry; returns the most significant group that changed
    (0 white men, 1 black men, 2 white kings, 3 black kings), -1 past the end."""
    a = nsq - width
    free = nsq - counts[0] - counts[2]
    ks = (counts[0], counts[2], counts[1], counts[3])
    sizes = (a, a, free, free - counts[1])
    for g in range(3, -1, -1):
        if ks[g] == 0:
            continue
        if _colex_next(cur, g, ks[g], sizes[g]):
            return g
    return -1


@njit(cache=True, inline="always")
def cursor_boards(nsq, width, counts, cur, changed, boards, free1, free2):
    """Rebuild ``boards`` (wm, wk, bm, bk, valid) for the groups from ``changed`` on.

    ``free1`` / ``free2`` cache the squares without men / without men and white kings.
    """
    if changed <= 1:
        wm = np.uint64(0)
        for j in range(counts[0]):
            wm |= ONE << np.uint64(cur[0, j] + width)
        bm = np.uint64(0)
        for j in range(counts[2]):
            bm |= ONE << np.uint64(cur[1, j])
        boards[0] = wm
        boards[2] = bm
        boards[4] = np.uint64(0) if (wm & bm) else ONE
        k = 0
        men = wm | bm
        for sq in range(nsq):
            if not (men >> np.uint64(sq)) & ONE:
                free1[k] = sq
                k += 1
    if changed <= 2:
        wk = np.uint64(0)
        for j in range(counts[1]):
            wk |= ONE << np.uint64(free1[cur[2, j]])
        boards[1] = wk
        if counts[3] > 0:
            k = 0
            free = nsq - counts[0] - counts[2]
            for i in range(free):
                sq = free1[i]
                if not (wk >> np.uint64(sq)) & ONE:
                    free2[k] = sq
                    k += 1
    bk = np.uint64(0)
    for j in range(counts[3]):
        bk |= ONE << np.uint64(free2[cur[3, j]])
    boards[3] = bk


# --- king runs --------------------------------------------------------------------------
# Where a variant bars a player who still has men from more than ``limit`` quiet moves in a
# row with one king (Frisian: 3, ``rules.king_limit``), each side's current run is part
# of the position and of the index. A side with men and ``k`` kings has ``1 + limit * k`` run
# states: code 0 is no run, ``1 + limit * i + n - 1`` says that its ``i``-th king (counted
# from the lowest square) made its last ``n`` quiet moves. Any other side has one state::
#
#     entry = board_index * (Cw * Cb) + white_code * Cb + black_code
#
# so a slice without runs (every slice of the other variants) is indexed as before.


@njit(cache=True, inline="always")
def run_states(limit, men, kings):
    """Number of run states of a side with ``men`` men and ``kings`` kings."""
    if limit > 0 and men > 0 and kings > 0:
        return 1 + limit * kings
    return 1


@njit(cache=True, inline="always")
def run_code(limit, men, kings_bb, sq, n):
    """Run code of a side whose king on 0-based square ``sq`` made its last ``n`` quiet
    moves (``n`` 0: no run); 0 for a side without run states."""
    if n <= 0 or limit <= 0 or men == 0:
        return 0
    rank = popcount(kings_bb & ((ONE << np.uint64(sq)) - ONE))
    return 1 + limit * rank + n - 1


@njit(cache=True, inline="always")
def run_of_code(limit, kings_bb, code):
    """``(square, n)`` of run ``code`` against the side's kings; ``(-1, 0)`` for no run."""
    if code == 0:
        return -1, 0
    i = (code - 1) // limit
    bb = kings_bb
    for _ in range(i):
        bb &= bb - ONE
    return lowest_square(bb), (code - 1) % limit + 1


@njit(cache=True, inline="always")
def mirror_run_code(limit, kings, code):
    """The same run seen from the other side of the board (kings counted from the other
    end): the ``i``-th of ``kings`` kings becomes the ``kings - 1 - i``-th."""
    if code == 0:
        return 0
    i = (code - 1) // limit
    return 1 + limit * (kings - 1 - i) + (code - 1) % limit


@njit(cache=True)
def entry_index(nsq, width, limit, board, runs, binom):
    """Index of a white-to-move position ``board`` (white men, white kings, black men, black
    kings) with its runs ``runs`` = ``(wsq, wn, bsq, bn)`` (white's king on ``wsq`` made the
    last ``wn`` quiet moves, black's on ``bsq`` the last ``bn``; ``n`` 0: no run)."""
    wm, wk, bm, bk = board
    wsq, wn, bsq, bn = runs
    b = position_index(nsq, width, wm, wk, bm, bk, binom)
    if limit <= 0:
        return b
    nwm, nwk, nbm, nbk = popcount(wm), popcount(wk), popcount(bm), popcount(bk)
    cw = run_states(limit, nwm, nwk)
    cb = run_states(limit, nbm, nbk)
    if cw * cb == 1:
        return b
    return (
        b * (cw * cb) + run_code(limit, nwm, wk, wsq, wn) * cb + run_code(limit, nbm, bk, bsq, bn)
    )
