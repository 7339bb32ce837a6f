"""Quiet un-moves: every position that reaches this one by one quiet move.

The rules engine's reverse step for Python callers and tests
(:func:`tablebase.rules.moves.quiet_unmoves`); the solver has its own, index-aware un-moves
(:mod:`tablebase.solve.whole`, :mod:`tablebase.solve.runs`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.rules.captures import has_capture
from tablebase.rules.geometry import ONE, ZERO, bit, forward, promotion_row
from tablebase.rules.kernel import kernel


@njit(cache=True, inline="always")
def _put(rules, legal_only, mover_white, out, k, row):
    """Write the predecessor ``row`` (mover's men, mover's kings, other men, other kings,
    from, to, unpromoted) at ``out[k]``, unless ``legal_only`` and the mover had a capture
    there (a quiet move was then illegal); returns the new count."""
    if legal_only and has_capture(rules, mover_white, row[0], row[1], row[2], row[3]):
        return k
    if k >= out.shape[0]:
        raise RuntimeError("unmove buffer overflow")
    for i in range(7):
        out[k, i] = row[i]
    return k + 1


@kernel
def quiet_unmoves(rules, white, own_m, own_k, opp_m, opp_k, out, legal_only):
    """Every position that reaches this one by one quiet (non-capture) move.

    The side to move here is ``white``; the previous mover is its opponent. Each
    predecessor is written to ``out[k] = (mover_m, mover_k, other_m, other_k, from, to,
    unpromoted)`` from the previous mover's point of view. Un-promotion is included: a king
    on the opponent's promotion row may have been a man one step back. With ``legal_only``
    predecessors where the mover had a capture (so a quiet move was illegal) are dropped.
    """
    nbr = rules.nbr
    nsq = rules.nsq
    full = (ONE << np.uint64(nsq)) - ONE
    occupied = own_m | own_k | opp_m | opp_k
    empty = full & ~occupied
    flying = rules.flying
    mover_white = not white
    promo = promotion_row(rules, mover_white)
    k = 0
    for to in range(nsq):
        tb = bit(to)
        if not ((opp_m | opp_k) & tb):
            continue
        is_king = (opp_k & tb) != ZERO
        for d in range(4):
            back = not forward(d, mover_white)
            # the piece arrived moving in direction (3 - d): it came from direction d of 'to'
            f = nbr[to, d]
            while f >= 0 and (empty & bit(f)):
                fb = bit(f)
                if is_king:
                    pm, pk = opp_m, (opp_k & ~tb) | fb
                    row = (pm, pk, own_m, own_k, np.uint64(f), np.uint64(to), ZERO)
                    k = _put(rules, legal_only, mover_white, out, k, row)
                    if back and (promo & tb) and f == nbr[to, d]:
                        pm, pk = opp_m | fb, opp_k & ~tb
                        row = (pm, pk, own_m, own_k, np.uint64(f), np.uint64(to), ONE)
                        k = _put(rules, legal_only, mover_white, out, k, row)
                    if not flying:
                        break
                else:
                    if back:
                        pm, pk = (opp_m & ~tb) | fb, opp_k
                        row = (pm, pk, own_m, own_k, np.uint64(f), np.uint64(to), ZERO)
                        k = _put(rules, legal_only, mover_white, out, k, row)
                    break
                f = nbr[f, d]
    return k
