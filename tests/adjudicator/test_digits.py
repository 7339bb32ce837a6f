"""Only ASCII digits read as numbers, everywhere (FEN, PDN moves and tags, JSON, alphanumeric
squares): anything else is a precise error of that game or request, never a traceback or a
500, and the games after it are still ruled (issue 40)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import tablebase_cli
from fastapi.testclient import TestClient

from adjudicator.pdn import read_games
from adjudicator.ruling import rule_game
from adjudicator.service.app import create_app
from tablebase.rules.position import FenError, Position

LONG = "1" * 5000


@pytest.mark.parametrize(
    ("fen", "variant", "message"),
    [
        ("W:Wa²:Bb8", "russian", "'a²' is not a square name of russian"),
        ("W:Wa²:Bb8", "international", "'a²' is not a square name of international"),
        (f"W:Wa{LONG}:Bb8", "russian", "is not a square name of russian"),
        (f"W:W{LONG}:B19", "international", "is not a square of international"),
        ("W:W٣:B19", "international", "expected a square number or name, got '٣'"),
        ("W:W3²:B19", "international", "expected a square number or name, got '3²'"),
        ("W:W31:B19:+٣1+0", "frisian", "king-move field must read +<n><square>+<n><square>"),
        ("W:W31:B19:H²:F1", "international", "unknown side letter"),
    ],
)
def test_a_fen_with_other_digits_is_a_fen_error(fen, variant, message) -> None:
    with pytest.raises(FenError, match="invalid FEN") as e:
        Position.from_fen(fen, variant)
    assert message in str(e.value)


def test_alphanumeric_squares_read_ascii_digits_only() -> None:
    from tablebase.rules.variants import get_variant

    russian = get_variant("russian")
    assert russian.square_named("c3") > 0
    assert russian.square_named("c³") == 0
    assert russian.square_named("c" + LONG) == 0
    assert russian.square_named("c٣") == 0


def test_a_superscript_game_type_is_a_bad_tag_of_that_game_only() -> None:
    text = '[GameType "2²"]\n1. 32-28 *\n\n[GameType "20"]\n1. 32-28 19-23 *\n'
    games = list(read_games_text(text))
    first = rule_game(games[0])
    assert first.reason == "bad-tag"
    assert "unsupported GameType '2²'" in first.detail
    second = rule_game(games[1])
    assert second.reason == "unfinished" and second.ply == 2


def read_games_text(text: str):
    import io

    return read_games(io.StringIO(text), errors="collect")


def test_pdn_moves_with_other_digits_are_errors_of_that_game() -> None:
    text = '[GameType "20"]\n1. 3²-28 *\n\n[GameType "20"]\n1. 32-28 *\n'
    games = list(read_games_text(text))
    first, second = rule_game(games[0]), rule_game(games[1])
    assert first.reason == "pdn-error", first
    assert first.detail == "<stream>:2:5: game 1: '²' after '3' is not an ASCII digit"
    assert second.reason == "unfinished" and second.ply == 1


def test_adjudicator_rule_goes_on_after_a_superscript_game_type(tmp_path) -> None:
    games = tmp_path / "games.pdn"
    games.write_text('[GameType "2²"]\n1. 32-28 *\n\n[GameType "20"]\n1. 32-28 *\n')
    r = subprocess.run(
        [sys.executable, "-m", "adjudicator.cli", "rule", "--json", str(games)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["reason"] for row in rows] == ["bad-tag", "unfinished"]
    assert "Traceback" not in r.stderr


def test_the_service_answers_4xx_for_other_digits() -> None:
    with TestClient(create_app(None)) as client:
        r = client.post("/adjudicate", json={"fen": "W:Wa²:Bb8", "moves": [], "variant": "russian"})
        assert r.status_code == 400 and "'a²' is not a square name" in r.json()["error"]
        r = client.get("/probe", params={"fen": "W:Wa²:Bb8", "variant": "russian"})
        assert 400 <= r.status_code < 500
        r = client.get("/probe", params={"fen": "W:W3²:B19"})
        assert 400 <= r.status_code < 500
        r = client.post(
            "/adjudicate",
            content='[GameType "2²"]\n1. 32-28 *\n\n[GameType "20"]\n1. 32-28 *\n',
            headers={"content-type": "text/plain"},
        )
        assert r.status_code == 200
        assert [g["reason"] for g in r.json()] == ["bad-tag", "unfinished"]


@pytest.mark.parametrize("fen", ["W:Wa²:Bb8", f"W:Wa{LONG}:Bb8", "W:W3²:B19"])
def test_tablebase_probe_and_moves_give_one_line_errors(fen, tmp_path) -> None:
    for args in (["moves", "--variant", "russian", fen], ["probe", "--db", str(tmp_path), fen]):
        r = tablebase_cli(*args, check=False)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert r.stderr.startswith("error: ")
