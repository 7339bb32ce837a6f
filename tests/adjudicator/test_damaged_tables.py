"""Damaged table files in the adjudicator: only the rulings and answers that need a damaged
slice fail, naming it; junk files are ignored; the service starts and ``/health`` names the
damaged files; ``adjudicator rule`` exits 1 for a table error; a client that disconnects in
the middle of its body leaves no traceback; an app closes its files when its lifespan ends and
is freed, block cache and all, once dropped (issue 40)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import shutil
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
from conftest import session_database
from fastapi.testclient import TestClient

from adjudicator.ruling import rule_game
from adjudicator.service.app import create_app
from tablebase.probe.database import Tablebase


@pytest.fixture
def damaged_db(tmp_path_factory, tmp_path) -> Path:
    """A copy of the 2-3 piece International database whose slice 0201 (two kings against
    a king: the 5-move ending, a count applies) has a flipped byte of metadata."""
    src = session_database(tmp_path_factory, "international", 3)
    db = tmp_path / "international"
    shutil.copytree(src, db)
    path = db / "0201.h5"
    data = bytearray(path.read_bytes())
    data[600] ^= 0xFF
    path.write_bytes(bytes(data))
    return db


def test_a_damaged_count_slice_fails_only_the_rulings_that_need_it(damaged_db) -> None:
    with Tablebase(damaged_db) as tb:
        # man against man: 0201 cannot arise (white never has two pieces), ruled as always
        intact = rule_game([], variant="international", tablebase=tb, fen="W:W33:B18")
        assert intact.reason == "tablebase", intact
        # king and man against king: the count search needs 0201's longest win
        needs = rule_game([], variant="international", tablebase=tb, fen="W:WK46,28:BK5")
        assert needs.reason == "table-error", needs
        assert str(damaged_db / "0201.h5") in needs.detail
        assert "metadata digest mismatch" in needs.detail
        again = rule_game([], variant="international", tablebase=tb, fen="W:W33:B18")
        assert again == intact


def test_adjudicator_rule_exits_1_for_a_table_error_and_rules_the_other_games(
    damaged_db, tmp_path
) -> None:
    games = tmp_path / "games.pdn"
    games.write_text(
        '[GameType "20"]\n[FEN "W:WK46,28:BK5"]\n*\n\n[GameType "20"]\n[FEN "W:W33:B18"]\n*\n'
    )
    r = subprocess.run(
        [sys.executable, "-m", "adjudicator.cli", "rule", "--json", "--db", str(damaged_db), games],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    reasons = [line.split('"reason": "')[1].split('"')[0] for line in r.stdout.splitlines()]
    assert reasons == ["table-error", "tablebase"]
    assert "Traceback" not in r.stderr


def test_junk_files_are_ignored_by_rule_and_the_service(damaged_db) -> None:
    (damaged_db / "0000.h5").write_bytes(b"junk")
    (damaged_db / "0100.h5").write_bytes(b"junk")
    with Tablebase(damaged_db) as tb:
        assert rule_game([], tablebase=tb, fen="W:W33:B18").reason == "tablebase"
    with TestClient(create_app({"international": damaged_db})) as client:
        health = client.get("/health").json()
        assert "0000" not in health["variants"]["international"]["slices"]


def test_the_service_starts_and_health_names_the_damaged_file(damaged_db) -> None:
    with TestClient(create_app({"international": damaged_db})) as client:
        health = client.get("/health").json()
        assert health["status"] == "degraded"
        damaged = health["variants"]["international"]["damaged"]
        assert [d["file"] for d in damaged] == ["0201.h5"]
        assert "metadata digest mismatch" in damaged[0]["error"]
        assert str(damaged_db) not in str(health)  # never a server path
        ok = client.get("/probe", params={"fen": "W:W33:B18"})
        assert ok.status_code == 200 and ok.json()["result"] in ("win", "draw", "loss")
        bad = client.get("/probe", params={"fen": "W:WK46,K28:BK5"})
        assert bad.status_code == 503
        assert bad.json()["error"].startswith("the international slice file 0201.h5 is damaged")
        rulings = client.post(
            "/adjudicate",
            json=[{"fen": "W:WK46,28:BK5", "moves": []}, {"fen": "W:W33:B18", "moves": []}],
        ).json()
        assert [r["reason"] for r in rulings] == ["table-error", "tablebase"]


def test_a_client_disconnecting_in_its_body_logs_no_traceback(damaged_db, caplog) -> None:
    app = create_app({"international": damaged_db})
    sent: list[dict] = []
    parts = [
        {"type": "http.request", "body": b'[GameType "20"]\n', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict:
        return parts.pop(0) if parts else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/adjudicate",
        "raw_path": b"/adjudicate",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"text/plain"), (b"content-length", b"1000")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    with caplog.at_level(logging.INFO):
        asyncio.run(app(scope, receive, send))
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    assert "disconnected" in caplog.text
    assert os.fspath(damaged_db)  # the database was opened


def test_tablebase_hub_fails_only_the_answer_that_needs_the_damaged_slice(damaged_db) -> None:
    from tablebase.probe.hub import position_text, serve
    from tablebase.rules.position import Position

    def session(fen: str) -> list[str]:
        out: list[str] = []
        pos = Position.from_fen(fen, "international")
        with Tablebase(damaged_db) as tb:
            serve(tb, ["hub", "init", f"pos pos={position_text(pos)}", "go think"], out.append)
        return out

    needs = session("W:WK46,28:BK5")
    error = next(line for line in needs if line.startswith("error"))
    assert "a table file is damaged" in error and "0201.h5" in error
    assert needs[-1] == "done"
    intact = session("W:W33:B18")
    assert intact[-1].startswith("done move=")
    assert not any(line.startswith("error") for line in intact)


def test_the_service_closes_its_files_when_its_lifespan_ends(tmp_path_factory) -> None:
    db = session_database(tmp_path_factory, "international", 3)
    app = create_app({"international": db})
    with TestClient(app) as client:
        r = client.get("/probe", params={"fen": "W:WK46:BK5"})
        assert (r.status_code, r.json()["result"]) == (200, "loss")  # 46 has one diagonal
        tb = app.state.service.tables["international"]
        assert tb.opened == 1  # 0101, the two kings
    assert tb.opened == 0


def test_an_app_dropped_is_freed_with_its_block_cache(tmp_path_factory) -> None:
    """The fuzz's service reader makes an app per flipped file. FastAPI keeps endpoint
    functions in process-wide caches (4,096 entries), and the endpoints held the service
    (their closure), so every app made stayed alive with its block cache (21 MB written, a
    quarter of the machine's memory reserved): after about 2,000 flips the worker held 22 GB
    and the system killed it (issue 40, the fuzz's dead service worker)."""
    db = session_database(tmp_path_factory, "international", 3)
    caches = []
    for _ in range(3):
        app = create_app({"international": db})
        with TestClient(app) as client:
            assert client.get("/probe", params={"fen": "W:WK46:BK5"}).status_code == 200
            assert client.get("/health").status_code == 200
            assert client.post("/adjudicate", json={"moves": []}).status_code == 200
        caches.append(weakref.ref(app.state.service.cache))
        del app, client
    gc.collect()
    assert [c() for c in caches] == [None, None, None]
