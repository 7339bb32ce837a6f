"""The rules engine for Python callers: legal moves, playing a move, quiet unmoves.

Thin wrappers around the compiled functions of :mod:`tablebase.rules.movegen`, turning buffer rows
into :class:`Move` values and bitboards into :class:`Position` values.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from tablebase.rules import movegen as mg
from tablebase.rules.position import Position, squares_of


@dataclass(frozen=True)
class Move:
    """A legal move: 1-based squares, the captured squares (ascending) and one route."""

    frm: int
    to: int
    captures: tuple[int, ...]
    path: tuple[int, ...]

    @property
    def is_capture(self) -> bool:
        return bool(self.captures)

    @property
    def captured_board(self) -> int:
        b = 0
        for s in self.captures:
            b |= 1 << (s - 1)
        return b


_local = threading.local()


def _buffers() -> tuple[np.ndarray, np.ndarray]:
    """Per-thread move buffer and capture-search workspace."""
    if not hasattr(_local, "moves"):
        _local.moves = mg.new_move_buffer()
        _local.ws = mg.new_workspace()
        _local.unmoves = np.zeros((4096, 7), dtype=np.uint64)
    return _local.moves, _local.ws


def legal_moves(pos: Position) -> list[Move]:
    """Every legal move, in generation order (by from square, then direction)."""
    moves, ws = _buffers()
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    n = mg.generate_moves(
        v.neighbours, v.rules, pos.white_to_move, own_m, own_k, opp_m, opp_k, moves, ws
    )
    out = []
    for i in range(n):
        row = moves[i]
        plen = int(row[mg.F_PLEN])
        out.append(
            Move(
                int(row[mg.F_FROM]) + 1,
                int(row[mg.F_TO]) + 1,
                tuple(squares_of(int(row[mg.F_CAP]))),
                tuple(int(x) + 1 for x in row[mg.F_PATH : mg.F_PATH + plen]),
            )
        )
    return out


def has_capture(pos: Position) -> bool:
    """True if the side to move must capture."""
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    return bool(
        mg.has_capture(v.neighbours, v.rules, pos.white_to_move, own_m, own_k, opp_m, opp_k)
    )


def play(pos: Position, move: Move) -> Position:
    """The position after ``move`` (assumed legal: take it from :func:`legal_moves`)."""
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    a, b, c, d = mg.make_move(
        v.rules,
        pos.white_to_move,
        own_m,
        own_k,
        opp_m,
        opp_k,
        np.uint64(move.frm - 1),
        np.uint64(move.to - 1),
        np.uint64(move.captured_board),
    )
    return Position.from_side_boards(a, b, c, d, not pos.white_to_move, v)


def quiet_unmoves(pos: Position, legal_only: bool = True) -> list[tuple[Position, Move]]:
    """Every (predecessor, quiet move) with ``play(predecessor, move) == pos``.

    Includes un-promotion (a king on the previous mover's crowning row that was a man one
    step back). With ``legal_only``, predecessors where the mover had to capture are dropped.
    """
    _buffers()
    out = _local.unmoves
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    n = mg.quiet_unmoves(
        v.neighbours, v.rules, pos.white_to_move, own_m, own_k, opp_m, opp_k, out, legal_only
    )
    result = []
    for i in range(n):
        r = out[i]
        prev = Position.from_side_boards(r[0], r[1], r[2], r[3], not pos.white_to_move, v)
        mv = Move(int(r[4]) + 1, int(r[5]) + 1, (), (int(r[4]) + 1, int(r[5]) + 1))
        result.append((prev, mv))
    return result


def perft(pos: Position, depth: int) -> int:
    """Leaf count of the legal-move tree ``depth`` plies deep."""
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    stack = mg.new_move_buffer(max(depth, 1) + 1)
    ws = mg.new_workspace()
    return int(
        mg.perft(
            v.neighbours, v.rules, pos.white_to_move, own_m, own_k, opp_m, opp_k, depth, stack, ws
        )
    )
