"""The rules commands of the ``tablebase`` CLI: ``perft`` and ``moves``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tablebase.cli import main


@pytest.fixture
def run():
    def invoke(*args: str, stdin: str | None = None):
        return CliRunner().invoke(main, list(args), input=stdin)

    return invoke


def test_perft_last_line_is_the_count_alone(run):
    result = run("perft", "--depth", "4")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "4265"
    assert len(lines) == 5 and lines[0].startswith("depth 1: 9")


def test_perft_english_and_fen(run):
    assert run("perft", "-v", "english", "-d", "5").stdout.splitlines()[-1] == "7361"
    result = run("perft", "--fen", "W:WK46:B28", "--depth", "1")
    assert result.stdout.splitlines()[-1] == "5"


def test_perft_depth_zero(run):
    assert run("perft", "--depth", "0").stdout.strip() == "1"


def test_moves_json_format(run):
    fen = "W:WK17:B12,20,24,43"
    result = run("moves", "--json", fen)
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    data = json.loads(line)
    assert data["fen"] == fen
    assert sorted(data["moves"], key=lambda m: m["move"]) == [
        {
            "move": "17x3x25x48",
            "from": 17,
            "to": 48,
            "captures": [12, 20, 43],
            "path": [17, 3, 25, 48],
            "crowns": False,
        },
        {
            "move": "17x8x30x48",
            "from": 17,
            "to": 48,
            "captures": [12, 24, 43],
            "path": [17, 8, 30, 48],
            "crowns": False,
        },
    ]


def test_moves_json_quiet_moves(run):
    data = json.loads(run("moves", "--json", "W:W31-50:B1-20").stdout)
    assert len(data["moves"]) == 9
    first = data["moves"][0]
    assert set(first) == {"move", "from", "to", "captures", "path", "crowns"}
    assert first["captures"] == [] and first["path"] == [first["from"], first["to"]]
    assert first["move"] == f"{first['from']}-{first['to']}"


def test_moves_russian_alphanumeric_and_crowning_mid_capture(run):
    # d6 (10) takes e7 (7), is crowned on f8 (3) and goes on as a king over g7 (8) to h6 (12)
    out = run("moves", "-v", "russian", "W:Wd6:Be7,g7").stdout.strip()
    assert out == "W:W10:B7,8: 1 moves: d6:h6"
    data = json.loads(run("moves", "-v", "russian", "--json", "W:W10:B7,8").stdout)
    assert data["moves"] == [
        {
            "move": "d6:h6",
            "from": 10,
            "to": 12,
            "captures": [7, 8],
            "path": [10, 3, 12],
            "crowns": True,
        }
    ]
    # Brazilian: the man only passes f8 and ends on h6 uncrowned
    data = json.loads(run("moves", "-v", "brazilian", "--json", "W:W10:B7,8").stdout)
    assert [(m["move"], m["crowns"]) for m in data["moves"]] == [("d6:h6", False)]
    out = run("moves", "-v", "russian", "--notation", "numeric", "W:W10:B7,8").stdout.strip()
    assert out == "W:W10:B7,8: 1 moves: 10x12"


def test_perft_russian_and_brazilian(run):
    # py-draughts 1.10.1 (draughts.boards.russian / .brazilian) gives the same counts
    assert run("perft", "-v", "russian", "-d", "5").stdout.splitlines()[-1] == "7482"
    assert run("perft", "-v", "brazilian", "-d", "5").stdout.splitlines()[-1] == "7473"


def test_moves_reads_fens_from_stdin(run):
    stdin = "W:W31-50:B1-20\n\nB:W21-32:B1-12\n"
    result = run("moves", "--json", "-v", "english", "-", stdin=stdin)
    # the first FEN is read as English too: white men on 31-50 are out of range there
    assert result.exit_code == 2
    result = run("moves", "--json", "-", stdin="W:W31-50:B1-20\n\nW:WK46:B28\n")
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    assert [len(x["moves"]) for x in lines] == [9, 5]
    assert lines[1]["fen"] == "W:WK46:B28"


def test_moves_plain_text(run):
    result = run("moves", "-v", "english", "B:W21-32:B1-12")
    assert result.stdout.strip().startswith("B:W21-32:B1-12: 7 moves: 9-13")


@pytest.mark.parametrize(
    "args",
    [
        ("moves", "--json", "W:W51:B1"),
        ("moves", "X:W31:B1"),
        ("perft", "--depth", "2", "--fen", "W:W31,31:B1"),
        ("moves", "-v", "english", "B:W21:B29"),
    ],
)
def test_bad_fen_exits_2_with_one_line_and_no_traceback(run, args):
    result = run(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: invalid FEN")
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, not a crash


def test_bad_fen_in_a_real_process():
    """The installed entry point: exit status 2, one line on stderr, nothing on stdout."""
    code = "from tablebase.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "moves", "--json", "-"],
        input="W:W31-50:B1-20\nW:W99:B1\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert len(proc.stdout.splitlines()) == 1  # the good FEN before the bad one
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("error: invalid FEN 'W:W99:B1': square 99 out of range")
    assert "Traceback" not in proc.stderr
