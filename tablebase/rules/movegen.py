"""Move generation: every legal move of the side to move, into a move buffer.

Everything here is compiled (``numba.njit(cache=True)``) and works side-relative: ``own_m,
own_k`` are the men and kings of the side to move, ``opp_m, opp_k`` those of its opponent
(together, where a function would otherwise take more than eight parameters, the tuple
``pos``), and ``white`` says whether the side to move is white (men move towards row 0).
Bit ``i`` of a bitboard is PDN square ``i + 1``. ``rules`` is the variant's record
(:class:`tablebase.rules.variants.Rules`: the neighbour table ``rules.nbr`` and the rule
fields by name).

The rules engine's compiled side, one concept a module: :mod:`~tablebase.rules.geometry`
(steps, rays, promotion rows on bitboards), :mod:`~tablebase.rules.movebuffer` (the move
buffer's layout, accessors and scratch space), :mod:`~tablebase.rules.captures` (whether a
capture is due, and the one capture search), :mod:`~tablebase.rules.quiet` (quiet moves),
this module (the two together: the legal moves), :mod:`~tablebase.rules.makemove` (the
position after a move), :mod:`~tablebase.rules.kingruns` (Frisian's king-move limit),
:mod:`~tablebase.rules.unmoves` (quiet un-moves) and :mod:`~tablebase.rules.perftcount`
(perft).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.rules.captures import capture_moves
from tablebase.rules.geometry import ONE, ZERO
from tablebase.rules.kernel import kernel
from tablebase.rules.quiet import quiet_moves


@kernel
def generate_moves(rules, white, own_m, own_k, opp_m, opp_k, moves, ws):
    """Fill ``moves`` with every legal move of the side to move; returns the count.

    Captures are compulsory; with the majority rule only the sequences taking the most
    pieces (Frisian: of greatest value) are kept. Without captures, men step forward and
    kings step (or fly) any diagonal way. Frisian's king-move limit is not applied here (it
    needs the king runs): use :func:`generate_moves_barred`. ``ws`` is a capture workspace
    (:func:`tablebase.rules.movebuffer.new_workspace`).
    """
    return _generate(rules, white, (own_m, own_k, opp_m, opp_k), ZERO, moves, ws)


@kernel
def generate_moves_barred(rules, white, pos, barred, moves, ws):
    """:func:`generate_moves` of ``pos`` = ``(own_m, own_k, opp_m, opp_k)`` where the king
    on bitboard ``barred`` (0: none) makes no quiet move: under Frisian's king-move limit,
    the king that has made its side's last ``rules.king_limit`` quiet moves
    (:func:`tablebase.rules.kingruns.king_barred`). Its captures stay."""
    return _generate(rules, white, pos, barred, moves, ws)


@njit(cache=True, inline="always")
def _generate(rules, white, pos, barred, moves, ws):
    # inlined into both faces: a call here costs International perft about 15 %
    own_m, own_k, opp_m, opp_k = pos
    n = capture_moves(rules, white, own_m, own_k, opp_m, opp_k, moves, ws)
    if n:
        return n
    own = own_m | own_k
    empty = ((ONE << np.uint64(rules.nsq)) - ONE) & ~(own | opp_m | opp_k)
    return quiet_moves(rules, white, own & ~barred, own_k, empty, moves)
