"""Values under the count with real tables: the 16-move ending of three kings against a lone
king (slice 0301 and what it needs, built once per run), where a theoretical win can be too
slow for the count, or rescued by a sacrifice that restarts it. Also the search's shortcut
and threefold repetition, the request time budget, probes beside busy rulings, a damaged
table file, and ``--db`` as a folder of variant folders."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

import tablebase
from adjudicator import RuleOptions, rule_game
from adjudicator.cli import main as adjudicator_cli
from adjudicator.service.app import ServiceSettings, create_app
from adjudicator.tablesearch import rule_position
from tablebase.rules import legal_moves, play
from tablebase.rules.countsearch import Search, position_key, under_count
from tablebase.rules.drawrules import Counter
from tablebase.rules.position import Position
from tablebase.rules.variants import INTERNATIONAL

# Three white kings against the lone black king: a win in 15 plies (the slice's longest).
# 11-2 offers a king: the black king must take it, and the fresh 5-move count of the two
# kings against one (wins in at most 7 plies) replaces the running 16-move count.
SLOW = "W:WK1,K11,K18:BK35"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    root = tmp_path_factory.mktemp("under-count") / "international"
    cmd = [sys.executable, "-m", "tablebase.cli", "generate", "-v", "international"]
    proc = subprocess.run(
        [*cmd, "-m", "0301", "--db", str(root), "-j", "1"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.fail(f"tablebase generate failed: {proc.stderr[-2000:]}")
    return root


def probe_cli(db, fen, *extra):
    cmd = [sys.executable, "-m", "tablebase.cli", "probe", "--db", str(db), "--json", "--moves"]
    proc = subprocess.run([*cmd, *extra, fen], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_probe_without_elapsed_has_no_count_fields(db):
    out = probe_cli(db, SLOW)
    assert (out["result"], out["dtw"]) == ("win", 15)
    assert "result_under_count" not in out and "result_under_count" not in out["moves"][0]


def test_theoretical_win_too_slow_for_the_16_move_count(db):
    # 31 plies in, one is left: only a win in one ply would do, and there is none.
    out = probe_cli(db, SLOW, "--elapsed", "31")
    assert (out["result"], out["result_under_count"]) == ("win", "draw")
    assert out["count"] == {"rule": "16-move", "limit": 32, "elapsed": 31}
    wins = [m for m in out["moves"] if m["result"] == "win"]
    assert wins and all(m["result_under_count"] == "draw" for m in wins)
    fresh = probe_cli(db, SLOW, "--elapsed", "0")
    assert fresh["result_under_count"] == "win"  # 15 plies fit a fresh count of 32


def test_a_sacrifice_restarts_the_count(db):
    # 18 plies in, 14 are left: fewer than the 15 the table's win needs, but 11-2 forces the
    # capture that starts a fresh 5-move count, and the two kings then win in time.
    out = probe_cli(db, SLOW, "--elapsed", "18")
    assert out["dtw"] == 15 and out["result_under_count"] == "win"
    assert [m["move"] for m in out["moves"] if m["result_under_count"] == "win"] == ["11-2"]
    # Read the other way (the capture keeps the running count), the sacrifice does not help.
    with tablebase.open(db) as tb:
        pos = Position.from_fen(SLOW, INTERNATIONAL)
        cumulative = Counter(INTERNATIONAL.draw_rules, disputed="cumulative")
        assert under_count(tb, pos, cumulative, 18)[1] == "draw"
        assert under_count(tb, pos, cumulative, 17)[1] == "win"  # 15 plies fit


def test_a_spent_deadline_gives_unknown_values(db):
    """The count search stops at its deadline (the service's per-request budget): the
    values it could not finish are "unknown", never a guess; drawn moves need no search."""
    import time

    with tablebase.open(db) as tb:
        pos = Position.from_fen(SLOW, INTERNATIONAL)
        counter = Counter(INTERNATIONAL.draw_rules)
        count, whole, per_move = under_count(
            tb, pos, counter, 18, shortcut=False, deadline=time.monotonic() - 1
        )
        assert whole == "unknown" and "unknown" in per_move
        assert "win" not in per_move  # only values the tables give without a search remain
        _, whole, per_move = under_count(tb, pos, counter, 18, shortcut=False)
        assert whole == "win" and "win" in per_move


def test_service_probe_with_elapsed(db):
    app = create_app({"international": db}, ServiceSettings())
    with TestClient(app) as client:
        body = client.get("/probe", params={"fen": SLOW, "elapsed": 31}).json()
        assert (body["result"], body["result_under_count"]) == ("win", "draw")
        assert body["count"] == {"rule": "16-move", "limit": 32, "elapsed": 31}
        fresh = client.get("/probe", params={"fen": SLOW}).json()  # counts start fresh
        assert fresh["result_under_count"] == "win" and fresh["count"]["elapsed"] == 0
        assert {m["move"]: m["result_under_count"] for m in fresh["moves"]}["11-2"] == "win"


# --- the search's shortcut and threefold repetition ----------------------------------------


def test_shortcut_is_not_trusted_through_positions_seen_twice(db):
    pos = Position.from_fen(SLOW, INTERNATIONAL)
    counter = Counter(INTERNATIONAL.draw_rules)
    count = counter.start(pos)  # 32 plies left, the win takes 15: the shortcut says win
    with tablebase.open(db) as tb:
        assert Search(tb, counter).forced(pos, count)
        # Every position white's moves lead to has been seen twice in the game: each move
        # repeats for the third time, so nothing wins, although the distance fits the count.
        banned = frozenset(position_key(play(pos, m)) for m in legal_moves(pos))
        search = Search(tb, counter, banned)
        assert not search.trusts(pos)
        assert not search.forced(pos, count)
        # The table's best move left free: the search finds the win through it.
        best = play(pos, tb.best_moves(pos)[0].move)
        free = banned - {position_key(best)}
        assert Search(tb, counter, free).forced(pos, count)


def test_shortcut_premise_checked_against_the_stored_longest_wins(db, tmp_path):
    from adjudicator.tablesearch import _shortcut_holds
    from tablebase.rules.countsearch import shortcut_holds

    rules = INTERNATIONAL.draw_rules
    assert shortcut_holds(rules, ["0301", "0201"], {"0301": 15, "0201": 7}.__getitem__)
    assert not shortcut_holds(rules, ["0301"], {"0301": 33}.__getitem__)  # over 32 plies
    assert not shortcut_holds(rules, ["0201"], {"0201": 11}.__getitem__)  # over 10 plies
    assert _shortcut_holds(str(db), ("0301", "0201", "0101"), rules)


# --- the request time budget ---------------------------------------------------------------


def test_search_past_its_deadline_rules_unknown_with_the_reason(db):
    pos = Position.from_fen(SLOW, INTERNATIONAL)
    counter = RuleOptions().counter(INTERNATIONAL)
    count = counter.start(pos, 18)  # needs the search (15 plies, 14 left)
    with tablebase.open(db) as tb:
        ok = rule_position(tb, pos, count, counter)
        assert (ok.white_score, ok.reason) == (2, "tablebase")
        late = rule_position(tb, pos, count, counter, deadline=time.monotonic() - 1)
    assert (late.white_score, late.reason) == (None, "time-limit")
    assert "time budget" in late.detail


def test_service_request_time_budget(db):
    games = "\n".join(f'[Event "{i}"]\n[FEN "{SLOW}"]\n\n*\n' for i in range(3))
    app = create_app({"international": db}, ServiceSettings(request_ms=0))
    with TestClient(app) as client:
        r = client.post(
            "/adjudicate?elapsed=18", content=games, headers={"content-type": "text/plain"}
        )
    assert r.status_code == 200, r.text
    rows = r.json()
    assert [row["reason"] for row in rows] == ["time-limit"] * 3
    assert all(row["result"] == "unknown" for row in rows)
    assert "time budget of 0 ms" in rows[0]["detail"]
    generous = create_app({"international": db}, ServiceSettings())
    with TestClient(generous) as client:
        r = client.post(
            "/adjudicate?elapsed=18", content=games, headers={"content-type": "text/plain"}
        )
    assert [row["result"] for row in r.json()] == ["2-0"] * 3


def test_probes_do_not_queue_behind_rulings(db):
    app = create_app({"international": db}, ServiceSettings(threads=1))
    with TestClient(app) as client:
        service = app.state.service
        # Every ruling slot taken (as by long rulings): a probe still answers at once.
        client.portal.call(service.limiter.acquire_on_behalf_of, "busy")
        answers = []
        asking = threading.Thread(
            target=lambda: answers.append(client.get("/probe", params={"fen": SLOW})),
            daemon=True,
        )
        try:
            asking.start()
            asking.join(10)
            assert answers, "the probe waited for a ruling slot"
            assert answers[0].status_code == 200 and answers[0].json()["result"] == "win"
        finally:
            client.portal.call(service.limiter.release_on_behalf_of, "busy")


# --- a damaged table file, --db as a folder of variant folders -------------------------------


def test_damaged_table_file_is_named_and_the_other_games_go_on(db, tmp_path):
    broken = tmp_path / "data" / "international"
    shutil.copytree(db, broken)
    (broken / "0301.h5").write_bytes(b"not an hdf5 file" * 64)
    games = tmp_path / "games.pdn"
    games.write_text(
        f'[GameType "20"]\n[FEN "{SLOW}"]\n\n*\n\n'
        '[GameType "20"]\n[FEN "W:WK46,K50:BK1,K5"]\n\n'
        "1. 50-44 1-6 2. 44-50 6-1 3. 50-44 1-6 4. 44-50 6-1 *\n"
    )
    out = CliRunner().invoke(adjudicator_cli, ["rule", "--json", "--db", str(broken), str(games)])
    assert "Traceback" not in out.output
    rows = [json.loads(line) for line in out.output.splitlines()]
    assert rows[0]["reason"] == "table-error" and "0301.h5" in rows[0]["detail"]
    assert rows[1]["reason"] == "threefold"
    # the parent folder (one subfolder per variant) means the same
    parent = CliRunner().invoke(
        adjudicator_cli, ["rule", "--json", "--db", str(broken.parent), str(games)]
    )
    assert [json.loads(line)["reason"] for line in parent.output.splitlines()] == [
        "table-error",
        "threefold",
    ]


def test_rule_with_a_folder_of_variant_folders(db, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(db, data / "international")
    game = rule_game(
        [], fen=SLOW, variant="international", tablebase=None, options=RuleOptions(elapsed=31)
    )
    assert game.reason == "unfinished"
    from adjudicator import rule_file

    f = tmp_path / "g.pdn"
    f.write_text(f'[GameType "20"]\n[FEN "{SLOW}"]\n\n*\n')
    (ruled,) = rule_file(f, db=data, options=RuleOptions(elapsed=31))
    assert (ruled.result, ruled.reason) == ("1-1", "tablebase")
    assert "but only 1 ply remains on the 16-move count: draw" in ruled.detail


def test_wdl_only_tables_leave_a_win_unknown_and_a_draw_a_draw():
    from adj_helpers import FakeTablebase

    wdl_only = FakeTablebase({SLOW: (1, None)}, default=(0, None))
    r = rule_game([], fen=SLOW, variant="international", tablebase=wdl_only)
    assert (r.result, r.reason) == ("unknown", "no-distances")
    assert "cannot be decided" in r.detail
    drawn = rule_game([], fen="W:WK1:BK35", variant="international", tablebase=wdl_only)
    assert (drawn.result, drawn.reason) == ("1-1", "tablebase")
