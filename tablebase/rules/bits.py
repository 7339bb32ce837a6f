"""Compiled bitboard primitives shared by the engine and the layers on top of it.

Bit ``i`` of a ``uint64`` bitboard is PDN square ``i + 1``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
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


def _fast_deposit() -> bool:
    """Whether the compiled code may use the CPU's parallel bit deposit (BMI2 ``pdep``):
    the CPU numba compiles for has it, and runs it in one step (AMD's before Zen 3 run it
    in microcode, a step per bit, slower than the loop of :func:`_deposit_loop`)."""
    import llvmlite.binding as ll
    from numba.core import config

    # a portable target (NUMBA_CPU_NAME): no features assumed; numba sets the name at run time
    if getattr(config, "CPU_NAME", None) not in (None, "host"):
        return False
    name = ll.get_host_cpu_name()
    return bool(ll.get_host_cpu_features().get("bmi2")) and not name.startswith(
        ("znver1", "znver2", "bdver")
    )


FAST_DEPOSIT = _fast_deposit()


@intrinsic
def _pdep(typingctx, x, mask):
    """The CPU's parallel bit deposit of ``x`` into ``mask`` (``llvm.x86.bmi.pdep.64``)."""
    if not isinstance(x, types.Integer) or not isinstance(mask, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i64, [i64, i64]), "llvm.x86.bmi.pdep.64"
        )
        return builder.call(fn, list(args))

    return types.uint64(types.uint64, types.uint64), codegen


@njit(cache=True, inline="always")
def _deposit_pdep(x, mask):
    return _pdep(np.uint64(x), np.uint64(mask))


@njit(cache=True, inline="always")
def _deposit_loop(x, mask):
    """:func:`deposit` without the instruction: bit by bit of ``x``, the ``i``-th set bit
    of ``mask`` found by clearing the lower ones."""
    x, mask = np.uint64(x), np.uint64(mask)
    out = np.uint64(0)
    i = 0
    while x:
        j = lowest_square(x)
        x &= x - np.uint64(1)
        while i < j:  # skip the set bits of mask below the j-th
            mask &= mask - np.uint64(1)
            i += 1
        out |= mask & (np.uint64(0) - mask)
    return out


# Bit i of x goes to the i-th lowest set bit of mask (x has no more bits than mask): the
# i-th free square of a board, from a coordinate counted among the free squares.
deposit = _deposit_pdep if FAST_DEPOSIT else _deposit_loop
