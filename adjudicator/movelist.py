"""The legal moves of a position as the compiled generator's rows, for a fast replay.

Replaying needs, per ply, "is the side to move lost?" and "which legal move does this text
name?". :func:`tablebase.rules.legal_moves` answers both but builds a :class:`Move` object
per legal move, which costs most of a replay's time. :class:`MoveList` generates once per
position into a per-thread buffer and builds a :class:`Move` only for the move played. The
plain ``from-to`` / ``fromxto`` texts naming exactly one move are matched here; anything
else (paths, ambiguity, errors) goes to :func:`tablebase.notation.parse_move`, which gives
the same answer and the precise error.
"""

from __future__ import annotations

import threading

import numpy as np

from tablebase.rules import Move
from tablebase.rules import movegen as mg
from tablebase.rules.notation import parse_move, parse_squares
from tablebase.rules.position import Position, squares_of

_local = threading.local()


def _buffers() -> tuple[np.ndarray, np.ndarray]:
    if not hasattr(_local, "moves"):
        _local.moves = mg.new_move_buffer()
        _local.ws = mg.new_workspace()
    return _local.moves, _local.ws


class MoveList:
    """The legal moves of ``pos``; valid until the next :class:`MoveList` of this thread."""

    __slots__ = ("pos", "count", "_rows")

    def __init__(self, pos: Position) -> None:
        buf, ws = _buffers()
        v = pos.variant
        own_m, own_k, opp_m, opp_k = pos.side_boards
        self.pos = pos
        self.count = int(
            mg.generate_moves(
                v.neighbours, v.rules, pos.white_to_move, own_m, own_k, opp_m, opp_k, buf, ws
            )
        )
        self._rows = buf

    def parse(self, text: str) -> Move:
        """The legal move ``text`` names (:class:`tablebase.notation.MoveError` if none or
        several)."""
        try:
            squares, is_capture = parse_squares(text)
        except ValueError:
            squares = []
        if len(squares) == 2:
            frm, to = squares[0] - 1, squares[1] - 1
            hit = -1
            for i, (f, t, _, ncap) in enumerate(self._rows[: self.count, :4].tolist()):
                if f == frm and t == to and (ncap > 0) == is_capture:
                    if hit >= 0:
                        hit = -1
                        break
                    hit = i
            if hit >= 0:
                return self._move(hit)
        return parse_move(self.pos, text)

    def _move(self, i: int) -> Move:
        frm, to, cap, _, plen, *path = self._rows[i, : mg.F_PATH + mg.MAX_PATH].tolist()
        return Move(frm + 1, to + 1, tuple(squares_of(cap)), tuple(s + 1 for s in path[:plen]))
