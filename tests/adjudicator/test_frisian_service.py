"""The service for Frisian: ``variant=frisian`` on /probe (FEN with the king-move counter,
the counter shown in ``king_runs`` where it binds) and on /adjudicate (GameType 40), and 4xx
for bad input as for the other variants. The shared test server holds no Frisian tables, so
/probe answers 404 naming the slice, with the legal moves and the counter."""

from __future__ import annotations

import json
import shutil

import httpx
import pytest
from conftest import session_database
from service_helpers import Server, shared_service, start_server

BARRED_FEN = "W:W50,K23:B1,K26:H0:F1:+0+323"  # white's king on 23 made three quiet moves


@pytest.fixture(scope="session")
def server(request, tmp_path_factory) -> Server:
    return shared_service(request, tmp_path_factory)


@pytest.fixture(scope="session")
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


def probe(client, fen: str, variant: str = "frisian") -> httpx.Response:
    return client.get("/probe", params={"variant": variant, "fen": fen})


def test_health_lists_frisian(client):
    body = client.get("/health").json()
    assert body["variants"]["frisian"]["tables"] is False


def test_probe_shows_the_counter_where_it_binds(client):
    r = probe(client, BARRED_FEN)
    assert r.status_code == 404, r.text  # no Frisian tables on this server
    body = r.json()
    assert "frisian" in body["error"]
    assert body["fen"] == "W:WK23,50:B1,K26:H0:F1:+0+323"  # the counter kept in the FEN
    assert body["king_runs"] == {
        "limit": 3,
        "barred": 23,
        "white": {"square": 23, "moves": 3},
        "black": None,
    }
    moves = [m["move"] for m in body["moves"]]
    assert moves and all(m.startswith("50-") for m in moves)  # the king on 23 may not move
    after = body["moves"][0]["fen"]
    assert ":+" not in after  # the man's move ended the run: no counter field


def test_probe_counter_that_does_not_bind_yet(client):
    body = probe(client, "W:W50,K23:B1,K26:H0:F1:+126+223").json()
    assert body["king_runs"]["barred"] is None
    assert body["king_runs"]["white"] == {"square": 23, "moves": 2}
    assert body["king_runs"]["black"] == {"square": 26, "moves": 1}
    king = [m for m in body["moves"] if m["from"] == 23]
    assert king and all(m["fen"].endswith("+126+3" + str(m["to"])) for m in king)


def test_probe_straight_capture_is_listed(client):
    body = probe(client, "W:WK28:BK18").json()
    assert [(m["move"], m["captures"]) for m in body["moves"]] == [("28x8", [18])]


def test_probe_other_variants_have_no_counter(client):
    body = probe(client, "W:WK38:B4,18", "international").json()
    assert body["king_runs"] is None


@pytest.mark.parametrize(
    ("fen", "words"),
    [
        ("W:W50,K23:B1,K26:H0:F1:+0+325", "no white king"),  # no king on 25
        ("W:W50,K23:B1,K26:H0:F1:+0+423", "at most 3 king moves"),  # over the limit
        ("W:W50,K23:B1,K26:H0:F1:+0+3", "square"),  # a count without its square
    ],
)
def test_probe_bad_counter_is_400(client, fen, words):
    r = probe(client, fen)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]


def test_adjudicate_frisian_pdn_and_json(client):
    text = '[GameType "40"]\n[FEN "W:W50,K23:B1,K26:H0:F1:+0+323"]\n\n1. 23-18 *\n'
    r = client.post("/adjudicate", content=text, headers={"content-type": "text/plain"})
    assert r.status_code == 200, r.text
    (ruling,) = r.json()
    assert ruling["variant"] == "frisian" and ruling["reason"] == "illegal-move"
    assert "the king on 23 has made 3 quiet moves in a row" in ruling["detail"]
    game = {"variant": "frisian", "fen": "W:WK28:BK3", "moves": []}
    r = client.post(
        "/adjudicate", content=json.dumps(game), headers={"content-type": "application/json"}
    )
    assert r.status_code == 200, r.text
    (ruling,) = r.json()
    assert (ruling["reason"], ruling["result"]) == ("king-against-king", "1-1")


# --- with Frisian tables (2-3 pieces, built here with the king-move counter) -----------------


@pytest.fixture(scope="module")
def frisian_client(tmp_path_factory):
    root = tmp_path_factory.mktemp("frisian-service")
    shutil.copytree(session_database(tmp_path_factory, "frisian", 3), root / "data" / "frisian")
    server = start_server(root / "data", root / "server.log", {"ADJUDICATOR_REQUEST_MS": "3000"})
    try:
        with httpx.Client(base_url=server.url, timeout=60) as c:
            yield c
    finally:
        server.stop()


def test_probe_with_frisian_tables_under_the_7_move_count(frisian_client):
    # Two kings against one: a win in 13 plies fits the 14 of the 7-move count.
    body = probe(frisian_client, "W:WK1,K2:BK6").json()
    assert (body["slice"], body["result"], body["dtw"]) == ("0201", "win", 13)
    assert body["result_under_count"] == "win"
    assert body["count"] == {"rule": "7-move", "limit": 14, "elapsed": 0}
    assert body["king_runs"] == {"limit": 3, "barred": None, "white": None, "black": None}
    # Thirteen plies already played: white's quiet move (it has no capture) is the last ply
    # of the count, so nothing can be won any more.
    r = frisian_client.get(
        "/probe", params={"variant": "frisian", "fen": "W:WK1,K2:BK6", "elapsed": 13}
    )
    assert not any(m["captures"] for m in r.json()["moves"])
    assert r.json()["result_under_count"] == "draw"
    assert all(m["result_under_count"] == "draw" for m in r.json()["moves"])


def test_probe_with_frisian_tables_king_against_king(frisian_client):
    drawn = probe(frisian_client, "W:WK28:BK3").json()
    assert (drawn["result"], drawn["result_under_count"]) == ("draw", "draw")
    lost = probe(frisian_client, "W:WK46:BK5").json()
    assert (lost["result"], lost["dtw"], lost["result_under_count"]) == ("loss", 2, "loss")
    assert lost["count"] == {"rule": "king-against-king", "limit": 3, "elapsed": 0}


def test_probe_with_frisian_tables_reads_the_counter(frisian_client):
    # A man and a king against a king: the king on 23 barred from quiet moves changes the
    # moves the tables value (only the man's moves are listed).
    fen = "W:W50,K23:BK26:H0:F1:+0+323"
    body = probe(frisian_client, fen).json()
    assert (body["slice"], body["result"]) == ("1101", "draw")
    assert body["moves"] and all(m["from"] == 50 for m in body["moves"])
    assert all(m["result"] is not None for m in body["moves"])
    free = probe(frisian_client, "W:W50,K23:BK26").json()
    assert any(m["from"] == 23 for m in free["moves"])
