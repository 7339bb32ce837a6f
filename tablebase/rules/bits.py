"""Compiled bitboard primitives shared by the engine and the layers on top of it.

Bit ``i`` of a ``uint64`` bitboard is PDN square ``i + 1``.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros


@njit(cache=True, inline="always")
def popcount(x):
    """Number of set bits of a bitboard (SWAR count)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, inline="always")
def lowest_square(x):
    """0-based index of the lowest set bit of a non-zero bitboard."""
    return np.int64(trailing_zeros(x))
