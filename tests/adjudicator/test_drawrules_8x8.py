"""Russian draw rules (FMJD-64 7.2.3-7.2.8, docs/RULES-VARIANTS.md; Brazilian plays the same),
each on a game built to hit it exactly on its ply and one ply short of it, where it must not
fire. Moves are written and read in alphanumeric notation."""

from __future__ import annotations

import pytest
from adj_helpers import apply, position, walk

from adjudicator import RuleOptions, rule_game
from tablebase.rules import has_capture, legal_moves, play
from tablebase.rules.drawrules import MAIN_ROAD_64
from tablebase.rules.notation import move_text
from tablebase.rules.variants import BRAZILIAN, RUSSIAN


def ruled(moves, fen, variant="russian"):
    return rule_game(moves, fen=fen, variant=variant, options=RuleOptions())


def assert_fires(moves, fen, reason, ply, variant="russian"):
    assert len(moves) == ply
    r = ruled(moves, fen, variant)
    assert (r.reason, r.ply, r.result) == (reason, ply, "1/2-1/2"), r.detail
    before = ruled(moves[:-1], fen, variant)
    assert before.reason == "unfinished", before.detail


def on_main_road(square: int) -> bool:
    return bool(MAIN_ROAD_64 >> (square - 1) & 1)


def lone_king_keeps(on_road: bool):
    """A walk filter: black's lone king stays on (or off) the main road a1-h8."""

    def allow(pos, move) -> bool:
        return pos.white_to_move or on_main_road(move.to) == on_road

    return allow


def test_the_main_road_is_a1_to_h8():
    names = sorted(RUSSIAN.square_name(s) for s in range(1, 33) if on_main_road(s))
    assert names == ["a1", "b2", "c3", "d4", "e5", "f6", "g7", "h8"]
    assert BRAZILIAN.draw_rules == RUSSIAN.draw_rules


@pytest.mark.parametrize(
    ("fen", "rule"),
    [
        ("W:WKb8,Kd8,Kf8:BKa3", "15-move-kings"),  # 7.2.4, lone king off the main road
        ("W:WKb8,Kd8,Kf8:BKc3", "5-move-main-road"),  # 7.2.7 comes first on the main road
        ("W:WKb8,d6,f6:BKc3", "5-move-main-road"),  # three pieces, one a king
        ("W:WKb8,d6,f6:BKa3", "30-move"),  # not three kings, off the road: 7.2.6 (4 pieces)
        ("W:WKb8,Kd8:BKa3", "5-move"),  # 7.2.8
        ("W:WKb8,d6:BKc3", "5-move"),
        ("W:WKb8:BKa3", "5-move"),
        ("W:Wb6,d6:BKa3", None),  # two men, no king
        ("W:WKb8,Kd8:BKa3,Kh2", "30-move"),  # 7.2.6, 4 pieces
        ("W:WKb8,Kd8,b6:BKa3,Kh2", "30-move"),  # 5 pieces
        ("W:WKb8,Kd8,Kf8:BKa3,Kh2,Kg1", "60-move"),  # 6 pieces
        ("W:WKb8,Kd8,Kf8,Kh8:BKa3,Kh2,Kg1", "60-move"),  # 7 pieces
        ("W:WKb8,Kd8,Kf8,Kh8:BKa3,Kh2,Kg1,Ke1", None),  # 8 pieces: the general count
        ("W:WKb8,Kd8,b6:Ba3,h2", None),  # kings on one side only
    ],
)
def test_ending_material(fen, rule):
    ending = RUSSIAN.draw_rules.ending_of(position(fen, "russian"))
    assert (ending.name if ending else None) == rule


def test_threefold():
    fen = "W:WKa1,Kc1:BKh8,Kf8"
    cycle = ["c1-d2", "f8-g7", "d2-c1", "g7-f8"]
    assert_fires(cycle * 2, fen, "threefold", 8)


def test_15_move_rule_kings_only():
    # nine pieces: no ending; 15 moves each of king moves only
    fen = "W:WKa1,c3,e3,g3,h2:BKh8,b6,d6,f6"
    assert_fires(walk(position(fen, "russian"), 30), fen, "15-move", 30)


def man_move(pos) -> str:
    """A quiet move of one of white's men after which black has no capture."""
    return next(
        move_text(pos, m)
        for m in legal_moves(pos)
        if pos.white_men >> (m.frm - 1) & 1 and not has_capture(play(pos, m))
    )


def test_15_move_rule_reset_by_a_man_move():
    fen = "W:WKa1,c3,e3,g3,h2:BKh8,b6,d6,f6"
    start = position(fen, "russian")
    first = walk(start, 20)
    man = [man_move(apply(start, first))]
    rest = walk(apply(start, first + man), 30)
    assert_fires(first + man + rest, fen, "15-move", 51)


def test_15_moves_three_kings_against_one():
    fen = "W:WKb8,Kd8,Kf8:BKa3"
    moves = walk(position(fen, "russian"), 30, allow=lone_king_keeps(False))
    assert_fires(moves, fen, "15-move-kings", 30)


def test_5_moves_lone_king_on_the_main_road():
    fen = "W:WKb8,Kd8,Kf8:BKc3"
    moves = walk(position(fen, "russian"), 10, allow=lone_king_keeps(True))
    assert_fires(moves, fen, "5-move-main-road", 10)


def test_5_moves_two_pieces_against_a_king():
    fen = "W:WKb8,Kd8:BKa3"
    assert_fires(walk(position(fen, "russian"), 10), fen, "5-move", 10)


def test_30_moves_kings_on_both_sides_four_pieces():
    fen = "W:WKb8,Kd8:BKa3,Kh2"
    assert_fires(walk(position(fen, "russian"), 60), fen, "30-move", 60)


def test_30_move_count_restarts_on_promotion():
    # white: a king and a man on c7; the man's crowning keeps four pieces with kings on both
    # sides but changes the balance: the 30-move count starts afresh (7.2.6)
    fen = "W:WKh8,c7:BKa3,Kg1"
    start = position(fen, "russian")
    seen: dict = {}
    path = {RUSSIAN.square_named(n) for n in ("b8", "d8")}  # kept free for c7

    def clear(pos, move) -> bool:
        return move.to not in path

    moves = walk(start, 20, allow=clear, seen=seen)  # king moves: no change of balance
    moves.append(man_move(apply(start, moves)))  # crowned on the last row: count restarts
    crowned = apply(start, moves)
    assert crowned.white_men == 0 and len(moves) == 21
    rest = walk(crowned, 60, seen=seen)
    assert_fires(moves + rest, fen, "30-move", 21 + 60)
    # without the restart the count would have fired at ply 60
    assert ruled((moves + rest)[:60], fen).reason == "unfinished"


def test_60_moves_kings_on_both_sides_six_pieces():
    fen = "W:WKb8,Kd8,Kf8:BKa3,Kc1,Ke1"
    assert_fires(walk(position(fen, "russian"), 120), fen, "60-move", 120)


def test_brazilian_plays_the_same_rules():
    fen = "W:WKb8,Kd8:BKa3"
    assert_fires(walk(position(fen, "brazilian"), 10), fen, "5-move", 10, "brazilian")
