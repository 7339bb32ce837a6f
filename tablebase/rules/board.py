"""Board geometry: PDN square numbers, (row, column) coordinates and neighbour tables.

A board of ``size`` x ``size`` squares has ``size * size / 2`` playable (dark) squares,
numbered 1.. in PDN order from black's back row (row 0, top). These functions depend on the
size alone, so the move generator's bitboard tables (:mod:`tablebase.rules.geometry`) and the
variants (:mod:`tablebase.rules.variants`) both build on them without depending on each other.
"""

from __future__ import annotations

import numpy as np

# Steps (row, column) of the eight directions: the four diagonals 0-3, then the straight
# captures' two-square steps 4-7 (see ``tablebase.rules.variants`` for their names).
DIAGONAL_STEPS: tuple[tuple[int, int], ...] = ((-1, -1), (-1, 1), (1, -1), (1, 1))
STRAIGHT_STEPS: tuple[tuple[int, int], ...] = ((-2, 0), (0, -2), (0, 2), (2, 0))


def coords(size: int, square: int) -> tuple[int, int]:
    """(row, column) of a 1-based PDN square; row 0 is black's back row (top)."""
    row, k = divmod(square - 1, size // 2)
    return row, 2 * k + (1 if row % 2 == 0 else 0)


def square_at(size: int, row: int, col: int) -> int:
    """1-based PDN square at (row, col), or 0 for a light or off-board square."""
    if not (0 <= row < size and 0 <= col < size) or (row + col) % 2 == 0:
        return 0
    return row * (size // 2) + col // 2 + 1


def neighbours(size: int, straight: bool) -> np.ndarray:
    """int64[squares, 4]: 0-based neighbour index in each diagonal direction, -1 off board;
    with ``straight``, int64[squares, 8], the straight directions 4-7 in columns 4-7."""
    steps = DIAGONAL_STEPS + (STRAIGHT_STEPS if straight else ())
    squares = size * size // 2
    nbr = np.full((squares, len(steps)), -1, dtype=np.int64)
    for sq in range(1, squares + 1):
        row, col = coords(size, sq)
        for d, (dr, dc) in enumerate(steps):
            nbr[sq - 1, d] = square_at(size, row + dr, col + dc) - 1
    return nbr
