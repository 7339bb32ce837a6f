"""The rules engine for Python callers: legal moves, playing a move, quiet unmoves, perft.

Thin wrappers around the compiled functions of :mod:`tablebase.rules.movegen` and its
sibling modules (captures, king runs, un-moves, perft, the move buffer):
:class:`MoveList` reads the move buffer through its compiled accessors and turns rows into
:class:`Move` values; bitboards become :class:`Position` values. Under a king-move limit
(Frisian) the king runs of the position bar a king's quiet moves here, and :func:`play`
carries them over the move.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from tablebase.rules import captures, perftcount, unmoves
from tablebase.rules.kingruns import king_barred, king_run_after, king_run_kept
from tablebase.rules.makemove import apply_move
from tablebase.rules.movebuffer import (
    find_move,
    move_capture_count,
    move_captured,
    move_crowns,
    move_from,
    move_path_length,
    move_path_square,
    move_to,
    new_move_buffer,
    new_workspace,
)
from tablebase.rules.movegen import generate_moves_barred
from tablebase.rules.position import Position, squares_of


@dataclass(frozen=True)
class Move:
    """A legal move: 1-based squares, the captured squares (ascending) and one route.

    ``crowns`` is True when a man becomes a king by the move: by ending on its promotion
    row, or (Russian) by reaching it during a capture and going on as a king.
    """

    frm: int
    to: int
    captures: tuple[int, ...]
    path: tuple[int, ...]
    crowns: bool = False

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
        _local.moves = new_move_buffer()
        _local.ws = new_workspace()
        _local.unmoves = np.zeros((4096, 7), dtype=np.uint64)
    return _local.moves, _local.ws


class MoveList:
    """The legal moves of ``pos`` as the compiled generator wrote them, read through the
    buffer's accessors; a :class:`Move` is built only for the moves asked for.

    The rows live in a per-thread buffer: a list is valid until the next :class:`MoveList`
    or :func:`legal_moves` call of the same thread. Squares are 1-based here.
    """

    __slots__ = ("pos", "count", "_rows")

    def __init__(self, pos: Position) -> None:
        buf, ws = _buffers()
        v = pos.variant
        own_m, own_k, opp_m, opp_k = pos.side_boards
        self.pos = pos
        (own_sq, own_n), _ = pos.side_runs
        barred = king_barred(v.rules, own_m, own_k, own_sq, own_n)
        self.count = int(
            generate_moves_barred(
                v.rules, pos.white_to_move, (own_m, own_k, opp_m, opp_k), barred, buf, ws
            )
        )
        self._rows = buf

    def __len__(self) -> int:
        return self.count

    def _check(self, i: int) -> None:
        if not 0 <= i < self.count:
            raise IndexError(f"move {i} of a list of {self.count}")

    def frm(self, i: int) -> int:
        self._check(i)
        return int(move_from(self._rows, i)) + 1

    def to(self, i: int) -> int:
        self._check(i)
        return int(move_to(self._rows, i)) + 1

    def captured(self, i: int) -> int:
        """Bitboard of the pieces move ``i`` captures."""
        self._check(i)
        return int(move_captured(self._rows, i))

    def capture_count(self, i: int) -> int:
        self._check(i)
        return int(move_capture_count(self._rows, i))

    def crowns(self, i: int) -> bool:
        self._check(i)
        return bool(move_crowns(self._rows, i))

    def path(self, i: int) -> tuple[int, ...]:
        self._check(i)
        n = int(move_path_length(self._rows, i))
        return tuple(int(move_path_square(self._rows, i, j)) + 1 for j in range(n))

    def move(self, i: int) -> Move:
        """Move ``i`` as a :class:`Move` value."""
        return Move(
            self.frm(i),
            self.to(i),
            tuple(squares_of(self.captured(i))),
            self.path(i),
            self.crowns(i),
        )

    def moves(self) -> list[Move]:
        return [self.move(i) for i in range(self.count)]

    def find(self, frm: int, to: int, capture: bool) -> int:
        """Index of the one move ``frm`` -> ``to`` (1-based) that is a capture iff
        ``capture``; -1 when there is none, -2 when there are several."""
        return int(find_move(self._rows, self.count, frm - 1, to - 1, capture))


def legal_moves(pos: Position) -> list[Move]:
    """Every legal move, in generation order (by from square, then direction)."""
    return MoveList(pos).moves()


def has_capture(pos: Position) -> bool:
    """True if the side to move must capture."""
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    return bool(captures.has_capture(v.rules, pos.white_to_move, own_m, own_k, opp_m, opp_k))


def play(pos: Position, move: Move) -> Position:
    """The position after ``move`` (assumed legal: take it from :func:`legal_moves`); under
    a king-move limit with the king runs carried over (``kingruns.king_run_after`` for the
    mover, ``kingruns.king_run_kept`` for the other side)."""
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    a, b, c, d = apply_move(
        own_m,
        own_k,
        opp_m,
        opp_k,
        np.uint64(move.frm - 1),
        np.uint64(move.to - 1),
        np.uint64(move.captured_board),
        move.crowns or _ends_crowned(pos, move),
    )
    if v.king_move_limit <= 0:
        return Position.from_side_boards(a, b, c, d, not pos.white_to_move, v)
    (own_sq, own_n), (opp_sq, opp_n) = pos.side_runs
    mover = king_run_after(
        v.rules, own_m, own_k, own_sq, own_n, move.frm - 1, move.to - 1, move.is_capture
    )
    other = king_run_kept(v.rules, a, b, opp_sq, opp_n)
    runs = (_one_based(*other), _one_based(*mover))
    return Position.from_side_boards(a, b, c, d, not pos.white_to_move, v, runs)


def _one_based(sq: int, n: int) -> tuple[int, int]:
    """A compiled run (0-based square, -1 for none) as :attr:`Position.king_runs` holds it."""
    return (int(sq) + 1, int(n)) if n else (0, 0)


def _ends_crowned(pos: Position, move: Move) -> bool:
    """A man ending on its promotion row (for moves built without the ``crowns`` flag)."""
    v = pos.variant
    men = pos.white_men if pos.white_to_move else pos.black_men
    row = v.white_promotion_row if pos.white_to_move else v.black_promotion_row
    return bool(men >> (move.frm - 1) & 1 and row >> (move.to - 1) & 1)


def quiet_unmoves(pos: Position, legal_only: bool = True) -> list[tuple[Position, Move]]:
    """Every (predecessor, quiet move) with ``play(predecessor, move) == pos``.

    Includes un-promotion (a king on the previous mover's crowning row that was a man one
    step back). With ``legal_only``, predecessors where the mover had to capture are dropped.
    """
    _buffers()
    out = _local.unmoves
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    n = unmoves.quiet_unmoves(
        v.rules, pos.white_to_move, own_m, own_k, opp_m, opp_k, out, legal_only
    )
    result = []
    for i in range(n):
        r = out[i]
        prev = Position.from_side_boards(r[0], r[1], r[2], r[3], not pos.white_to_move, v)
        mv = Move(int(r[4]) + 1, int(r[5]) + 1, (), (int(r[4]) + 1, int(r[5]) + 1), bool(r[6]))
        result.append((prev, mv))
    return result


def perft(pos: Position, depth: int) -> int:
    """Leaf count of the legal-move tree ``depth`` plies deep (honouring the king runs under
    a king-move limit)."""
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    stack = new_move_buffer(max(depth, 1) + 1)
    ws = new_workspace()
    if v.king_move_limit > 0:
        (own_sq, own_n), (opp_sq, opp_n) = pos.side_runs
        return int(
            perftcount.perft_runs(
                v.rules,
                pos.white_to_move,
                (own_m, own_k, opp_m, opp_k),
                (own_sq, own_n, opp_sq, opp_n),
                depth,
                stack,
                ws,
            )
        )
    board = (own_m, own_k, opp_m, opp_k)
    return int(perftcount.perft(v.rules, pos.white_to_move, board, depth, stack, ws))
