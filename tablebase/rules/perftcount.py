"""Perft: the number of leaves of the legal-move tree, the move generator's check.

Counted in bulk at the last ply (the number of moves, without playing them), with one move
buffer per ply (:func:`tablebase.rules.movebuffer.new_move_buffer` of the depth) and one
capture workspace. A position is the tuple ``pos`` = ``(own_m, own_k, opp_m, opp_k)``, the
side to move's boards first, as :func:`tablebase.rules.makemove.play_row` returns them.
"""

from __future__ import annotations

from tablebase.rules.geometry import ZERO
from tablebase.rules.kernel import kernel
from tablebase.rules.kingruns import king_barred, king_run_after, king_run_kept
from tablebase.rules.makemove import play_row
from tablebase.rules.movebuffer import F_FROM, F_NCAP, F_TO
from tablebase.rules.movegen import generate_moves, generate_moves_barred


@kernel
def perft(rules, white, pos, depth, stack, ws):
    """Number of leaf nodes of the legal-move tree of ``pos`` ``depth`` plies deep
    (bulk-counted)."""
    if depth == 0:
        return 1
    own_m, own_k, opp_m, opp_k = pos
    moves = stack[depth - 1]
    n = generate_moves(rules, white, own_m, own_k, opp_m, opp_k, moves, ws)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        a, b, c, e = play_row(own_m, own_k, opp_m, opp_k, moves, i)
        total += perft(rules, not white, (a, b, c, e), depth - 1, stack, ws)
    return total


@kernel
def perft_runs(rules, white, pos, runs, depth, stack, ws):
    """:func:`perft` under a king-move limit: each side's run (``runs`` = ``(own_sq, own_n,
    opp_sq, opp_n)``: 0-based square, n; -1, 0 for none, see
    :mod:`tablebase.rules.kingruns`) bars its king's quiet moves and is carried over every
    move."""
    if depth == 0:
        return 1
    own_m, own_k, opp_m, opp_k = pos
    own_sq, own_n, opp_sq, opp_n = runs
    moves = stack[depth - 1]
    barred = king_barred(rules, own_m, own_k, own_sq, own_n)
    n = generate_moves_barred(rules, white, pos, barred, moves, ws)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        a, b, c, e = play_row(own_m, own_k, opp_m, opp_k, moves, i)
        sq, k = king_run_after(
            rules,
            own_m,
            own_k,
            own_sq,
            own_n,
            moves[i, F_FROM],
            moves[i, F_TO],
            moves[i, F_NCAP] != ZERO,
        )
        osq, ok = king_run_kept(rules, a, b, opp_sq, opp_n)
        total += perft_runs(rules, not white, (a, b, c, e), (osq, ok, sq, k), depth - 1, stack, ws)
    return total
