"""Quiet moves: the non-capturing moves of the side to move, written or counted.

Men step one square forward, kings one square any diagonal way or, flying, any distance up
to the first piece in their way. Quiet moves are diagonal in every variant (Frisian's
straight directions are for captures only), and legal only where the side has no capture
(:mod:`tablebase.rules.movegen` asks :mod:`tablebase.rules.captures` first).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.rules.bits import lowest_square, popcount
from tablebase.rules.geometry import ONE, ZERO, bit, forward, king_reach, promotion_row, step
from tablebase.rules.movebuffer import (
    F_CAP,
    F_CROWN,
    F_FROM,
    F_NCAP,
    F_PATH,
    F_PLEN,
    F_TO,
    MAX_MOVES,
)


@njit(cache=True, inline="always")
def king_quiet_count(rules, kings, empty):
    """Number of quiet moves of the kings on ``kings`` onto squares of ``empty``: one step
    each way, or every square up to the first piece in its way for flying kings (counted
    per ray with a bit scan and a popcount)."""
    width = rules.width
    n = 0
    if not rules.flying:
        for d in range(4):
            n += popcount(step(kings, width, d) & empty)
        return n
    while kings:
        sq = lowest_square(kings)
        kings &= kings - ONE
        n += popcount(king_reach(width, True, sq, empty))
    return n


@njit(cache=True, inline="always")
def quiet_moves(rules, white, movers, own_k, empty, moves):
    """Write the quiet moves of the pieces on ``movers`` (kings: those also on ``own_k``)
    onto ``empty`` squares into ``moves`` from row 0, by from-square then direction, a
    flying king's nearest squares first; returns how many. A man ending on its promotion
    row crowns."""
    nbr = rules.nbr
    flying = rules.flying
    promo = promotion_row(rules, white)
    n = 0
    while movers:
        sq = lowest_square(movers)
        b = bit(sq)
        movers ^= b
        king = (own_k & b) != ZERO
        for d in range(4):
            if not king and not forward(d, white):
                continue
            t = nbr[sq, d]
            while t >= 0 and (empty & bit(t)):
                if n >= MAX_MOVES:
                    raise RuntimeError("move buffer overflow")
                moves[n, F_FROM] = np.uint64(sq)
                moves[n, F_TO] = np.uint64(t)
                moves[n, F_CAP] = ZERO
                moves[n, F_NCAP] = ZERO
                moves[n, F_PLEN] = np.uint64(2)
                moves[n, F_CROWN] = ONE if (not king and (promo & bit(t)) != ZERO) else ZERO
                moves[n, F_PATH] = np.uint64(sq)
                moves[n, F_PATH + 1] = np.uint64(t)
                n += 1
                if not (king and flying):
                    break
                t = nbr[t, d]
    return n
