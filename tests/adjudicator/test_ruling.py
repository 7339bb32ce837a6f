"""Rulings: the JSON object, results per variant, errors that leave the other games of a file
ruled, and tablebase rulings under the counts (with a dict-backed fake tablebase)."""

from __future__ import annotations

import io
import json

import pytest
from adj_helpers import FakeTablebase, pdn
from conftest import data_file

from adjudicator import RuleOptions, Ruling, rule_file, rule_game
from adjudicator.pdn import read_games
from adjudicator.ruling import white_score_of
from tablebase.rules.variants import ENGLISH, INTERNATIONAL

KEYS = [
    "game", "white", "black", "result", "reason", "ply", "recorded_result", "agrees", "detail",
    "variant", "warnings",
]  # fmt: skip
CYCLE = ["50-44", "1-6", "44-50", "6-1"]
KINGS = "W:WK46,K50:BK1,K5"


def rule_text(text: str, **kwargs) -> list[Ruling]:
    return list(rule_file(io.StringIO(text), **kwargs))


# --- the JSON object -----------------------------------------------------------------------


def test_json_object_exactly():
    text = pdn(CYCLE * 2, fen=KINGS, result="1-1", White="Anna", Black="Bob", GameType="20")
    (r,) = rule_text(text)
    d = r.to_dict()
    assert list(d) == KEYS
    assert d == {
        "game": 1,
        "white": "Anna",
        "black": "Bob",
        "result": "1-1",
        "reason": "threefold",
        "ply": 8,
        "recorded_result": "1-1",
        "agrees": True,
        "detail": d["detail"],
        "variant": "international",
        "warnings": [],
    }
    assert "third occurrence of W:WK46,K50:BK1,K5" in d["detail"]
    json.dumps(d)


@pytest.mark.parametrize(
    "token, variant, score",
    [
        ("2-0", INTERNATIONAL, 2),
        ("1-1", INTERNATIONAL, 1),
        ("1/2-1/2", INTERNATIONAL, 1),
        ("0-2", INTERNATIONAL, 0),
        ("1-0", INTERNATIONAL, 2),
        ("1-0", ENGLISH, 0),  # black, the first mover, won
        ("0-1", ENGLISH, 2),
        ("1/2-1/2", ENGLISH, 1),
        ("*", ENGLISH, None),
        (None, INTERNATIONAL, None),
    ],
)
def test_recorded_result_reading(token, variant, score):
    assert white_score_of(token, variant) == score


def test_draw_recorded_as_half_points_agrees_under_gametype_20():
    text = pdn(CYCLE * 2, fen=KINGS, result="1/2-1/2", GameType="20")
    (r,) = rule_text(text)
    assert (r.result, r.recorded_result, r.agrees) == ("1-1", "1/2-1/2", True)


def test_english_results_from_blacks_side():
    # White blocks black's lone king: white wins, written 0-1 in English.
    text = pdn(["12-8"], fen="W:WK12,11,15:BK4", result="0-1", GameType="21")
    (r,) = rule_text(text)
    assert (r.result, r.reason, r.agrees) == ("0-1", "no-moves", True)
    text = pdn(["1-5", "32-28", "5-1", "28-32"] * 2, fen="B:WK32:BK1", result="1-0")
    (r,) = rule_text(text, variant="english")
    assert (r.result, r.reason, r.agrees) == ("1/2-1/2", "threefold", False)


def test_no_pieces_ruling():
    (r,) = rule_text(pdn(["33x22"], fen="W:W33:B28", result="2-0"))
    assert (r.result, r.reason, r.ply, r.agrees) == ("2-0", "no-pieces", 1, True)
    assert r.detail.startswith("black to move has no pieces left: white wins")


def test_move_list_input():
    r = rule_game(CYCLE * 2, fen=KINGS)
    assert (r.game, r.reason, r.ply, r.recorded_result) == (1, "threefold", 8, None)
    with pytest.raises(TypeError):
        rule_game("50-44 1-6")  # type: ignore[arg-type]


def test_unfinished_without_tablebase():
    r = rule_game(["32-28", "18-23"])
    assert (r.result, r.reason, r.ply) == ("unknown", "unfinished", 2)


# --- errors: precise, and the rest of the file still ruled ---------------------------------

GOOD = pdn(CYCLE * 2, fen=KINGS, result="1-1", GameType="20")
ILLEGAL = pdn(["1.", "32-28", "19-23", "2.", "28-22"], result="2-0", White="W2")
AMBIGUOUS = pdn(["33x11"], fen="W:W33:B7-9,18,19,28,29", result="2-0")
BAD_TYPE = pdn(["32-28"], result="*", GameType="99")
BAD_FEN = pdn(["32-28"], fen="W:W31-55:B1-20", result="*")
NESTED = '[Event "n"]\n\n1. 33-29 19-23 2. 35-30 { nested { comment } } 2-0\n'
TRUNCATED = '[Event "t"]\n\n1. 32-28 19-23 2. 28x19 14x2'


def test_errors_are_precise_and_other_games_ruled():
    text = "\n".join([GOOD, ILLEGAL, AMBIGUOUS, BAD_TYPE, BAD_FEN, NESTED, GOOD, TRUNCATED])
    rulings = rule_text(text)
    assert [r.reason for r in rulings] == [
        "threefold",
        "illegal-move",
        "ambiguous-move",
        "bad-tag",
        "bad-tag",
        "pdn-error",
        "threefold",
        "illegal-move",
    ]
    assert [r.game for r in rulings] == list(range(1, 9))
    illegal = rulings[1]
    assert illegal.detail.startswith(
        "game 2, move 2 (white) 28-22: not legal in this position (legal: 28x19) "
        "(no GameType tag, and no variant replays the game: tried international, english"
    )
    assert (illegal.ply, illegal.result, illegal.white) == (3, "unknown", "W2")
    assert "ambiguous" in rulings[2].detail and "33x22x13x2x11" in rulings[2].detail
    assert "unsupported GameType '99'" in rulings[3].detail
    assert "square 55 out of range" in rulings[4].detail
    assert "<stream>:24:34: game 6: nested comment" in rulings[5].detail
    # the last game, cut short: read as `*` with a warning, then its cut move is illegal
    assert "14x2: not legal" in rulings[7].detail
    assert rulings[7].warnings == ["no result token at the end of the file (33:29): read as '*'"]
    assert all(r.is_error for r in rulings if r.reason != "threefold")


def test_variant_override_beats_gametype():
    (r,) = rule_text(BAD_TYPE, variant="international")
    assert r.reason == "unfinished"


def test_bad_nested_comment_file():
    (r,) = rule_file(data_file("pdn", "bad-nested-comment.pdn"))
    assert r.reason == "pdn-error"
    assert "bad-nested-comment.pdn:1:34: game 1: nested comment" in r.detail


def test_missing_file_raises_oserror():
    with pytest.raises(OSError):
        list(rule_file("/nonexistent/games.pdn"))


def test_wk2003_every_game_ruled_without_errors():
    rulings = list(rule_file(data_file("pdn", "wk2003.pdn")))
    assert len(rulings) == 23
    assert not [r.detail for r in rulings if r.is_error]


# --- tablebase rulings ---------------------------------------------------------------------

LONE_V_3K = "W:WK47,K48,K49:BK3"


def tb_rule(fen, entries, moves=(), variant="international", default=(0, None), **options):
    tb = FakeTablebase(entries, variant, default=default, missing="0301")
    return rule_game(
        list(moves), fen=fen, variant=variant, tablebase=tb, options=RuleOptions(**options)
    )


def test_table_win_within_count():
    r = tb_rule(LONE_V_3K, {LONE_V_3K: (1, 23)})
    assert (r.result, r.reason, r.ply) == ("2-0", "tablebase", 0)
    assert "32 plies remain on the 16-move count" in r.detail


def test_table_win_beyond_count_is_a_draw():
    r = tb_rule(LONE_V_3K, {LONE_V_3K: (1, 23)}, elapsed=20)
    assert (r.result, r.reason) == ("1-1", "tablebase")
    assert r.detail == (
        "white's theoretical win in 23 plies but only 12 plies remain on the 16-move count: draw"
    )


def test_count_from_the_game_itself():
    # 10 plies of the game already ran on the 16-move count: 22 remain.
    from adj_helpers import apply, position, walk

    moves = walk(position(LONE_V_3K), 10)
    final = apply(position(LONE_V_3K), moves).fen()
    assert tb_rule(LONE_V_3K, {final: (1, 23)}, moves).result == "1-1"
    r = tb_rule(LONE_V_3K, {final: (1, 21)}, moves)
    assert (r.result, r.ply) == ("2-0", 10)


def test_table_draw():
    r = tb_rule(LONE_V_3K, {LONE_V_3K: (0, None)})
    assert (r.result, r.reason) == ("1-1", "tablebase")


def test_table_loss_for_side_to_move():
    fen = "B:WK47,K48,K49:BK3"
    assert tb_rule(fen, {fen: (-1, 20)}).result == "2-0"
    r = tb_rule(fen, {fen: (-1, 20)}, elapsed=14)
    assert r.result == "1-1"
    assert "white's theoretical win in 20 plies but only 18 plies remain" in r.detail


def test_outside_tables_names_the_slice():
    r = tb_rule(LONE_V_3K, {}, default=None)
    assert (r.result, r.reason) == ("unknown", "outside-tables")
    assert "0301" in r.detail


def test_database_of_other_variant():
    tb = FakeTablebase({}, "international")
    r = rule_game([], fen="B:WK32:BK1", variant="english", tablebase=tb)
    assert (r.result, r.reason) == ("unknown", "outside-tables")


SACRIFICE = "W:WK25,K35,K41:BK3"  # 41-14 forces 3x20, then 25x3 takes the lone king
AFTER_SAC = "B:WK14,K25,K35:BK3"
AFTER_TAKE = "W:WK25,K35:BK20"


def test_sacrifice_into_won_5_move_ending_restarts_the_count():
    entries = {SACRIFICE: (1, 27), AFTER_SAC: (-1, 26), AFTER_TAKE: (1, 1)}
    r = tb_rule(SACRIFICE, entries, elapsed=30)
    assert (r.result, r.reason) == ("2-0", "tablebase")
    assert "2 plies remain on the 16-move count" in r.detail
    assert "restarts the count" in r.detail
    r = tb_rule(SACRIFICE, entries, elapsed=30, disputed="cumulative")
    assert r.result == "1-1"
    assert r.detail.endswith("only 2 plies remain on the 16-move count: draw")


def test_search_limit_gives_unknown():
    entries = {SACRIFICE: (1, 27), AFTER_SAC: (-1, 26), AFTER_TAKE: (1, 1)}
    r = tb_rule(SACRIFICE, entries, elapsed=30, search_nodes=0)
    assert (r.result, r.reason) == ("unknown", "search-limit")


def test_man_move_resets_25_move_count_in_search():
    fen = "W:WK46,K50,36:BK1,K5,15"
    after_man = "B:WK46,K50,31:BK1,K5,15"
    entries = {fen: (1, 9), after_man: (-1, 8)}
    r = tb_rule(fen, entries, elapsed=45)
    assert (r.result, r.reason) == ("2-0", "tablebase")
    assert "5 plies remain on the 25-move count" in r.detail
    # Without the man move's reset (no winning man move in the table) it is a draw.
    r = tb_rule(fen, {fen: (1, 9)}, elapsed=45)
    assert r.result == "1-1"


def test_capture_pending_position_is_ruled():
    fen = "W:W33:B7-9,18,19,28,29"
    r = tb_rule(fen, {fen: (1, 11)})
    assert (r.result, r.reason) == ("2-0", "tablebase")


def test_english_table_ruling_from_blacks_side():
    fen = "B:WK29,K32:BK1,K4"
    r = tb_rule(fen, {fen: (1, 7)}, variant="english")
    assert (r.result, r.reason) == ("1-0", "tablebase")
    r = tb_rule(fen, {fen: (1, 7)}, variant="english", elapsed=75)
    assert r.result == "1/2-1/2"


def test_rule_file_with_db_object():
    tb = FakeTablebase({LONE_V_3K: (1, 9)})
    text = pdn([], fen=LONE_V_3K, result="2-0")
    (r,) = rule_text(text, db=tb)
    assert (r.result, r.agrees) == ("2-0", True)


def test_rule_file_reads_games_lazily():
    games = read_games(io.StringIO(GOOD + "\n" + GOOD))
    assert sum(1 for _ in games) == 2
