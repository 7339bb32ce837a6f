"""The outcome names, the ranking of moves and the piece test (tablebase.rules.outcome)."""

from __future__ import annotations

from tablebase.rules.outcome import RESULT_NAMES, move_rank, pieces
from tablebase.rules.position import Position
from tablebase.rules.variants import ENGLISH


def test_moves_rank_short_wins_first_and_long_losses_before_short_ones() -> None:
    moves = [("loss", 2), ("draw", None), ("win", 9), (None, None), ("loss", 12), ("win", 3)]
    ranked = sorted(moves, key=lambda m: move_rank(*m))
    assert ranked == [
        ("win", 3),
        ("win", 9),
        ("draw", None),
        ("loss", 12),
        ("loss", 2),
        (None, None),
    ]


def test_names_and_pieces_of_each_side() -> None:
    assert RESULT_NAMES == {1: "win", 0: "draw", -1: "loss"}
    assert pieces(Position.from_fen("W:W28,K46:BK5")) == (2, 1)
    assert pieces(Position.from_fen("B:W28,K46:BK5")) == (1, 2)
    assert pieces(Position.from_fen("B:W28:B", ENGLISH)) == (0, 1)
