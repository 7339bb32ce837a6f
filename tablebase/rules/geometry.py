"""Board geometry on bitboards: one step of many pieces at once, rays, promotion rows.

Bit ``i`` of a ``uint64`` bitboard is PDN square ``i + 1``. In PDN numbering a diagonal step
is a shift whose size depends on the row's parity, so a whole set of pieces moves one step
in direction ``d`` with two masked shifts (:func:`step`, tables ``GEO_MASK``/``GEO_SHIFT``
built from :func:`tablebase.rules.board.neighbours` for every board width); a straight
step (Frisian captures, directions 4-7) is one shift (:func:`step_straight`). ``RAYS`` holds
the squares from each square to the edge in each direction, so that a flying piece finds the
first piece in its way with one bit scan (:func:`first_on_ray`). The tables are indexed by the
board's width (squares per row, ``rules.width``), so one compiled function serves every
variant. Directions are those of :mod:`tablebase.rules.variants`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.rules import board
from tablebase.rules.bits import highest_square, lowest_square
from tablebase.rules.kernel import kernel

ONE = np.uint64(1)
ZERO = np.uint64(0)


def _geometry_tables() -> tuple[np.ndarray, np.ndarray]:
    """Bitboard steps of every board width (squares per row) 1..5, from the neighbour tables.

    In PDN numbering a diagonal step is a shift whose size depends on the row's parity, so
    ``GEO_MASK[w, d, k]`` holds the squares whose neighbour in direction ``d`` lies
    ``GEO_SHIFT[w, d, k]`` bits away (down for directions 2, 3, 6, 7; up for 0, 1, 4, 5).
    A straight step (directions 4-7) is one shift: a row down or up is ``2 * w`` bits, a
    square left or right one bit.
    """
    masks = np.zeros((6, 8, 2), dtype=np.uint64)
    shifts = np.zeros((6, 8, 2), dtype=np.int64)
    for width in range(1, 6):
        by_shift: list[dict[int, int]] = [{} for _ in range(8)]
        for i, row in enumerate(board.neighbours(2 * width, straight=True)):
            for d, j in enumerate(row):
                if j >= 0:
                    by_shift[d][abs(j - i)] = by_shift[d].get(abs(j - i), 0) | (1 << i)
        for d in range(8):
            assert len(by_shift[d]) <= 2
            for k, (shift, mask) in enumerate(sorted(by_shift[d].items())):
                masks[width, d, k] = mask
                shifts[width, d, k] = shift
    return masks, shifts


GEO_MASK, GEO_SHIFT = _geometry_tables()


def _ray_tables() -> np.ndarray:
    """``RAYS[w, sq, d]``: the squares from ``sq`` (excluded) to the board's edge in direction
    ``d`` on a board of width ``w``, so that a flying piece finds the first piece in its way
    with one bit scan (:func:`first_on_ray`) instead of a walk square by square."""
    rays = np.zeros((6, 64, 8), dtype=np.uint64)
    for width in range(1, 6):
        nbr = board.neighbours(2 * width, straight=True)
        for sq in range(nbr.shape[0]):
            for d in range(8):
                t = nbr[sq, d]
                while t >= 0:
                    rays[width, sq, d] |= np.uint64(1 << int(t))
                    t = nbr[t, d]
    return rays


RAYS = _ray_tables()


@njit(cache=True, inline="always")
def first_on_ray(width, sq, d, occupied):
    """The first square of ``occupied`` from ``sq`` in direction ``d`` (-1: none). Directions
    2, 3, 6, 7 run to higher squares, 0, 1, 4, 5 to lower ones (see :func:`_geometry_tables`)."""
    hit = RAYS[width, sq, d] & occupied
    if hit == ZERO:
        return -1
    if d == 2 or d == 3 or d >= 6:
        return lowest_square(hit)
    return highest_square(hit)


@njit(cache=True, inline="always")
def bit(sq):
    """The bitboard of 0-based square ``sq``."""
    return ONE << np.uint64(sq)


@njit(cache=True, inline="always")
def step(b, width, d):
    """Every square of ``b`` moved one step in direction ``d`` (off-board steps vanish)."""
    lo = (b & GEO_MASK[width, d, 0], np.uint64(GEO_SHIFT[width, d, 0]))
    hi = (b & GEO_MASK[width, d, 1], np.uint64(GEO_SHIFT[width, d, 1]))
    if d < 2:
        return (lo[0] >> lo[1]) | (hi[0] >> hi[1])
    return (lo[0] << lo[1]) | (hi[0] << hi[1])


@njit(cache=True, inline="always")
def step_straight(b, width, d):
    """Every square of ``b`` moved one straight step in direction ``d`` (4-7)."""
    mask = b & GEO_MASK[width, d, 0]
    shift = np.uint64(GEO_SHIFT[width, d, 0])
    if d < 6:
        return mask >> shift
    return mask << shift


@njit(cache=True, inline="always")
def forward(d, white):
    """True when direction ``d`` (0-3) is forward for a man of the given colour: 0, 1 go up
    (white's forward), 2, 3 down (black's)."""
    if white:
        return d < 2
    return d >= 2


@kernel
def promotion_row(rules, white):
    """Bitboard of the row where men of the given colour are crowned."""
    width = rules.width
    row = (ONE << np.uint64(width)) - ONE
    if white:
        return row
    return row << np.uint64(rules.nsq - width)


@njit(cache=True, inline="always")
def king_reach(width, flying, sq, empty):
    """The squares of ``empty`` a king on ``sq`` reaches by a quiet move (and so the squares
    a king now on ``sq`` may have come from): one step each way, or every square up to the
    first piece in its way for a flying king. A bitboard, so that callers loop over its
    squares instead of branching on each way."""
    tb = bit(sq)
    if not flying:
        around = step(tb, width, 0) | step(tb, width, 1)
        return (around | step(tb, width, 2) | step(tb, width, 3)) & empty
    occupied = ~empty
    out = ZERO
    for d in range(4):
        span = RAYS[width, sq, d]
        t = first_on_ray(width, sq, d, occupied)
        if t >= 0:
            span &= ~(RAYS[width, t, d] | bit(t))
        out |= span
    return out
