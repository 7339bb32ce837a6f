"""``tablebase hub`` as a Hub engine, the referee against it and against Moby Dam, the DXP
messages against pydraughts' implementation, the command line, the score."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import session_database
from draughts import StandardBoard
from draughts.engines.dxp_communication.dxp_classes import DamExchange
from draughts.engines.hub import board_to_hub_position, parse_hub_line
from match_helpers import (
    MOBYDAM,
    MOBYDAM_MISSING,
    dxp_fake,
    dxp_initiator,
    free_port,
    hub_fake,
    mobydam,
    play,
)  # fmt: skip

import tablebase
from adjudicator.cli import main as adjudicator_main
from adjudicator.drawrules import DrawState
from adjudicator.match import TimeControl, dxp
from adjudicator.match.clock import Clock
from adjudicator.match.results import tally
from adjudicator.tablesearch import rule_position
from tablebase.rules import Position
from tablebase.rules import play as play_move
from tablebase.rules.notation import parse_move
from tablebase.rules.variants import INTERNATIONAL

needs_mobydam = pytest.mark.skipif(not MOBYDAM, reason=MOBYDAM_MISSING)
RULE_ENDS = {"no-pieces", "no-moves", "threefold", "25-move", "16-move", "5-move", "tablebase"}


@pytest.fixture(scope="module")
def db3(tmp_path_factory):
    with tablebase.open(session_database(tmp_path_factory, "international", 3)) as tb:
        yield tb


def tables_spec(tb) -> str:
    return f"hub:{sys.executable} -m tablebase.cli hub --db {tb.path}"


def hub_session(tb, lines: list[str]) -> list[tuple[str, dict]]:
    """Run ``tablebase hub`` over ``lines``; its answers read by pydraughts' Hub parser."""
    cmd = [sys.executable, "-m", "tablebase.cli", "hub", "--db", str(tb.path)]
    out = subprocess.run(
        cmd, input="\n".join(lines) + "\nquit\n", capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return [parse_hub_line(line) for line in out.stdout.splitlines()]


# ---- tablebase hub


def test_tablebase_hub_wins_by_the_shortest_line_with_scans_score(db3):
    fen = "W:WK30:B22"  # white wins in 5 plies
    assert db3.probe(fen) == (1, 5)
    pos = board_to_hub_position(StandardBoard.from_fen(fen))  # pydraughts' writing of it
    answers = hub_session(db3, ["hub", "init", f"pos pos={pos}", "level move-time=1", "go think"])
    commands = [c for c, _ in answers]
    assert commands[commands.index("wait") + 1] == "ready"
    assert answers[0] == ("id", {"name": "draughts-tablebase", "version": answers[0][1]["version"],
                                 "author": "draughts-tablebase"})  # fmt: skip
    info = dict(answers)["info"]
    assert info["score"] == "99.95"  # (10000 - 5) / 100
    move = dict(answers)["done"]["move"]
    after = play_move(Position.from_fen(fen), parse_move(Position.from_fen(fen), move))
    assert db3.probe(after) == (-1, 4)  # the reply loses in 4: the shortest win


def test_tablebase_hub_loses_by_the_longest_line(db3):
    fen = "B:WK30:B22"  # black to move loses in 6 plies
    assert db3.probe(fen) == (-1, 6)
    pos = board_to_hub_position(StandardBoard.from_fen(fen))
    answers = dict(hub_session(db3, ["hub", "init", f"pos pos={pos}", "go think"]))
    assert answers["info"]["score"] == "-99.94"
    p = Position.from_fen(fen)
    after = play_move(p, parse_move(p, answers["done"]["move"]))
    longest = max(db3.probe(play_move(p, m.move))[1] for m in db3.best_moves(p))
    assert db3.probe(after) == (1, longest) == (1, 5)


def test_tablebase_hub_says_when_the_position_is_outside_the_tables(db3):
    fen = "W:WK30,K40:B22,K5"  # four pieces, the database has three
    pos = board_to_hub_position(StandardBoard.from_fen(fen))
    answers = hub_session(db3, ["hub", "init", f"pos pos={pos}", "go think"])
    error = dict(answers)["error"]["message"]
    assert "outside the tables" in error and "not in the database" in error
    assert answers[-1] == ("done", {})  # no move


def test_tablebase_hub_refuses_a_variant_other_than_its_tables(db3):
    answers = hub_session(
        db3, ["hub", "set-param name=variant value=frisian", "set-param name=variant "
              "value=normal", "init"],
    )  # fmt: skip
    errors = [args["message"] for command, args in answers if command == "error"]
    assert errors == ["these tables are normal, not frisian"]  # normal is its own: no error
    params = [args for command, args in answers if command == "param"]
    assert params == [{"name": "variant", "value": "normal", "type": "enum", "values": "normal"}]
    assert answers[-1] == ("ready", {})


def test_tablebase_hub_follows_the_moves_given_with_the_position(db3):
    start = board_to_hub_position(StandardBoard.from_fen("W:WK30:B22"))
    answers = dict(hub_session(db3, ["hub", "init", f'pos pos={start} moves="30-24"', "go"]))
    # after 30-24 black to move: 22-27 or 22-28; it loses, by the longest line
    p = play_move(
        Position.from_fen("W:WK30:B22"), parse_move(Position.from_fen("W:WK30:B22"), "30-24")
    )
    wdl, dtw = db3.probe(p)
    assert wdl == -1
    assert answers["info"]["score"] == f"{-(10000 - dtw) / 100:.2f}"


def test_tablebase_hub_values_moves_under_the_count_of_the_moves_given(db3):
    # two kings against one: the 5-move rule, 10 plies. W:WK1,K2:BK45 is a table win in 7
    # plies; reached after 4 plies of that count, 6 remain: the win cannot be forced (no
    # capture restarts anything here but the last), so it is a draw under the count
    assert db3.probe("W:WK1,K2:BK45") == (1, 7)
    p0 = board_to_hub_position(StandardBoard.from_fen("W:WK6,K7:BK45"))
    p = board_to_hub_position(StandardBoard.from_fen("W:WK1,K2:BK45"))
    history = ["hub", "init", f'pos pos={p0} moves="6-1 45-50 7-2 50-45"', "go"]
    fresh = ["hub", "init", f"pos pos={p}", "go"]
    assert dict(hub_session(db3, history))["info"]["score"] == "0.00"
    assert dict(hub_session(db3, fresh))["info"]["score"] == "99.93"


def test_the_referee_plays_the_tables_against_an_engine(tmp_path, db3):
    records, score, _, rulings = play(
        tmp_path, (tables_spec(db3), hub_fake("Fake")), ["W:WK30:B22"], tables=db3,
        adjudicate="rules",
    )  # fmt: skip
    first = records[0]
    assert first.white == "draughts-tablebase"
    assert first.result(INTERNATIONAL) == "2-0" and first.plies == 5  # the win in 5 plies
    assert first.reason in {"no-pieces", "no-moves"}
    for record, ruling in zip(records, rulings, strict=True):
        assert ruling["result"] == record.result(INTERNATIONAL)
    assert score.losses == 0  # the tables' side lost no game (black in game 2 loses in theory)


def test_a_pdn_opening_is_played_first_and_kept_in_the_record(tmp_path):
    ballots = tmp_path / "ballot.pdn"
    ballots.write_text('[Event "b"]\n\n1. 32-28 18-23 2. 37-32 12-18 *\n')
    with dxp_fake("Dxp") as spec:
        records, _, games, rulings = play(
            tmp_path, (spec, hub_fake("Hub")), openings_file=ballots, max_plies=40
        )
    for record, game, ruling in zip(records, games, rulings, strict=True):
        assert record.opening.label == "32-28 18-23 37-32 12-18"
        texts = [m.text for m in game.moves]
        assert texts[:4] == ["32-28", "18-23", "37-32", "12-18"] and texts[4:6] != texts[:2]
        assert record.plies == len(texts) > 4
        assert "FEN" not in game.tags
        if record.reason == "unfinished":  # 40 plies: ruled from the final position
            assert ruling["reason"] == "unfinished" and ruling["ply"] == 40
        else:
            assert (ruling["result"], ruling["reason"], ruling["ply"]) == (
                record.result(INTERNATIONAL), record.reason, record.plies)  # fmt: skip


def test_the_tables_end_a_game_with_the_value_under_the_count(tmp_path, db3):
    # W:WK1,K2:BK45 is a table win in 7 plies, reached after 4 plies of the 5-move count:
    # the referee rules it a draw at once, as `adjudicator rule --db` does
    opening = tmp_path / "opening.pdn"
    opening.write_text('[FEN "W:WK6,K7:BK45"]\n\n1. 6-1 45-50 2. 7-2 50-45 *\n')
    records, _, _, rulings = play(
        tmp_path, (hub_fake("One"), hub_fake("Two")), openings_file=opening, tables=db3,
        adjudicate="tables",
    )  # fmt: skip
    for record, ruling in zip(records, rulings, strict=True):
        result = record.result(INTERNATIONAL)
        assert (result, record.reason, record.plies) == ("1-1", "tablebase", 4)
        assert "theoretical win in 7 plies but only 6 plies remain" in record.detail
        assert (ruling["result"], ruling["reason"], ruling["ply"]) == ("1-1", "tablebase", 4)


def test_an_engine_connecting_to_the_referee_gets_the_scheduled_games(tmp_path):
    port = free_port()
    # it asks for black first: refused (colour), with a CHAT; then it asks for white
    with dxp_initiator(port, "WB", wrong_first=True):
        records, _, games, rulings = play(tmp_path, (f"dxp-listen:{port}", hub_fake("Hub")))
    names = [(r.white, r.black) for r in records]  # pydraughts names its GAMEREQ "DXP Client"
    assert names == [("DXP Client", "Hub"), ("Hub", "DXP Client")]
    for record, ruling in zip(records, rulings, strict=True):
        assert record.reason in RULE_ENDS | {"unfinished"}
        assert ruling["ply"] == record.plies


# ---- DXP messages, read and written by pydraughts too


def test_dxp_messages_agree_with_pydraughts():
    theirs = DamExchange()
    req = theirs.parse(dxp.gamereq("Moby Dam", True, 5, 75, None))
    assert (req["type"], req["name"], req["fColor"], req["gameTime"], req["numMoves"]) == (
        "R", "Moby Dam", "W", "005", "075")  # fmt: skip
    pos = Position.from_fen("B:W31,K45:B5,K17")
    req = theirs.parse(dxp.gamereq("x", False, 1, 0, pos))
    assert (req["posInd"], req["mColor"], req["pos"][30], req["pos"][44]) == ("B", "Z", "w", "W")
    assert (req["pos"][4], req["pos"][16], req["pos"].count("e")) == ("z", "Z", 46)
    assert dxp.parse(theirs.msg_move([32, 21], [27, 26][:1], 12)) == dxp.DxpMove(12, 32, 21, (27,))
    move = theirs.parse(dxp.move(26, 8, (12, 21, 31)))
    assert (move["from"], move["to"], move["captures"]) == ("26", "08", ["12", "21", "31"])
    assert dxp.parse(theirs.msg_gameend("2")) == dxp.GameEnd("draw", True)
    assert dxp.parse(dxp.gamereq("n", True, 2, 50, pos)).position == pos


@pytest.mark.parametrize(
    "text", ["Q123", "M00013228", "M00013228012", "E5", "A" + "x" * 10, "R01short"]
)
def test_malformed_dxp_messages_are_named(text):
    with pytest.raises(dxp.MalformedMessage):
        dxp.parse(text)


# ---- clock and score


def test_the_clock_gives_the_time_again_after_each_period():
    clock = Clock(TimeControl(minutes=1, moves=2, grace=0.5))
    assert clock.level() == "level moves=2 time=60.000"
    assert clock.spend(50) and clock.left == 10
    assert clock.spend(10.4) and clock.left == pytest.approx(59.6)  # -0.4, then +60
    assert not clock.spend(60.2)  # 0.6 s past, beyond the 0.5 s grace
    per_move = Clock(TimeControl(move_time=0.3, grace=0.2))
    assert per_move.level() == "level move-time=0.3"
    assert per_move.spend(0.49) and not per_move.spend(0.51)


def test_the_elo_difference_and_its_interval():
    score = tally(("A", "B"), [2] * 6 + [1] * 2 + [0] * 2 + [None])
    assert (score.wins, score.draws, score.losses, score.unfinished) == (6, 2, 2, 1)
    elo, low, high = score.elo()
    # s = 0.7; per-game sd 0.4, standard error 0.4 / sqrt(10); s +- 1.96 se = 0.452, 0.948
    assert elo == pytest.approx(147.2, abs=0.1)
    assert low == pytest.approx(-33.4, abs=0.3) and high == pytest.approx(503.6, abs=1)
    assert "Elo difference (A - B): +147, 95 % interval [-33, +504]" in score.summary()


# ---- the command line


def test_the_match_command_writes_json_pdn_and_the_score(tmp_path):
    openings = tmp_path / "openings.txt"
    openings.write_text("W:W28,33,38,39:B13,18,19,23\n")
    pdn = tmp_path / "out.pdn"
    args = ["match", "--engine", hub_fake("One"), "--engine", hub_fake("Two"), "--openings",
            str(openings), "--pdn", str(pdn), "--json", "--time", "1"]  # fmt: skip
    result = CliRunner().invoke(adjudicator_main, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["game"] for r in rows] == [1, 2]
    assert set(rows[0]) == {"game", "white", "black", "result", "reason", "plies", "opening",
                            "detail"}  # fmt: skip
    assert (rows[0]["white"], rows[1]["white"]) == ("One", "Two")
    assert rows[0]["opening"] == "W:W28,33,38,39:B13,18,19,23"
    assert "score: One" in result.stderr and "Elo difference" in result.stderr
    assert pdn.read_text().count("[Event ") == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--engine", "tcp:1:2", "--engine", "hub:x"], "unknown kind 'tcp'"),
        (["--engine", "dxp:h:99999", "--engine", "hub:x"], "not a port number"),
        (["--engine", "hub:x"], "exactly two --engine"),
        (["--engine", "dxp:h:1", "--engine", "hub:x", "--move-time", "1"], "DXP has no time"),
        (["--engine", "hub:x", "--engine", "hub:y", "--adjudicate", "tables"], "needs a database"),
    ],
)
def test_unusable_match_options_are_one_line_errors(args, message):
    result = CliRunner().invoke(adjudicator_main, ["match", *args])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1


# ---- Moby Dam


@needs_mobydam
def test_mobydam_plays_a_refereed_game(tmp_path):
    with mobydam(tmp_path / "md") as spec:
        records, _, _, rulings = play(tmp_path, (spec, hub_fake("Fake")), games=1)
    first = records[0]
    assert first.white.startswith("Moby Dam")
    assert first.reason in RULE_ENDS and rulings[0]["result"] == first.result(INTERNATIONAL)


@needs_mobydam
@pytest.mark.slow
def test_mobydam_against_mobydam_ten_games_from_five_openings(tmp_path):
    ballots = ["32-28 18-23", "33-28 17-22", "34-29 19-23", "31-27 20-24", "35-30 16-21"]
    openings = tmp_path / "ballots.pdn"
    openings.write_text("".join(f'[Event "{i}"]\n\n1. {b} *\n\n' for i, b in enumerate(ballots)))
    pdn = tmp_path / "match.pdn"
    with mobydam(tmp_path / "a") as one, mobydam(tmp_path / "b") as two:
        args = ["match", "--engine", one, "--engine", two, "--openings", str(openings),
                "--games", "10", "--time", "1", "--pdn", str(pdn), "--json"]  # fmt: skip
        result = CliRunner().invoke(adjudicator_main, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 10
    assert all(r["result"] in ("2-0", "1-1", "0-2") and r["reason"] for r in rows)
    assert not any(r["reason"] in ("illegal-move", "malformed-message") for r in rows)
    assert [r["opening"] for r in rows[::2]] == ballots
    rulings = [r.to_dict() for r in tablebase_free_rulings(pdn)]
    assert not any(r["reason"] in ("illegal-move", "ambiguous-move") for r in rulings)
    for row, ruling in zip(rows, rulings, strict=True):
        if row["reason"] in RULE_ENDS:
            assert (ruling["result"], ruling["reason"], ruling["ply"]) == (
                row["result"], row["reason"], row["plies"])  # fmt: skip


def fresh_count(pos: Position):
    state = DrawState(pos)
    return state.count, state.counter


def tablebase_free_rulings(pdn):
    from adjudicator import rule_file

    return list(rule_file(str(pdn)))


@needs_mobydam
@pytest.mark.slow
def test_the_tables_never_lose_a_won_or_drawn_position_against_mobydam(tmp_path, db3):
    fens = ["W:WK30:B22", "W:WK1:BK50", "B:WK28:B12,K45", "W:W33:B2", "W:WK38:B4,18"]
    with mobydam(tmp_path / "md") as spec:
        records, _, _, rulings = play(
            tmp_path, (tables_spec(db3), spec), fens, games=10, tables=db3, adjudicate="rules"
        )
    for k, (record, ruling) in enumerate(zip(records, rulings, strict=True)):
        tables_white = k % 2 == 0
        start = Position.from_fen(fens[k // 2])
        white = rule_position(db3, start, *fresh_count(start)).white_score  # count-aware
        value = white if tables_white else 2 - white  # for the tables' side
        got = record.white_score if tables_white else 2 - record.white_score
        assert got >= value, (k, record.reason, record.detail)  # never below the value
        if record.reason in RULE_ENDS:
            assert ruling["result"] == record.result(INTERNATIONAL)
