"""Matches as engine authors run them, with rules-free fake Hub engines that play from books
(fast: a fresh process per game costs a blink): games at once with the same results as one
at a time, tournaments and their crosstable, an SPRT that stops the match, the engines'
scores adjudicating, a match killed with ``kill -9`` and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from match_books import book_engine, entries, line_of

from adjudicator.cli import main
from adjudicator.drawrules import RuleOptions
from adjudicator.match import Match, Referee, TimeControl, parse_spec, play_match
from adjudicator.match.adjudication import parse_draw, parse_resign
from adjudicator.match.openings import load
from adjudicator.match.sprt import Sprt
from adjudicator.match.state import MatchState
from adjudicator.match.state import load as load_state
from adjudicator.pdn import read_games
from tablebase.rules import Position
from tablebase.rules.variants import INTERNATIONAL

# endgame openings whose lowest-move games end by the rules within a few plies
FENS = ["W:W46,47:B5,6", "W:W33,34:B18", "W:W31,32:B19,20", "B:W31,32:B19,20",
        "W:W27,28,29:B12,13,14"]  # fmt: skip


def lines() -> dict[str, list]:
    return {fen: line_of(Position.from_fen(fen, INTERNATIONAL)) for fen in FENS}


def books(tmp_path: Path, weak_in: tuple[int, ...] = (), **kw) -> tuple[str, str]:
    """Two book engines: Strong knows every game; Weak knows them except in the openings
    ``weak_in``, where it resigns at its first turn."""
    strong, weak = {}, {}
    for i, (fen, moves) in enumerate(lines().items()):
        start = Position.from_fen(fen, INTERNATIONAL)
        strong.update(entries(start, moves))
        if i not in weak_in:
            weak.update(entries(start, moves))
    return (
        book_engine(tmp_path / "strong.json", strong, "Strong", **kw),
        book_engine(tmp_path / "weak.json", weak, "Weak", **kw),
    )


def openings_file(tmp_path: Path) -> Path:
    path = tmp_path / "openings.txt"
    path.write_text("\n".join(FENS) + "\n")
    return path


def a_match(tmp_path, specs, games=10, concurrency=1, sprt=None, tournament="match", **ref):
    openings = load(str(openings_file(tmp_path)), INTERNATIONAL)
    referee = Referee(TimeControl(minutes=1), RuleOptions(), None, "rules", **ref)
    return Match(
        tuple(parse_spec(s) for s in specs), games, openings, referee, INTERNATIONAL,
        tournament=tournament, concurrency=concurrency, sprt=sprt,
    )  # fmt: skip


def test_games_at_once_give_the_same_games_as_one_at_a_time(tmp_path):
    specs = books(tmp_path, weak_in=(1, 3))
    one, three = tmp_path / "one.pdn", tmp_path / "three.pdn"
    first = play_match(a_match(tmp_path, specs, concurrency=1), str(one))
    again = play_match(a_match(tmp_path, specs, concurrency=3), str(three))
    assert one.read_text() == three.read_text()  # every game, in game order, the same
    games = list(read_games(str(one)))
    assert [g.tags["Round"] for g in games] == [str(k) for k in range(1, 11)]
    # openings 1 and 3 (games 3-4 and 7-8): Weak resigns at once, Strong wins both colours
    reasons = [g.tags["Termination"] for g in games]
    assert reasons[2:4] == ["resignation"] * 2 and reasons[6:8] == ["resignation"] * 2
    assert "resignation" not in reasons[:2] + reasons[4:6] + reasons[8:]
    assert first.score() == again.score()
    assert first.score().wins >= 4
    # pairs: openings 1 and 3 are two wins for Strong; the others two games the same
    # engines played with colours swapped along the same line: one win each or two draws
    assert first.pairs()[4] == 2 and sum(first.pairs()) == 5


def test_games_at_once_run_side_by_side(tmp_path):
    """With a delay per move, three games at once overlap in time: each game's span (from
    its end, back by its wall time) meets another's. (An order of events, not a speed.)"""
    specs = books(tmp_path, delay=0.2)
    spans = []

    def seen(record, outcome):
        end = time.monotonic()
        spans.append((end - record.wall, end))

    outcome = play_match(a_match(tmp_path, specs, games=6, concurrency=3), on_game=seen)
    assert sorted(r.game for r in outcome.played) == [1, 2, 3, 4, 5, 6]
    spans.sort()
    # (0.5 s: more than the moment between a game's end and its report, one at a time)
    assert any(
        later[0] < earlier[1] - 0.5 for earlier, later in zip(spans, spans[1:], strict=False)
    )


def test_a_round_robin_of_three_engines_and_its_crosstable(tmp_path):
    strong, weak = books(tmp_path, weak_in=(0, 1, 2, 3, 4))
    blank = book_engine(tmp_path / "blank.json", {}, "Blank")
    outcome = play_match(a_match(tmp_path, (strong, weak, blank), games=2, tournament="roundrobin"))
    table = outcome.table
    # every engine resigns where its book ends; Weak's and Blank's books are empty, so the
    # side to move first resigns: Strong wins its 4 games; Weak-Blank one each
    assert len(outcome.played) == 6
    assert table.points(0) == (4.0, 4)
    assert table.points(1) == (1.0, 4)
    assert table.points(2) == (1.0, 4)
    rows = [line.split() for line in table.text().splitlines()]
    assert rows[1] == ["engine", "points", "games", "1", "2", "3"]
    assert rows[2] == ["1", "Strong", "4", "4", "-", "2/2", "2/2"]
    assert rows[3] == ["2", "Weak", "1", "4", "0/2", "-", "1/2"]
    assert rows[4] == ["3", "Blank", "1", "4", "0/2", "1/2", "-"]
    assert table.pair(1, 2).wins == 1 and table.pair(1, 2).losses == 1


def test_a_gauntlet_plays_the_first_engine_against_each_other(tmp_path):
    specs = books(tmp_path)
    blank = book_engine(tmp_path / "blank.json", {}, "Blank")
    outcome = play_match(a_match(tmp_path, (*specs, blank), games=2, tournament="gauntlet"))
    pairs = {(p.white, p.black) for p in outcome.schedule}
    assert pairs == {(0, 1), (1, 0), (0, 2), (2, 0)}


def test_the_sprt_stops_the_match_when_a_bound_is_crossed(tmp_path):
    specs = books(tmp_path, weak_in=(0, 1, 2, 3, 4))
    notes = []
    outcome = play_match(
        a_match(tmp_path, specs, games=200, sprt=Sprt(0, 200, 0.05, 0.05)),
        on_note=notes.append,
    )
    assert outcome.decision == "H1"
    assert len(outcome.played) < 200
    assert len(notes) == len(outcome.played) // 2  # a report after every pair
    assert notes[-1].endswith("H1 accepted")
    assert all(n.endswith("continue") for n in notes[:-1])
    assert "(-2.944, 2.944)" in notes[-1]
    assert outcome.pairs() == [0, 0, 0, 0, len(notes)]


def test_scores_adjudicate_a_resignation_and_a_draw(tmp_path):
    fen = "W:W46,47:B5,6"
    start = Position.from_fen(fen, INTERNATIONAL)
    moves = line_of(start)
    # white (ply 0, 2, 4, ...) reports -600 hundredths, black +600: white resigns after
    # its third move with --resign movecount=3 score=500
    book = entries(start, moves, score=lambda ply: -6.0 if ply % 2 == 0 else 6.0)
    spec = book_engine(tmp_path / "b.json", book, "Scored")
    (tmp_path / "openings.txt").write_text(fen + "\n")
    openings = load(str(tmp_path / "openings.txt"), INTERNATIONAL)
    referee = Referee(
        TimeControl(minutes=1), RuleOptions(), None, "rules",
        resign=parse_resign("movecount=3 score=500"),
    )  # fmt: skip
    match = Match((parse_spec(spec), parse_spec(spec)), 1, openings, referee, INTERNATIONAL)
    record = play_match(match).played[0]
    assert (record.reason, record.white_score, record.plies) == ("resign-adjudication", 0, 5)
    # scores within 10 hundredths for 2 moves each from move 1: a draw after 4 plies
    book = entries(start, moves, score=lambda ply: 0.05)
    spec = book_engine(tmp_path / "d.json", book, "Even")
    referee = Referee(
        TimeControl(minutes=1), RuleOptions(), None, "rules",
        draw=parse_draw("movenumber=1 movecount=2 score=10"),
    )  # fmt: skip
    match = Match((parse_spec(spec), parse_spec(spec)), 1, openings, referee, INTERNATIONAL)
    record = play_match(match).played[0]
    assert (record.reason, record.white_score, record.plies) == ("draw-adjudication", 1, 4)


def test_the_state_is_saved_after_every_game_and_a_resumed_match_plays_the_rest(tmp_path):
    specs = books(tmp_path, weak_in=(2,))
    path = tmp_path / "state.json"
    state = MatchState(str(path))
    play_match(a_match(tmp_path, specs, games=4), state=state)
    saved = load_state(str(path))
    assert sorted(saved.games) == [1, 2, 3, 4] and saved.order == [0, 1, 2, 3, 4]
    # a state with games 1 and 3 done: only 2, 4, 5, 6 are played
    for k in (2, 4):
        del saved.games[k]
    pdn = tmp_path / "out.pdn"
    outcome = play_match(a_match(tmp_path, specs, games=6), str(pdn), state=saved)
    assert sorted(r.game for r in outcome.played) == [2, 4, 5, 6]
    assert [g.tags["Round"] for g in read_games(str(pdn))] == ["1", "2", "3", "4", "5", "6"]


def _match_args(specs, openings, pdn, state, games):
    return [
        sys.executable, "-m", "adjudicator.cli", "match", "--engine", specs[0],
        "--engine", specs[1], "--openings", str(openings), "--games", str(games),
        "--time", "1", "--pdn", str(pdn), "--resume", str(state), "--concurrency", "2",
    ]  # fmt: skip


@pytest.mark.slow  # two match processes started (each loads the project)
def test_a_match_killed_with_kill_9_mid_game_resumes_with_every_game_once(tmp_path):
    specs = books(tmp_path, weak_in=(1, 4), delay=0.05)
    openings = openings_file(tmp_path)
    pdn, state = tmp_path / "killed.pdn", tmp_path / "state.json"
    proc = subprocess.Popen(
        _match_args(specs, openings, pdn, state, 10),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if state.exists() and len(json.loads(state.read_text())["games"]) >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read()
    os.kill(proc.pid, signal.SIGKILL)  # mid-game: two games are being played at once
    proc.wait()
    done = set(json.loads(state.read_text())["games"])
    assert 3 <= len(done) < 10
    resumed = subprocess.run(
        [sys.executable, "-m", "adjudicator.cli", "match", "--resume", str(state)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {len(done)} games done" in resumed.stderr
    games = list(read_games(str(pdn)))
    assert [g.tags["Round"] for g in games] == [str(k) for k in range(1, 11)]
    assert not Path(str(pdn) + ".partial").exists()
    # the same games as a match never interrupted
    whole = tmp_path / "whole.pdn"
    play_match(a_match(tmp_path, specs, games=10), str(whole))
    assert pdn.read_text() == whole.read_text()


def test_resume_refuses_other_options_and_a_file_that_is_no_state(tmp_path):
    path = tmp_path / "state.json"
    MatchState(str(path), {"engines": []}).save()
    result = CliRunner().invoke(main, ["match", "--resume", str(path), "--games", "4"])
    assert result.exit_code == 2
    assert "holds the match's options: give --resume" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = CliRunner().invoke(main, ["match", "--resume", str(bad)])
    assert result.exit_code == 2 and "not a match state" in result.output


@pytest.mark.parametrize(
    ("sprt", "message"),
    [("elo0=0", "elo0= and elo1= are needed"), ("elo0=1 elo1=0", "elo0 must be below elo1")],
)
def test_bad_sprt_is_a_one_line_error(tmp_path, sprt, message):
    specs = books(tmp_path)
    result = CliRunner().invoke(
        main, ["match", "--engine", specs[0], "--engine", specs[1], "--sprt", sprt]
    )
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
