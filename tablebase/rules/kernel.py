"""How the hot compiled functions are compiled: without numba's reference counting.

Numba counts references to every array a compiled function holds: an array argument, an
array handed to an inlined helper, a row view such as ``cur[g]``, each gets an atomic
increment on entry and an atomic decrement on exit (``NRT_incref`` / ``NRT_decref``, a
``lock``-prefixed instruction each). Inside the solver's per-entry loops these were most of
the time: 65 % of pass 1's profile on the 5-piece slice 1211 was those two instructions,
and with two threads the shared arrays' counts (the neighbour table, the binomials, the
solved tables) moved between the cores' caches at every call.

A :func:`kernel` is compiled with the counting off (numba's ``_nrt=False``). It borrows the
arrays it is given, which live as long as its caller holds them, and so must not allocate
an array (numba refuses to compile one that does) nor return one: its callers allocate its
scratch space (see :func:`tablebase.solve.whole.init_scratch`) and pass it in. Helpers it inlines
are compiled with it, counting off too. Everything else stays plain ``njit``.

``_nrt`` is one of numba's own options (its tests use it) without a documented name; a
numba without it would refuse the option at the first compile (``KeyError: Unrecognized
options``), not compile something else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import njit

# numba's options: ``_nrt`` is not in numba's typed signature of ``njit`` (see above)
_OPTIONS: dict[str, Any] = {"cache": True, "_nrt": False}


def kernel(fn: Callable) -> Callable:
    """``njit(cache=True)`` without reference counting (see the module docstring)."""
    return njit(**_OPTIONS)(fn)
