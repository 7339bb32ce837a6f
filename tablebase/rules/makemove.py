"""Making a move on bitboards: the position after it, from the new side to move's view.

Every function here returns ``(own_m, own_k, opp_m, opp_k)`` with the *new* side to move
first, so that a search alternates sides by passing the result on.
"""

from __future__ import annotations

from tablebase.rules.geometry import ONE, ZERO, promotion_row
from tablebase.rules.kernel import kernel
from tablebase.rules.movebuffer import F_CAP, F_CROWN, F_FROM, F_TO


@kernel
def apply_move(own_m, own_k, opp_m, opp_k, frm, to, cap, crowns):
    """The position after moving the piece on ``frm`` to ``to`` and removing ``cap``, a man
    becoming a king when ``crowns``; the new side to move's boards first."""
    fb = ONE << frm
    tb = ONE << to
    if own_m & fb:
        own_m = own_m & ~fb
        if crowns:
            own_k = own_k | tb
        else:
            own_m = own_m | tb
    else:
        own_k = (own_k & ~fb) | tb
    opp_m = opp_m & ~cap
    opp_k = opp_k & ~cap
    return opp_m, opp_k, own_m, own_k


@kernel
def make_move(rules, white, pos, frm, to, cap):
    """Apply a move given by its squares to ``pos`` = ``(own_m, own_k, opp_m, opp_k)``;
    returns the position from the opponent's side.

    A man ending on its promotion row is crowned. A Russian man crowned in the middle of a
    capture and ending elsewhere is not known from the squares alone: apply generated moves
    with :func:`play_row`, which reads the move's ``crowns`` field.
    """
    own_m, own_k, opp_m, opp_k = pos
    crowns = (own_m & (ONE << frm)) != ZERO and (promotion_row(rules, white) & (ONE << to)) != ZERO
    return apply_move(own_m, own_k, opp_m, opp_k, frm, to, cap, crowns)


@kernel
def play_row(own_m, own_k, opp_m, opp_k, moves, i):
    """Apply move ``i`` of a buffer filled by :func:`tablebase.rules.movegen.generate_moves`
    for this position; returns ``(own_m, own_k, opp_m, opp_k)`` with the *new* side to move
    first."""
    return apply_move(
        own_m,
        own_k,
        opp_m,
        opp_k,
        moves[i, F_FROM],
        moves[i, F_TO],
        moves[i, F_CAP],
        moves[i, F_CROWN] != ZERO,
    )
