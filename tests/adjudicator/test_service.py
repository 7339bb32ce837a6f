"""The adjudication service through HTTP against the real server (uvicorn in a subprocess):
probes agree with the tables, rulings agree with ``adjudicator rule --json``, and bad input
of every kind answers 4xx with a JSON error while the service stays up."""

from __future__ import annotations

import json
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from adj_helpers import pdn
from click.testing import CliRunner
from conftest import data_file
from service_helpers import LIMITS, Server, shared_service

import tablebase
from adjudicator.cli import main
from adjudicator.databases import resolve_databases
from adjudicator.service.app import ServiceSettings, create_app

MAX_BODY = int(LIMITS["ADJUDICATOR_MAX_BODY_BYTES"])
MAX_GAMES = int(LIMITS["ADJUDICATOR_MAX_GAMES"])
MAX_PLIES = int(LIMITS["ADJUDICATOR_MAX_PLIES"])
CYCLE = ["50-44", "1-6", "44-50", "6-1"]
KINGS = "W:WK46,K50:BK1,K5"
MOVE_KEYS = {"move", "from", "to", "captures", "path", "result", "dtw", "result_under_count", "fen"}
RULING_KEYS = [
    "game", "white", "black", "result", "reason", "ply", "recorded_result", "agrees", "detail",
    "variant", "warnings",
]  # fmt: skip


@pytest.fixture(scope="session")
def server(request, tmp_path_factory) -> Server:
    return shared_service(request, tmp_path_factory)


@pytest.fixture(scope="session")
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


def assert_up(client: httpx.Client) -> None:
    r = client.get("/health")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def assert_error(r: httpx.Response, status: int, *words: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert isinstance(body.get("error"), str) and body["error"]
    for word in words:
        assert word in body["error"], body["error"]
    return body


def post_pdn(client, text: str | bytes, ctype: str = "text/plain", **params) -> httpx.Response:
    return client.post("/adjudicate", content=text, headers={"content-type": ctype}, params=params)


def post_json(client, body) -> httpx.Response:
    return client.post(
        "/adjudicate", content=json.dumps(body), headers={"content-type": "application/json"}
    )


# --- /health, /openapi.json, / ----------------------------------------------------------------


def test_health_lists_variants_and_slices(client):
    body = client.get("/health").json()
    assert body["status"] == "ok"
    for name in ("international", "english"):
        v = body["variants"][name]
        assert v["tables"] is True
        assert v["max_pieces"] == 3
        assert v["slice_count"] == len(v["slices"]) == 16
        assert "1010" in v["slices"]
    assert body["limits"]["max_games"] == MAX_GAMES
    assert body["limits"]["max_body_bytes"] == MAX_BODY


def test_openapi_and_docs(client):
    spec = client.get("/openapi.json").json()
    assert {"/adjudicate", "/probe", "/health"} <= set(spec["paths"])
    content = spec["paths"]["/adjudicate"]["post"]["requestBody"]["content"]
    assert {"text/plain", "application/x-pdn", "application/json"} <= set(content)
    assert "$defs" not in json.dumps(content)  # the JSON game schema is inlined
    assert client.get("/docs").status_code == 200


def test_explorer_page_and_static_files(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "/static/explorer.js" in page.text and 'id="board"' in page.text
    for name in ("explorer.js", "explorer.css"):
        assert client.get(f"/static/{name}").status_code == 200


# --- /probe ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "variant, fen",
    [
        ("international", "W:W28,K46:BK5"),
        ("international", "B:W28,K46:BK5"),
        ("international", "W:WK1:B7,K40"),
        ("international", "W:W33:B28,K3"),  # a compulsory capture
        ("english", "B:WK28:B1,K10"),
        ("english", "W:W22,K30:B18"),
    ],
)
def test_probe_agrees_with_the_tables(client, server, variant, fen):
    r = client.get("/probe", params={"variant": variant, "fen": fen})
    assert r.status_code == 200, r.text
    body = r.json()
    with tablebase.open(server.data / variant) as tb:
        wdl, dtw = tb.probe(fen)
        expected = [(m.text, m.result, m.dtw) for m in tb.best_moves(fen)]
        pos = tablebase.Position.from_fen(fen, variant)
    assert body["fen"] == pos.fen() and body["variant"] == variant
    assert body["side"] == ("white" if pos.white_to_move else "black")
    assert (body["result"], body["dtw"]) == ({1: "win", 0: "draw", -1: "loss"}[wdl], dtw)
    assert [(m["move"], m["result"], m["dtw"]) for m in body["moves"]] == expected
    for m in body["moves"]:
        assert set(m) == MOVE_KEYS
        assert m["path"][0] == m["from"] and m["path"][-1] == m["to"]


def test_probe_capture_lists_the_captured_squares(client):
    body = client.get("/probe", params={"fen": "W:W33:B28,K3"}).json()
    assert [(m["move"], m["captures"]) for m in body["moves"]] == [("33x22", [28])]


def test_probe_default_variant_is_international(client):
    assert client.get("/probe", params={"fen": "W:W28,K46:BK5"}).json()["variant"] == (
        "international"
    )


def test_probe_outside_the_tables_is_404_naming_the_slice(client):
    r = client.get("/probe", params={"variant": "international", "fen": "W:W31-50:B1-20"})
    body = assert_error(r, 404, "slice 200200", "international")
    assert body["slice"] == "200200"
    assert body["result"] is None and body["dtw"] is None
    assert len(body["moves"]) == 9 and all(m["result"] is None for m in body["moves"])


@pytest.mark.parametrize(
    "fen, name", [("W:W31-38:B1", "8010"), ("W:W31-39:B1", "9010"), ("B:W31-39:B1", "1090")]
)
def test_probe_eight_or_more_pieces_of_a_kind_name_their_own_slice(client, fen, name):
    # Piece counts of 8 and more must not wrap around into a small slice of the database.
    r = client.get("/probe", params={"fen": fen})
    body = assert_error(r, 404, f"slice {name} ")
    assert body["slice"] == name and body["result"] is None


def test_probe_outside_the_tables_still_values_captures_into_them(client, server):
    # Four pieces (not in a 3-piece database), but the capture leads into a 3-piece slice,
    # where the black king catches both men: a loss for white, as the prober says of the
    # position after the capture (black to move wins).
    body = client.get("/probe", params={"fen": "W:W33,44:B28,K3"}).json()
    assert body["slice"] == "2011"
    [move] = [m for m in body["moves"] if m["move"] == "33x22"]
    with tablebase.open(server.data / "international") as tb:
        assert tb.probe_wdl(move["fen"]) == 1
    assert move["result"] == "loss"


def test_probe_lost_positions(client):
    no_pieces = client.get("/probe", params={"fen": "B:W28:B"}).json()
    assert (no_pieces["result"], no_pieces["dtw"], no_pieces["moves"]) == ("loss", 0, [])
    blocked = client.get("/probe", params={"fen": "B:W41,47:B36"})  # a black man can't move
    assert blocked.status_code == 200
    assert (blocked.json()["result"], blocked.json()["dtw"]) == ("loss", 0)


# --- /adjudicate ---------------------------------------------------------------------------


def international_games() -> str:
    return "\n".join(
        [
            pdn(CYCLE * 2, fen=KINGS, result="1-1", White="A", Black="B"),
            pdn(["28-22"], fen="W:W28,K46:BK5", result="2-0", White="C"),
            pdn(["32-28", "19-23", "28-22"], result="2-0"),  # illegal third move
            pdn(["32-28", "18-23"], result="*"),  # unfinished, outside the tables
        ]
    )


def cli_rulings(
    pdn_text: str, tmp_path: Path, server: Server, variant: str, *args: str, exit_code: int = 0
):
    """``adjudicator rule --json --db VARIANT`` run from the server's data folder (so that
    its messages name the database as the service does, without the server's path); it
    must exit with ``exit_code`` (1: some game has an error)."""
    path = tmp_path / "games.pdn"
    path.write_text(pdn_text)
    cwd = os.getcwd()
    os.chdir(server.data)
    try:
        result = CliRunner().invoke(main, ["rule", "--json", "--db", variant, *args, str(path)])
    finally:
        os.chdir(cwd)
    assert result.exit_code == exit_code, result.output
    return [json.loads(line) for line in result.output.splitlines() if line.strip()]


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-pdn", "text/plain; charset=utf-8"])
def test_adjudicate_pdn_equals_the_cli(client, server, tmp_path, ctype):
    text = international_games()
    r = post_pdn(client, text, ctype)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got == cli_rulings(text, tmp_path, server, "international", exit_code=1)
    assert [list(g) for g in got] == [RULING_KEYS] * 4
    reasons = ["threefold", "tablebase", "illegal-move", "outside-tables"]
    assert [g["reason"] for g in got] == reasons
    assert "slice 200200 is not in the database international" in got[3]["detail"]
    assert got[1]["result"] == "2-0" and got[1]["agrees"] is True


def test_adjudicate_english_pdn_with_options_equals_the_cli(client, server, tmp_path):
    text = pdn(["28-24", "10-14"], fen="W:WK28:B1,K10", result="*")
    r = post_pdn(client, text, variant="english", english_rule="casual")
    assert r.status_code == 200, r.text
    expected = cli_rulings(
        text, tmp_path, server, "english", "--variant", "english", "--english-rule", "casual"
    )
    assert r.json() == expected


def test_adjudicate_real_world_file(client, server, tmp_path):
    path = data_file("pdn", "wk2003.pdn")
    r = post_pdn(client, path.read_bytes())
    assert r.status_code == 200, r.text
    got = r.json()
    assert len(got) == 23
    assert got == cli_rulings(path.read_text(), tmp_path, server, "international")


def test_adjudicate_too_many_games_in_a_real_file(client):
    path = data_file("pdn", "OCA_2.0.pdn")  # 43 games
    assert_error(post_pdn(client, path.read_bytes(), variant="english"), 413, "too many games")
    assert_up(client)


def test_adjudicate_json_game(client):
    r = post_json(client, {"variant": "international", "fen": KINGS, "moves": CYCLE * 2})
    assert r.status_code == 200, r.text
    [ruling] = r.json()
    assert list(ruling) == RULING_KEYS
    assert (ruling["game"], ruling["result"], ruling["reason"], ruling["ply"]) == (
        1,
        "1-1",
        "threefold",
        8,
    )


def test_adjudicate_json_list_numbers_the_games(client):
    games = [
        {"fen": "W:W28,K46:BK5", "moves": ["28-22"]},
        {"variant": "english", "moves": ["11-15", "22-18", "15x22"]},
        {"moves": ["32-28", "32-27"]},  # illegal second ply
        {
            "variant": "international",
            "fen": "W:WK28:BK1,K4",
            "moves": [],
            "options": {"disputed": "cumulative", "elapsed": 3},
        },
    ]
    got = post_json(client, games).json()
    assert [g["game"] for g in got] == [1, 2, 3, 4]
    assert got[0]["result"] == "2-0" and got[0]["reason"] == "tablebase"
    assert got[2]["reason"] == "illegal-move" and got[2]["ply"] == 2
    assert got[3]["result"] == "1-1"


def test_adjudicate_without_content_type_sniffs_the_body(client):
    body = json.dumps({"fen": KINGS, "moves": CYCLE * 2}).encode()
    r = client.post("/adjudicate", content=body, headers={"content-type": ""})
    assert r.status_code == 200 and r.json()[0]["reason"] == "threefold"


def test_adjudicate_malformed_pdn_collect_rules_it_pdn_error(client):
    text = data_file("pdn", "bad-nested-comment.pdn").read_text()
    body = assert_error(post_pdn(client, text), 400, "malformed PDN", "nested comment")
    assert body["game"] == 1
    got = post_pdn(client, text, errors="collect").json()
    assert [g["reason"] for g in got] == ["pdn-error"]


# --- bad input: 4xx with a JSON error, the service stays up ---------------------------------


def chunks(total: int, size: int = 16 * 1024):
    sent = 0
    while sent < total:
        yield b"a" * min(size, total - sent)
        sent += size


def _many_games(n: int) -> str:
    return "\n".join(pdn(["32-28"], result="*") for _ in range(n))


BAD_REQUESTS = {
    # name: (method, path, kwargs, status, words in the error)
    "pdn-nested-comment": (
        "POST", "/adjudicate",
        {"content": "1. 32-28 {a {b} c} 19-23 *", "headers": {"content-type": "text/plain"}},
        400, ["malformed PDN"],
    ),
    "pdn-cut-short-strict": (
        "POST", "/adjudicate?strict=true",
        {"content": '[Event "x"]\n1. 32-28 19-23', "headers": {"content-type": "text/plain"}},
        400, ["malformed PDN"],
    ),
    "pdn-empty": (
        "POST", "/adjudicate", {"content": "", "headers": {"content-type": "text/plain"}},
        400, ["no games"],
    ),
    "pdn-binary": (
        "POST", "/adjudicate",
        {"content": bytes(range(256)) * 8, "headers": {"content-type": "application/x-pdn"}},
        400, ["malformed PDN", "unexpected character"],
    ),
    "pdn-too-many-games": (
        "POST", "/adjudicate",
        {"content": _many_games(MAX_GAMES + 1), "headers": {"content-type": "text/plain"}},
        413, ["too many games"],
    ),
    "pdn-unknown-variant": (
        "POST", "/adjudicate?variant=checkers",
        {"content": "1. 32-28 *", "headers": {"content-type": "text/plain"}},
        422, ["variant"],
    ),
    "pdn-bad-option": (
        "POST", "/adjudicate?disputed=sometimes",
        {"content": "1. 32-28 *", "headers": {"content-type": "text/plain"}},
        422, ["disputed"],
    ),
    "json-malformed": (
        "POST", "/adjudicate",
        {"content": '{"moves": ["32-28"', "headers": {"content-type": "application/json"}},
        400, ["malformed JSON"],
    ),
    "json-deeply-nested": (
        "POST", "/adjudicate",
        {"content": "[" * 30000 + "]" * 30000, "headers": {"content-type": "application/json"}},
        400, ["malformed JSON"],
    ),
    "json-null": (
        "POST", "/adjudicate",
        {"content": "null", "headers": {"content-type": "application/json"}}, 422, ["game 1"],
    ),
    "json-empty-list": (
        "POST", "/adjudicate",
        {"content": "[]", "headers": {"content-type": "application/json"}}, 400, ["no games"],
    ),
    "json-moves-not-a-list": (
        "POST", "/adjudicate", {"json": {"moves": "32-28"}}, 422, ["moves"],
    ),
    "json-moves-not-strings": (
        "POST", "/adjudicate", {"json": {"moves": [32, 28]}}, 422, ["moves"],
    ),
    "json-unknown-field": (
        "POST", "/adjudicate", {"json": {"moves": [], "path": "/etc/passwd"}}, 422, ["path"],
    ),
    "json-unknown-variant": (
        "POST", "/adjudicate", {"json": {"variant": "../english", "moves": []}}, 422,
        ["variant"],
    ),
    "json-bad-fen": (
        "POST", "/adjudicate", {"json": {"fen": "W:W99:B1", "moves": []}}, 400, ["FEN"],
    ),
    "json-bad-option": (
        "POST", "/adjudicate",
        {"json": {"moves": [], "options": {"english_count": 0}}}, 422, ["english_count"],
    ),
    "json-too-many-games": (
        "POST", "/adjudicate", {"json": [{"moves": []}] * (MAX_GAMES + 1)}, 413,
        ["too many games"],
    ),
    "json-too-many-moves": (
        "POST", "/adjudicate", {"json": {"moves": ["32-28"] * (MAX_PLIES + 1)}}, 413,
        ["too many moves"],
    ),
    "pdn-too-many-moves": (
        "POST", "/adjudicate",
        {"content": pdn(CYCLE * (MAX_PLIES // 4 + 1), fen=KINGS),
         "headers": {"content-type": "text/plain"}},
        413, ["game 1", "too many moves"],
    ),
    "oversized-body": (
        "POST", "/adjudicate",
        {"content": b"a" * (MAX_BODY + 1), "headers": {"content-type": "text/plain"}},
        413, ["too large"],
    ),
    "oversized-chunked-body": (
        "POST", "/adjudicate",
        {"content": chunks(4 * MAX_BODY), "headers": {"content-type": "text/plain"}},
        413, ["too large"],
    ),
    "unsupported-content-type": (
        "POST", "/adjudicate",
        {"content": "1. 32-28 *", "headers": {"content-type": "image/png"}}, 415,
        ["content type"],
    ),
    "probe-bad-fen": ("GET", "/probe?fen=W:W28:B28", {}, 400, ["FEN", "twice"]),
    "probe-fen-off-the-board": (
        "GET", "/probe?variant=english&fen=W:W33:B1", {}, 400, ["FEN"],
    ),
    "probe-fen-traversal": ("GET", "/probe?fen=../../etc/passwd", {}, 400, ["FEN"]),
    "probe-fen-too-long": ("GET", "/probe?fen=W:W" + "1," * 400 + "2", {}, 422, ["fen"]),
    "probe-no-fen": ("GET", "/probe", {}, 422, ["fen"]),
    "probe-unknown-variant": (
        "GET", "/probe?variant=checkers&fen=W:W28:B19", {}, 422, ["variant"],
    ),
    "probe-variant-path": (
        "GET", "/probe?variant=../../etc&fen=W:W28:B19", {}, 422, ["variant"],
    ),
    "probe-opponent-has-no-pieces": ("GET", "/probe?fen=W:W28:B", {}, 422, ["no pieces"]),
    "unknown-path": ("GET", "/nothing", {}, 404, []),
    "wrong-method": ("GET", "/adjudicate", {}, 405, []),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BAD_REQUESTS))
def test_bad_input_is_a_4xx_json_error_and_the_service_stays_up(client, name):
    method, path, kwargs, status, words = BAD_REQUESTS[name]
    r = client.request(method, path, **kwargs)
    assert_error(r, status, *words)
    assert_up(client)


def test_raw_garbage_and_traversal_over_the_socket(server, client):
    host, port = server.url.removeprefix("http://").split(":")
    for raw, status in (
        (b"GET /static/../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", b"404"),
        (b"GET /static/%2e%2e/service.py HTTP/1.1\r\nHost: x\r\n\r\n", b"404"),
        (b"\x00\x01\x02 garbage \xff\r\n\r\n", b"400"),
        (b"POST /adjudicate HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n", b"400"),
    ):
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(raw)
            answer = s.recv(4096)
        assert b"root:" not in answer and b"def create_app" not in answer
        assert answer.split(b" ")[1] == status, answer[:80]
    assert_up(client)


def test_concurrent_probes_and_rulings(client, server):
    fens = ["W:W28,K46:BK5", "B:W28,K46:BK5", "W:WK1:B7,K40", "W:W33:B28,K3"] * 10

    def probe(fen: str) -> int:
        return httpx.get(f"{server.url}/probe", params={"fen": fen}, timeout=60).status_code

    def rule(_: int) -> int:
        r = httpx.post(f"{server.url}/adjudicate", json={"fen": KINGS, "moves": CYCLE * 2})
        return r.status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(probe, fens)) + list(pool.map(rule, range(8)))
    assert codes == [200] * len(codes)
    assert_up(client)


# --- in-process: databases layout, settings, the serve command -------------------------------


def test_resolve_databases_layouts(server, tmp_path):
    data = server.data
    assert resolve_databases(data) == {
        "international": data / "international",
        "english": data / "english",
    }
    assert resolve_databases(data / "english") == {"english": data / "english"}
    assert resolve_databases({"English": data / "english"}) == {"english": data / "english"}
    assert resolve_databases(None) == {}
    for bad in (tmp_path / "missing", tmp_path, {"checkers": data / "english"}):
        with pytest.raises(ValueError):
            resolve_databases(bad)
    with pytest.raises(ValueError, match="holds english tables"):
        create_app({"international": data / "english"})


def test_settings_from_environment():
    s = ServiceSettings.from_env({"ADJUDICATOR_MAX_GAMES": "7", "OTHER": "x"})
    assert s.max_games == 7 and s.max_body_bytes == ServiceSettings().max_body_bytes
    for bad in ("zero", "0"):
        with pytest.raises(ValueError, match="ADJUDICATOR_THREADS"):
            ServiceSettings.from_env({"ADJUDICATOR_THREADS": bad})


def test_serve_with_a_missing_database_is_unusable(tmp_path):
    result = CliRunner().invoke(main, ["serve", "--db", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_without_tables_probes_list_moves_and_rulings_say_unknown():
    from fastapi.testclient import TestClient

    with TestClient(create_app(None)) as c:
        health = c.get("/health").json()
        assert health["variants"]["international"]["tables"] is False
        body = assert_error(c.get("/probe", params={"fen": "W:W28,K46:BK5"}), 404, "no tables")
        assert len(body["moves"]) == 5 and body["slice"] == "1101"
        [ruling] = c.post("/adjudicate", json={"fen": KINGS, "moves": CYCLE}).json()
        assert (ruling["result"], ruling["reason"]) == ("unknown", "unfinished")
