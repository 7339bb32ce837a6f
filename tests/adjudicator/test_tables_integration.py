"""Rulings with real generated tables (up to 3 pieces, both variants, built once per run).

Checks the premise of the search's shortcut (every win in a 5-move ending fits its 10-ply
count), the search against a plain minimax that trusts the tables only where a count
restarts, and whole games ruled from their final position.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from adj_helpers import walk
from conftest import session_database

import tablebase
from adjudicator import RuleOptions, rule_game
from adjudicator.drawrules import Count, ending
from adjudicator.tablesearch import Search
from tablebase.rules import legal_moves, play
from tablebase.rules.position import Position
from tablebase.rules.variants import get_variant


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    return {v: str(session_database(tmp_path_factory, v, 3)) for v in ("international", "english")}


def _stats(db: str, variant: str) -> dict[str, dict]:
    cmd = [sys.executable, "-m", "tablebase.cli", "stats", "-v", variant, "--db", db, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return {row["material"]: row for row in map(json.loads, out.splitlines())}


def test_five_move_wins_fit_the_count(dbs):
    stats = _stats(dbs["international"], "international")
    five = [m for m in stats if ending(_material_position(m)) == "5-move"]
    assert {"0101", "0201", "1101", "0102", "0111"} <= set(five)
    assert max(stats[m]["longest_win"] for m in five) <= 9


def _material_position(code: str) -> Position:
    wm, wk, bm, bk = map(int, code)
    squares = iter(range(11, 41))
    boards = [sum(1 << (next(squares) - 1) for _ in range(n)) for n in (wm, wk, bm, bk)]
    return Position(*boards, True)


def _naive(tb, counter, pos, count, winner_white) -> bool:
    """Plain minimax over the game until a count restarts; there the tables decide."""
    moves = legal_moves(pos)
    if not moves:
        return pos.white_to_move != winner_white
    results = []
    for m in moves:
        after = play(pos, m)
        new = counter.after(count, pos, m, after)
        if not legal_moves(after):
            ok = after.white_to_move != winner_white
        elif new.expired:
            ok = False
        elif new.remaining > count.remaining - 1:
            wdl = tb.probe_wdl(after)
            ok = wdl != 0 and (wdl > 0) == (after.white_to_move == winner_white)
        else:
            ok = _naive(tb, counter, after, new, winner_white)
        results.append(ok)
    return any(results) if pos.white_to_move == winner_white else all(results)


MATERIALS = {
    "international": [(0, 2, 0, 1), (1, 1, 0, 1), (0, 1, 0, 1), (0, 2, 1, 0), (1, 1, 1, 0)],
    "english": [(0, 2, 0, 1), (1, 1, 0, 1), (0, 1, 0, 1), (0, 2, 1, 0)],
}


@pytest.mark.parametrize("variant", ["international", "english"])
def test_search_agrees_with_plain_minimax(dbs, variant):
    v = get_variant(variant)
    rnd = random.Random(7)
    checked = wins_short_of_dtw = 0
    with tablebase.open(dbs[variant]) as tb:
        while checked < 120:
            pos = _random_position(rnd, v, rnd.choice(MATERIALS[variant]))
            if pos is None or not legal_moves(pos):
                continue
            wdl, dtw = tb.probe_wdl(pos), tb.probe_dtw(pos)
            if wdl == 0:
                continue
            for r in range(1, min(dtw + 2, 6)):
                for disputed in ("restart", "cumulative"):
                    counter = RuleOptions(disputed=disputed).counter(v)
                    start = counter.start(pos)
                    count = Count(start.rule, start.limit, start.limit - r, start.index)
                    winner_white = (wdl > 0) == pos.white_to_move
                    expected = _naive(tb, counter, pos, count, winner_white)
                    assert Search(tb, counter).forced(pos, count) == expected, (pos.fen(), r)
                    checked += 1
                    wins_short_of_dtw += expected and r < dtw
    assert wins_short_of_dtw > 0  # some wins are forced only through a restart


def _random_position(rnd, v, material) -> Position | None:
    wm, wk, bm, bk = material
    squares = rnd.sample(range(1, v.squares + 1), wm + wk + bm + bk)
    groups, i = [], 0
    for n in material:
        groups.append(squares[i : i + n])
        i += n
    if any(s <= v.per_row for s in groups[0]) or any(s > v.squares - v.per_row for s in groups[2]):
        return None
    boards = [sum(1 << (s - 1) for s in g) for g in groups]
    return Position(*boards, rnd.random() < 0.5, v)


def test_game_ruled_from_its_final_position(dbs):
    fen = "W:WK1,K2:BK45"  # the longest win with two kings against one: 7 plies
    with tablebase.open(dbs["international"]) as tb:
        assert (tb.probe_wdl(Position.from_fen(fen)), tb.probe_dtw(Position.from_fen(fen))) == (
            1,
            7,
        )
        r = rule_game([], fen=fen, tablebase=tb)
        assert (r.result, r.reason, r.ply) == ("2-0", "tablebase", 0)
        pos, moves = Position.from_fen(fen), []
        for _ in range(4):  # best play: the win comes 4 plies nearer, the count runs 4 plies
            best = tb.best_moves(pos)[0]
            moves.append(best.text)
            pos = play(pos, best.move)
        r = rule_game(moves, fen=fen, tablebase=tb)
        assert (r.result, r.reason, r.ply) == ("2-0", "tablebase", 4)
        assert (
            r.detail
            == "white's theoretical win in 3 plies; 6 plies remain on the 5-move count: white wins"
        )
        r = rule_game(
            walk(Position.from_fen("W:WK47,K48:BK3"), 6), fen="W:WK47,K48:BK3", tablebase=tb
        )
        assert (r.result, r.reason) == ("1-1", "tablebase")


def test_english_game_ruled_from_blacks_side(dbs):
    fen = "B:WK29,K32:BK1"  # black to move loses in 30 plies
    with tablebase.open(dbs["english"]) as tb:
        assert rule_game([], fen=fen, variant="english", tablebase=tb).result == "0-1"
        r = rule_game([], fen=fen, variant="english", tablebase=tb, options=RuleOptions(elapsed=60))
        assert r.result == "1/2-1/2"
        assert r.detail == (
            "white's theoretical win in 30 plies but only 20 plies remain on the 40-move count: "
            "draw"
        )
