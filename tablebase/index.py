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
def popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, inline="always")
def lowest_square(x):
    """0-based index of the lowest set bit of a non-zero bitboard."""
    return popcount((x & (~x + ONE)) - ONE)


@njit(cache=True)
def _rank_men(bb, offset, binom):
    r = np.int64(0)
    i = 1
    while bb:
        sq = lowest_square(bb)
        bb &= bb - ONE
        r += binom[sq - offset, i]
        i += 1
    return r


@njit(cache=True)
def _rank_among_free(bb, occupied, binom):
    r = np.int64(0)
    i = 1
    while bb:
        sq = lowest_square(bb)
        low = (ONE << np.uint64(sq)) - ONE
        bb &= bb - ONE
        r += binom[sq - popcount(occupied & low), i]
        i += 1
    return r


@njit(cache=True)
def position_index(nsq, width, wm, wk, bm, bk, binom):
    """Index of a white-to-move position in its slice (counts taken from the bitboards)."""
    nwm = popcount(wm)
    nbm = popcount(bm)
    nwk = popcount(wk)
    nbk = popcount(bk)
    a = nsq - width
    free = nsq - nwm - nbm
    r_wm = _rank_men(wm, width, binom)
    r_bm = _rank_men(bm, 0, binom)
    men = wm | bm
    r_wk = _rank_among_free(wk, men, binom)
    r_bk = _rank_among_free(bk, men | wk, binom)
    return ((r_wm * binom[a, nbm] + r_bm) * binom[free, nwk] + r_wk) * binom[free - nwk, nbk] + r_bk


@njit(cache=True)
def _unrank_colex(r, k, n, binom):
    """Sorted coordinates (as a bitboard over 0..n-1) of the colex rank ``r`` of k-subsets."""
    out = np.uint64(0)
    x = n - 1
    for i in range(k, 0, -1):
        while binom[x, i] > r:
            x -= 1
        r -= binom[x, i]
        out |= ONE << np.uint64(x)
        x -= 1
    return out


@njit(cache=True)
def _spread(coords, free_mask, nsq):
    """Map coordinates among the set bits of ``free_mask`` back to squares."""
    out = np.uint64(0)
    j = 0
    for sq in range(nsq):
        b = ONE << np.uint64(sq)
        if free_mask & b:
            if coords & (ONE << np.uint64(j)):
                out |= b
            j += 1
    return out


@njit(cache=True)
def position_from_index(idx, nsq, width, nwm, nwk, nbm, nbk, binom):
    """Inverse of :func:`position_index`: ``(wm, wk, bm, bk, valid)``.

    ``valid`` is False for the unused entries where a white and a black man coincide.
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
    wm = _unrank_colex(r_wm, nwm, a, binom) << np.uint64(width)
    bm = _unrank_colex(r_bm, nbm, a, binom)
    if wm & bm:
        return wm, np.uint64(0), bm, np.uint64(0), False
    full = (ONE << np.uint64(nsq)) - ONE
    men = wm | bm
    wk = _spread(_unrank_colex(r_wk, nwk, free, binom), full & ~men, nsq)
    bk = _spread(_unrank_colex(r_bk, nbk, free - nwk, binom), full & ~(men | wk), nsq)
    return wm, wk, bm, bk, True


def _reverse_table() -> np.ndarray:
    t = np.zeros(1 << 16, dtype=np.uint64)
    for i in range(1 << 16):
        t[i] = int(f"{i:016b}"[::-1], 2)
    return t


REVERSE16 = _reverse_table()


@njit(cache=True, inline="always")
def reverse_board(x, nsq, rev16):
    """Square s ↔ square nsq-1-s (0-based): the 180 degree rotation."""
    m = np.uint64(0xFFFF)
    r = (
        (rev16[x & m] << np.uint64(48))
        | (rev16[(x >> np.uint64(16)) & m] << np.uint64(32))
        | (rev16[(x >> np.uint64(32)) & m] << np.uint64(16))
        | rev16[(x >> np.uint64(48)) & m]
    )
    return r >> np.uint64(64 - nsq)
