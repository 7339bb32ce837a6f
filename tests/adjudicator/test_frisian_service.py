"""The service for Frisian: ``variant=frisian`` on /probe (FEN with the king-move counter,
the counter shown in ``king_runs`` where it binds) and on /adjudicate (GameType 40), and 4xx
for bad input as for the other variants. The shared test server holds no Frisian tables, so
/probe answers 404 naming the slice, with the legal moves and the counter."""

from __future__ import annotations

import json

import httpx
import pytest
from service_helpers import Server, shared_service

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
