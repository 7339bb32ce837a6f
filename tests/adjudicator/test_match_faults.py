"""Faults and claims in a match, each with a small fake engine: the game ends with the right
result and reason, the next game is played, and the PDN keeps every game."""

from __future__ import annotations

import pytest
from conftest import session_database
from match_helpers import dxp_fake, hub_fake, play

import tablebase
from adjudicator.match import TimeControl
from tablebase.rules.variants import INTERNATIONAL

ILLEGAL = "W:W32,37,45,46:B5,6,19,28,31"  # only 32x14 (two pieces) is legal; 37x26 takes one
START = "W:W28,33,38,39:B13,18,19,23"
RULE_ENDS = {"no-pieces", "no-moves", "threefold", "25-move", "16-move", "5-move", "tablebase"}


@pytest.fixture(scope="module")
def db3(tmp_path_factory):
    with tablebase.open(session_database(tmp_path_factory, "international", 3)) as tb:
        yield tb


def check_second_game_and_pdn(records, pdn_games, rulings) -> None:
    """Game 2 is played to an end the rules give, ruled alike by `adjudicator rule`; the PDN
    holds both games with their result, reason and every move."""
    second = records[1]
    assert second.reason in RULE_ENDS, (second.reason, second.detail)
    assert len(pdn_games) == 2
    for record, game in zip(records, pdn_games, strict=True):
        assert game.tags["Result"] == record.result(INTERNATIONAL)
        assert game.tags["Termination"] == record.reason
        assert game.tags["White"] == record.white and game.tags["Black"] == record.black
        assert len(game.moves) == record.plies
    assert rulings[1]["result"] == second.result(INTERNATIONAL)
    assert rulings[1]["reason"] == second.reason
    assert rulings[1]["ply"] == second.plies


def test_a_capture_of_fewer_pieces_than_the_majority_loses(tmp_path):
    engines = (hub_fake("Bad", "illegal:37x26@1.1", tmp_path / "fired"), hub_fake("Good"))
    records, score, games, rulings = play(tmp_path, engines, [ILLEGAL])
    first = records[0]
    assert (first.result(INTERNATIONAL), first.reason, first.plies) == (
        "0-2",
        "illegal-move",
        0,
    )
    assert "37x26" in first.detail and "legal: 32x14" in first.detail
    assert first.white == "Bad"
    check_second_game_and_pdn(records, games, rulings)
    assert score.losses >= 1  # "Bad" lost game 1


def test_an_engine_process_that_dies_loses_and_is_started_again(tmp_path):
    engines = (hub_fake("Good"), hub_fake("Dies", "die@1.2", tmp_path / "fired"))
    records, _, games, rulings = play(tmp_path, engines, [START])
    first = records[0]
    assert first.black == "Dies"
    assert (first.result(INTERNATIONAL), first.reason) == ("2-0", "engine-crashed")
    assert "exited with status 3" in first.detail
    assert first.plies == 3  # white, black, white; black's second turn never came
    check_second_game_and_pdn(records, games, rulings)


def test_a_stall_past_the_time_per_move_loses_on_time(tmp_path):
    engines = (hub_fake("Stalls", "stall@1.1", tmp_path / "fired"), hub_fake("Good"))
    control = TimeControl(move_time=1.0, grace=0.5)
    records, _, games, rulings = play(tmp_path, engines, [START], control=control)
    first = records[0]
    assert (first.result(INTERNATIONAL), first.reason, first.plies) == ("0-2", "time", 0)
    assert 1.5 <= first.wall < 10  # the time per move and the grace, then the process ended
    check_second_game_and_pdn(records, games, rulings)


def test_garbage_bytes_from_a_dxp_engine_lose(tmp_path):
    with dxp_fake("Garbage", "garbage@1.1") as spec:
        records, _, games, rulings = play(tmp_path, (spec, hub_fake("Good")), [START])
    first = records[0]
    assert (first.result(INTERNATIONAL), first.reason, first.plies) == (
        "0-2",
        "malformed-message",
        0,
    )
    assert "not ASCII" in first.detail
    check_second_game_and_pdn(records, games, rulings)


def test_a_dxp_engine_that_disconnects_loses_and_is_reconnected(tmp_path):
    with dxp_fake("Leaves", "disconnect@1.2") as spec:
        records, _, games, rulings = play(tmp_path, (hub_fake("Good"), spec), [START])
    first = records[0]
    assert (first.result(INTERNATIONAL), first.reason, first.plies) == (
        "2-0",
        "disconnected",
        3,
    )
    assert records[1].white == "Leaves"  # game 2 was played over a new connection
    check_second_game_and_pdn(records, games, rulings)


def test_a_false_win_claim_loses(tmp_path, db3):
    with dxp_fake("Claims", "claim-win@1.1") as spec:
        records, _, games, rulings = play(
            tmp_path, (spec, hub_fake("Good")), ["W:WK1:BK50"], tables=db3, adjudicate="rules"
        )
    first = records[0]
    assert (first.result(INTERNATIONAL), first.reason) == ("0-2", "false-claim")
    assert "claimed a win, not upheld" in first.detail and "draw" in first.detail
    check_second_game_and_pdn(records, games, rulings)
    assert rulings[0]["result"] == "1-1"  # what the tables say of the position claimed in


def test_a_false_draw_claim_loses(tmp_path, db3):
    with dxp_fake("Claims", "claim-draw@1.1") as spec:
        records, _, games, rulings = play(
            tmp_path, (hub_fake("Good"), spec), ["B:WK30:B22"], tables=db3, adjudicate="rules"
        )
    first = records[0]
    assert first.black == "Claims"
    assert (first.result(INTERNATIONAL), first.reason) == ("2-0", "false-claim")
    assert "claimed a draw, not upheld" in first.detail and "white wins" in first.detail
    check_second_game_and_pdn(records, games, rulings)


def test_a_draw_claim_the_tables_support_ends_the_game_drawn(tmp_path, db3):
    with dxp_fake("Claims", "claim-draw@1.1") as spec:
        records, _, _, _ = play(
            tmp_path, (spec, hub_fake("Good")), ["W:WK1:BK50"], tables=db3, adjudicate="rules"
        )
    first = records[0]
    assert (first.result(INTERNATIONAL), first.reason) == ("1-1", "claim")
    assert "upheld: the tables say draw" in first.detail


def test_an_ignored_false_claim_ends_the_game_with_the_tables_value(tmp_path, db3):
    with dxp_fake("Claims", "claim-win@1.1") as spec:
        records, _, _, _ = play(
            tmp_path,
            (hub_fake("Good"), spec),
            ["W:WK30:B22"],
            tables=db3,
            adjudicate="rules",
            false_claims="ignore",
        )
    first = records[0]  # black claims a win in a position white wins
    assert first.black == "Claims"
    assert (first.result(INTERNATIONAL), first.reason) == ("2-0", "false-claim")
    assert "ignored" in first.detail


def test_a_hub_engine_answering_without_a_move_resigns(tmp_path):
    engines = (hub_fake("Good"), hub_fake("Resigns", "resign@1.1", tmp_path / "fired"))
    records, _, games, rulings = play(tmp_path, engines, [START])
    first = records[0]
    assert (first.result(INTERNATIONAL), first.reason, first.plies) == ("2-0", "resignation", 1)
    assert first.detail == "Resigns (black) resigned"
    check_second_game_and_pdn(records, games, rulings)


def test_without_adjudication_the_draw_rules_end_no_game(tmp_path):
    # one king each: the 5-move rule fires after 10 plies; with --adjudicate off the fakes
    # play on to the ply limit, and the record still rules as that draw
    engines = (hub_fake("One"), hub_fake("Two"))
    records, _, _, rulings = play(
        tmp_path, engines, ["W:WK50:BK1"], games=1, adjudicate="off", max_plies=30
    )
    assert (records[0].result(INTERNATIONAL), records[0].reason, records[0].plies) == (
        "*", "unfinished", 30)  # fmt: skip
    assert rulings[0]["result"] == "1-1" and rulings[0]["reason"] in ("5-move", "threefold")
    assert rulings[0]["ply"] <= 10
    (tmp_path / "rules").mkdir()
    ruled = play(tmp_path / "rules", engines, ["W:WK50:BK1"], games=1, max_plies=30)
    record, ruling = ruled[0][0], ruled[3][0]
    assert (record.result(INTERNATIONAL), record.reason, record.plies) == (
        "1-1", ruling["reason"], ruling["ply"])  # fmt: skip
