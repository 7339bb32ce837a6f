"""Two machine operations numba does not offer on CPU arrays: compare-and-swap, prefetch.

* :func:`cas` — atomic compare-and-swap of one array element (``cmpxchg``): the solver's
  parallel level passes change a position's state only through it, so two threads that
  reach the same predecessor never lose an update (a counter decrement, a decision).
* :func:`prefetch` — a hint that an element will be read soon (``llvm.prefetch``): the level
  passes compute every predecessor's index of a position first and prefetch them, so their
  cache misses overlap instead of following one another.

Both are ``numba.extending.intrinsic`` functions, usable only from compiled code, and
work on one-dimensional C-contiguous integer arrays.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _element_pointer(context, builder, arrty, arr, idx):
    ary = context.make_array(arrty)(context, builder, arr)
    return cgutils.get_item_pointer(context, builder, arrty, ary, [idx], wraparound=False)


@intrinsic
def cas(typingctx, arr, idx, expected, new):
    """``arr[idx] = new`` if it still holds ``expected``; returns the value it held (both
    are converted to the element type, as an assignment would)."""
    if not isinstance(arr, types.Array) or not isinstance(arr.dtype, types.Integer):
        return None
    dtype = arr.dtype
    if not isinstance(expected, types.Integer) or not isinstance(new, types.Integer):
        return None
    sig = dtype(arr, idx, expected, new)

    def codegen(context, builder, signature, args):
        a, i, exp, val = args
        ptr = _element_pointer(context, builder, signature.args[0], a, i)
        exp = context.cast(builder, exp, signature.args[2], dtype)
        val = context.cast(builder, val, signature.args[3], dtype)
        pair = builder.cmpxchg(ptr, exp, val, "monotonic", "monotonic")
        return builder.extract_value(pair, 0)

    return sig, codegen


@intrinsic
def prefetch(typingctx, arr, idx):
    """Ask the CPU to bring ``arr[idx]`` into the cache (for reading and writing)."""
    if not isinstance(arr, types.Array):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        a, i = args
        ptr = _element_pointer(context, builder, signature.args[0], a, i)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # rw = 1 (a write may follow), locality = 3 (keep), cache type = 1 (data)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(1), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen
