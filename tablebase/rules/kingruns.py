"""Frisian's king-move limit: which king may not move quietly, and the runs over a move.

A side's run is (square, n): the king on 0-based ``square`` made the side's last ``n`` quiet
moves; (-1, 0) is no run. Only a side with men has runs (the limit does not bind a side of
kings only, and men never come back), so every helper answers (-1, 0) for a side without
men; without a limit (``rules.king_limit`` 0) every run is (-1, 0). The runs are state
outside the bitboards: :func:`king_barred` says which king the limit bars
(:func:`tablebase.rules.movegen.generate_moves_barred` leaves out its quiet moves),
:func:`king_run_after` and :func:`king_run_kept` carry a side's run over a move.
"""

from __future__ import annotations

import numpy as np

from tablebase.rules.geometry import ONE, ZERO
from tablebase.rules.kernel import kernel


@kernel
def king_barred(rules, own_m, own_k, sq, n):
    """Bitboard of the king that may not make a quiet move (0 if none): the side has men, the
    variant has a limit and the king on ``sq`` made the side's last ``limit`` quiet moves."""
    limit = rules.king_limit
    if limit <= 0 or n < limit or sq < 0 or own_m == ZERO:
        return ZERO
    return own_k & (ONE << np.uint64(sq))


@kernel
def king_run_after(rules, own_m, own_k, sq, n, frm, to, is_capture):
    """The mover's run ``(square, n)`` after its move ``frm`` -> ``to`` (0-based squares;
    ``own_m``/``own_k`` before the move): a quiet move of the king that made the run goes on
    with it, a quiet move of another king starts a run of one, a man's move or a capture
    ends it."""
    if rules.king_limit <= 0 or own_m == ZERO or is_capture:
        return -1, 0
    if not (own_k >> np.uint64(frm)) & ONE:
        return -1, 0
    if n > 0 and sq == np.int64(frm):
        return np.int64(to), n + 1
    return np.int64(to), 1


@kernel
def king_run_kept(rules, own_m, own_k, sq, n):
    """A side's run after its opponent's move (the side's boards after it): kept, unless the
    opponent captured that king or the side's last man."""
    if rules.king_limit <= 0 or n <= 0 or sq < 0 or own_m == ZERO:
        return -1, 0
    if not (own_k >> np.uint64(sq)) & ONE:
        return -1, 0
    return sq, n
