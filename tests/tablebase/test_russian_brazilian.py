"""Russian and Brazilian draughts: every rule where they differ from International, with a
concrete position each; the 8x8 geometry; alphanumeric notation both ways; GameType and FEN
forms; perft from the start against an independent implementation."""

from __future__ import annotations

import pytest

from tablebase.rules import legal_moves, perft, play
from tablebase.rules.notation import MoveError, move_text, parse_move, parse_squares
from tablebase.rules.position import FenError, Position
from tablebase.rules.variants import (
    BRAZILIAN,
    ENGLISH,
    INTERNATIONAL,
    RUSSIAN,
    get_variant,
    variant_for_game_type,
)


def moves_of(fen: str, variant) -> set[tuple[str, tuple[int, ...], bool]]:
    pos = Position.from_fen(fen, variant)
    moves = legal_moves(pos)
    return {(move_text(pos, m, moves), m.captures, m.crowns) for m in moves}


# --- rule sets as data -----------------------------------------------------------------------


def test_variant_data():
    assert get_variant("Russian") is RUSSIAN and get_variant("brazilian") is BRAZILIAN
    for v in (RUSSIAN, BRAZILIAN):
        assert (v.size, v.squares, v.flying_kings, v.men_capture_backwards) == (8, 32, True, True)
        assert v.white_moves_first and v.notation == "alphanumeric"
    assert not RUSSIAN.majority_capture and RUSSIAN.mid_capture_crowning == "continues"
    assert BRAZILIAN.majority_capture and BRAZILIAN.mid_capture_crowning == "passes"
    # Brazilian is International's rules on the small board: only size and names differ
    same = ("flying", "men_back", "majority", "crowning", "king_limit", "straight", "value")
    for name in same:
        assert getattr(BRAZILIAN.rules, name) == getattr(INTERNATIONAL.rules, name), name
    assert (BRAZILIAN.rules.nsq, BRAZILIAN.rules.width) == (32, 4)


def test_game_types():
    assert variant_for_game_type(25) is RUSSIAN
    assert variant_for_game_type(26) is BRAZILIAN
    assert variant_for_game_type(20) is INTERNATIONAL and variant_for_game_type(21) is ENGLISH


# --- capture rules ---------------------------------------------------------------------------


def test_russian_free_choice_brazilian_majority():
    # c3 can take d4 and f6 (two pieces); e1 can take f2 (one piece)
    fen = "W:W22,31:B18,11,27"
    assert moves_of(fen, RUSSIAN) == {("c3:g7", (11, 18), False), ("e1:g3", (27,), False)}
    assert moves_of(fen, BRAZILIAN) == {("c3:g7", (11, 18), False)}


def test_capture_is_compulsory_in_both():
    fen = "W:W22,29:B18"  # a1 could step to b2, but c3 must take d4
    for v in (RUSSIAN, BRAZILIAN):
        assert moves_of(fen, v) == {("c3:e5", (18,), False)}


def test_men_capture_backwards_in_both():
    fen = "W:W18:B22,23"  # d4 takes c3 or e3, backwards
    for v in (RUSSIAN, BRAZILIAN):
        assert moves_of(fen, v) == {("d4:b2", (22,), False), ("d4:f2", (23,), False)}
    assert (
        moves_of(fen, ENGLISH) == set()
        or all(  # English men never capture backwards
            not caps for _, caps, _ in moves_of("B" + fen[1:], ENGLISH)
        )
    )


def test_men_step_forward_only():
    fen = "W:W18:B1"
    for v in (RUSSIAN, BRAZILIAN):
        assert {t for t, _, _ in moves_of(fen, v)} == {"d4-c5", "d4-e5"}


def test_russian_man_crowned_mid_capture_goes_on_as_a_king():
    # d6 takes e7 and lands on f8: crowned at once, it takes g7 (backwards) and ends on h6
    # as a king; in Brazilian it passes f8 as a man and is a man on h6.
    fen = "W:W10:B7,8"
    assert moves_of(fen, RUSSIAN) == {("d6:h6", (7, 8), True)}
    assert moves_of(fen, BRAZILIAN) == {("d6:h6", (7, 8), False)}
    for v, kings, men in ((RUSSIAN, 1 << 11, 0), (BRAZILIAN, 0, 1 << 11)):
        pos = Position.from_fen(fen, v)
        (move,) = legal_moves(pos)
        after = play(pos, move)
        assert (after.white_kings, after.white_men, after.black_men) == (kings, men, 0)


def test_russian_crowned_man_captures_on_flying():
    # f6 takes e7 to d8 and is crowned; only a flying king reaches b6 over the empty c7.
    fen = "W:W11:B7,9"
    assert moves_of(fen, RUSSIAN) == {("f6:a5", (7, 9), True)}
    assert moves_of(fen, BRAZILIAN) == {("f6:d8", (7,), True)}  # crowned where it stops


def test_capture_ending_on_the_last_row_crowns_in_both():
    for v in (RUSSIAN, BRAZILIAN):
        assert moves_of("W:W10:B7", v) == {("d6:f8", (7,), True)}


def test_russian_king_must_land_where_it_can_capture_on():
    # c3 takes d4; of the landing squares e5, f6, g7, h8 only f6 goes on (over e7 to d8), so
    # the king must land there (FMJD-64 rules). Without the rule c3:e5/g7/h8 would be legal.
    assert moves_of("W:WK22:B18,7", RUSSIAN) == {("c3:d8", (7, 18), False)}
    # with nothing to take after d4 every landing square is free to choose
    assert {t for t, _, _ in moves_of("W:WK22:B18", RUSSIAN)} == {
        "c3:e5",
        "c3:f6",
        "c3:g7",
        "c3:h8",
    }


def test_russian_free_choice_among_kings_routes():
    # From e5 the king may go on over f6 or over d6: both routes are legal in Russian.
    got = moves_of("W:WK22:B10,11,18", RUSSIAN)
    assert {t for t, _, _ in got} == {"c3:c7", "c3:b8", "c3:g7", "c3:h8"}


def test_captured_pieces_stay_until_the_move_ends():
    # The king may not jump d4 twice; after c3:e5:c7 the captured d4 still blocks the way back.
    got = moves_of("W:WK22:B18,10", RUSSIAN)
    assert got == {("c3:b8", (10, 18), False), ("c3:c7", (10, 18), False)}


# --- geometry and notation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("square", "name"),
    [(1, "b8"), (4, "h8"), (5, "a7"), (22, "c3"), (29, "a1"), (32, "g1"), (18, "d4")],
)
def test_square_names(square, name):
    assert RUSSIAN.square_name(square) == name
    assert RUSSIAN.square_named(name) == square
    assert RUSSIAN.square_named(name.upper()) == square


def test_square_names_round_trip_and_a1_is_dark():
    names = {RUSSIAN.square_name(s) for s in range(1, 33)}
    assert len(names) == 32
    assert all(RUSSIAN.square_named(RUSSIAN.square_name(s)) == s for s in range(1, 33))
    for light in ("a2", "b1", "h1", "a8"):
        assert RUSSIAN.square_named(light) == 0
    assert RUSSIAN.square_named("i1") == 0 and RUSSIAN.square_named("a9") == 0
    assert INTERNATIONAL.square_name(46) == "a1" and INTERNATIONAL.square_name(5) == "j10"


def test_start_position_white_at_the_bottom():
    start = Position.start(RUSSIAN)
    assert start.fen() == "W:W21-32:B1-12"
    assert start.fen("alphanumeric") == (
        "W:Wa3,c3,e3,g3,b2,d2,f2,h2,a1,c1,e1,g1:Bb8,d8,f8,h8,a7,c7,e7,g7,b6,d6,f6,h6"
    )
    texts = sorted(move_text(start, m) for m in legal_moves(start))
    assert texts == ["a3-b4", "c3-b4", "c3-d4", "e3-d4", "e3-f4", "g3-f4", "g3-h4"]


def test_fen_forms_of_lidraughts_and_pydraughts():
    start = Position.start(RUSSIAN)
    lidraughts = "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12:H0:F1"
    pydraughts = "W:Wa1,c3,e3,g3,c1,e1,g1,b2,d2,f2,h2,a3:Bb6,d6,f6,h6,a7,c7,e7,g7,b8,d8,f8,h8"
    assert Position.from_fen(lidraughts, RUSSIAN) == start
    assert Position.from_fen(pydraughts, RUSSIAN) == start
    kings = Position.from_fen("B:WKa1,c3:BKh8", BRAZILIAN)
    assert (kings.white_kings, kings.white_men, kings.black_kings) == (1 << 28, 1 << 21, 1 << 3)
    assert Position.from_fen(kings.fen("alphanumeric"), BRAZILIAN) == kings
    assert kings.fen("alphanumeric") == "B:Wc3,Ka1:BKh8"


@pytest.mark.parametrize(
    ("fen", "message"),
    [
        ("W:Wa2:B1", "'a2' is not a dark square of the russian board"),
        ("W:Wa1-c3:B1", "a range is written with square numbers"),
        ("W:Wz9:B1", "expected a square number or name, got 'z9'"),
    ],
)
def test_fen_errors(fen, message):
    with pytest.raises(FenError, match=message):
        Position.from_fen(fen, RUSSIAN)


def test_parse_moves_both_notations():
    start = Position.start(RUSSIAN)
    for text in ("c3-d4", "C3-D4", "22-18", "c3 - d4"):
        assert parse_move(start, text) == parse_move(start, "22-18")
    pos = Position.from_fen("W:W10:B7,8", RUSSIAN)
    (move,) = legal_moves(pos)
    for text in ("d6:h6", "d6xh6", "d6:f8:h6", "10x12", "10x3x12", "10:12"):
        assert parse_move(pos, text) == move
    assert parse_squares("c3:e5:g3", RUSSIAN) == ([22, 15, 24], True)
    assert parse_squares("c3-d4", BRAZILIAN) == ([22, 18], False)


def test_parse_move_errors():
    start = Position.start(RUSSIAN)
    with pytest.raises(MoveError, match="not legal"):
        parse_move(start, "c3-e5")
    with pytest.raises(MoveError, match="'a2' is not a dark square"):
        parse_move(start, "a2-b3")
    with pytest.raises(MoveError, match="need a variant"):
        parse_squares("c3-d4")


def test_move_text_both_notations_and_full_path_when_ambiguous():
    pos = Position.from_fen("W:W10:B7,8", RUSSIAN)
    (move,) = legal_moves(pos)
    assert move_text(pos, move) == "d6:h6"
    assert move_text(pos, move, notation="numeric") == "10x12"
    intl = Position.from_fen("W:W31:B27", INTERNATIONAL)
    (step,) = legal_moves(intl)
    assert move_text(intl, step, notation="alphanumeric") == "b4:d6"
    # two captures e3 -> c1 taking different pieces are written with their paths
    twins = Position.from_fen("W:WK23:B10,11,13,18,26", RUSSIAN)
    moves = legal_moves(twins)
    texts = [move_text(twins, m, moves) for m in moves]
    assert sorted(texts) == ["e3:c1", "e3:c5:e7:g5:c1"]
    assert all(parse_move(twins, t) == m for t, m in zip(texts, moves, strict=True))
    assert parse_move(twins, "23x14x7x16x30").captures == (10, 11, 18, 26)
    assert parse_move(twins, "e3xc1").captures == (26,)  # the straight jump names itself
    loops = Position.from_fen("W:WK1:B4,10,17,18,27", RUSSIAN)
    moves = legal_moves(loops)
    assert sorted(move_text(loops, m, moves) for m in moves) == ["b8:e5:c3:a5", "b8:g3:e1:a5"]
    with pytest.raises(MoveError, match="ambiguous"):
        parse_move(loops, "b8:a5")


# --- perft -----------------------------------------------------------------------------------

# No published perft for these variants was found. The figures were computed with py-draughts
# 1.10.1 (``draughts.boards.russian`` / ``draughts.boards.brazilian``, an independent Python
# implementation; its own push/legal_moves recursion, depth 1-9) and agree with pydraughts
# 0.6.7 where that was run (depth 1-6).
PY_DRAUGHTS_PERFT = {
    "russian": [7, 49, 302, 1469, 7482, 37986, 190146, 929899, 4570586],
    "brazilian": [7, 49, 302, 1469, 7473, 37628, 187302, 907830, 4431766],
}


def _perft_params():
    for name, counts in PY_DRAUGHTS_PERFT.items():
        for depth, count in enumerate(counts, start=1):  # depth 9 takes under a second
            yield pytest.param(name, depth, count, id=f"{name}-{depth}")


@pytest.mark.parametrize(("variant", "depth", "count"), list(_perft_params()))
def test_perft_from_start(variant, depth, count):
    assert perft(Position.start(variant), depth) == count


def test_perft_live_against_py_draughts():
    """Depth 5 recomputed by the peer in this run, for both variants (a second source beside
    the stored figures)."""
    for name in ("russian", "brazilian"):
        board_class = pytest.importorskip(f"draughts.boards.{name}").Board

        def count(board, depth):
            moves = list(board.legal_moves)
            if depth == 1:
                return len(moves)
            total = 0
            for m in moves:
                board.push(m)
                total += count(board, depth - 1)
                board.pop()
            return total

        assert count(board_class(), 5) == perft(Position.start(name), 5)


def test_pydraughts_opening_ballots_read():
    """Every opening position pydraughts ships for Russian and Brazilian (its algebraic FEN
    form) reads, has 10-12 pieces a side, a legal move, and writes back."""
    import json
    from importlib import resources

    ballots = pytest.importorskip("draughts.ballot_files", reason="pydraughts not installed")
    count = 0
    for name, variant in (
        ("russian.json", RUSSIAN),
        ("brazilian.json", BRAZILIAN),
        ("150russian_and_brazilian.json", RUSSIAN),
    ):
        data = json.loads(resources.files(ballots).joinpath(name).read_text())
        for fen in data["all"].values():
            pos = Position.from_fen(fen, variant)
            white = bin(pos.white_men | pos.white_kings).count("1")
            black = bin(pos.black_men | pos.black_kings).count("1")
            assert 10 <= white <= 12 and 10 <= black <= 12, fen
            assert Position.from_fen(pos.fen("alphanumeric"), variant) == pos
            assert legal_moves(pos)
            count += 1
    assert count > 150
