"""Compiled bitboard primitives shared by the engine and the layers on top of it.

Bit ``i`` of a ``uint64`` bitboard is PDN square ``i + 1``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros
from numba.extending import intrinsic


@intrinsic
def _ctpop(typingctx, x):
    """The CPU's population count of a 64-bit word (``llvm.ctpop``)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


@intrinsic
def _bitreverse(typingctx, x):
    """The 64 bits of a word in reverse order (``llvm.bitreverse``: byte swap and a few
    masks, or one instruction where the CPU has one)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitreverse(args[0])

    return types.uint64(types.uint64), codegen


@njit(cache=True, inline="always")
def reversed_bits(x):
    """Bit ``i`` of the word becomes bit ``63 - i``."""
    return _bitreverse(np.uint64(x))


@njit(cache=True, inline="always")
def popcount(x):
    """Number of set bits of a bitboard (the CPU's popcount instruction)."""
    return np.int64(_ctpop(np.uint64(x)))


@njit(cache=True, inline="always")
def lowest_square(x):
    """0-based index of the lowest set bit of a non-zero bitboard."""
    return np.int64(trailing_zeros(x))


@njit(cache=True, inline="always")
def highest_square(x):
    """0-based index of the highest set bit of a non-zero bitboard."""
    return np.int64(63 - leading_zeros(np.uint64(x)))
