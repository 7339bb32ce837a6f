"""Replay: precise errors for illegal and ambiguous moves, the order of terminal events, and
every game of the shared real-game files replaying legally."""

from __future__ import annotations

from adj_helpers import pdn, position
from conftest import data_file

from adjudicator.drawrules import RuleOptions
from adjudicator.pdn import read_games
from adjudicator.replay import replay, start_position, terminal
from tablebase.rules.variants import ENGLISH, INTERNATIONAL

AMBIGUOUS = "W:W33:B7-9,18,19,28,29"  # 33x11 goes round either side of the diamond


def one_game(text: str):
    (game,) = list(read_games(text.splitlines(keepends=True)))
    return game


def test_illegal_move_error_names_everything():
    game = one_game(pdn(["1.", "32-28", "19-23", "2.", "28-22"], Event="x"))
    r = replay(game, position("W:W31-50:B1-20"))
    e = r.error
    assert e is not None and e.kind == "illegal-move"
    assert (e.game, e.ply, e.number, e.colour, e.text) == (1, 3, 2, "white", "28-22")
    assert e.legal == ["28x19"]
    assert str(e) == ("game 1, move 2 (white) 28-22: not legal in this position (legal: 28x19)")
    assert r.ply == 2 and r.event is None


def test_black_move_error_and_numbering_from_fen():
    game = one_game(pdn(["1...", "17-22", "2.", "31-27", "22-28"], fen="B:W31-50:B1-20"))
    r = replay(game, start_position(INTERNATIONAL, game.fen))
    e = r.error
    assert (e.number, e.colour, e.text, e.legal) == (2, "black", "22-28", ["22x31"])


def test_ambiguous_capture():
    r = replay(["33x11"], position(AMBIGUOUS))
    e = r.error
    assert e.kind == "ambiguous-move"
    assert sorted(e.legal) == ["33x22x13x2x11", "33x24x13x2x11"]
    assert "ambiguous (matches: " in str(e)
    ok = replay(["33x24x13x2x11"], position(AMBIGUOUS))
    assert ok.error is None and ok.ply == 1


def test_malformed_move_text():
    r = replay(["32-28", "18-2x3"], position("W:W31-50:B1-20"))
    assert r.error.kind == "illegal-move" and r.error.ply == 2


def test_out_of_range_square():
    r = replay(["32-28", "18-55"], position("W:W31-50:B1-20"))
    assert "out of range" in str(r.error)


def test_replay_stops_at_first_event_or_goes_on():
    cycle = ["50-44", "1-6", "44-50", "6-1"]
    moves = cycle * 3
    r = replay(moves, position("W:WK46,K50:BK1,K5"))
    assert (r.event, r.ply) == ("threefold", 8)
    r = replay(moves, position("W:WK46,K50:BK1,K5"), stop=False)
    assert (r.event, r.ply) == ("threefold", 12)


def test_terminal():
    assert terminal(position("W:W:BK3")) == "no-pieces"
    assert terminal(position("B:WK44,50:B45")) == "no-moves"
    assert terminal(position("W:WK44:B45")) is None


def _replay_file(name: str, variant) -> tuple[int, int, list[str]]:
    path = data_file("pdn", name)
    games = plies = 0
    problems = []
    for game in read_games(path):
        r = replay(game, start_position(variant, game.fen), RuleOptions(), stop=False)
        games += 1
        plies += r.ply
        if r.error is not None:
            problems.append(str(r.error))
        elif r.ply != len(game.moves):
            problems.append(f"game {game.index}: replayed {r.ply} of {len(game.moves)}")
    return games, plies, problems


def test_wk2003_replays_legally():
    games, plies, problems = _replay_file("wk2003.pdn", INTERNATIONAL)
    assert problems == []
    assert games == 23 and plies > 2000


def test_oca_replays_legally_as_english():
    games, plies, problems = _replay_file("OCA_2.0.pdn", ENGLISH)
    assert problems == []
    assert games == 43 and plies > 2000
