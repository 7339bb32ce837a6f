"""The ``adjudicator rule`` command: output, options, exit statuses, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from adj_helpers import pdn
from click.testing import CliRunner
from conftest import REPO_ROOT, data_file

from adjudicator.cli import main
from adjudicator.pdn import read_games

CYCLE = ["50-44", "1-6", "44-50", "6-1"]
KINGS = "W:WK46,K50:BK1,K5"
DRAW = pdn(CYCLE * 2, fen=KINGS, result="1-1", White="A", Black="B")
ILLEGAL = pdn(["32-28", "19-23", "28-22"], result="2-0")
SACRIFICE = pdn(["41-14", "3x20", "25x3"], fen="W:WK25,K35,K41:BK3", result="2-0")


def run(args, stdin=None):
    return CliRunner().invoke(main, ["rule", *args], input=stdin)


@pytest.fixture
def games(tmp_path):
    def write(name: str, *texts: str):
        path = tmp_path / name
        path.write_text("\n".join(texts))
        return str(path)

    return write


def test_table_output(games):
    result = run([games("a.pdn", DRAW, DRAW)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:4] == ["game", "white", "black", "recorded"]
    assert "threefold" in lines[1] and "1-1" in lines[1]
    assert lines[-1].startswith("2 games: 2 agree")


def test_json_lines(games):
    result = run(["--json", games("a.pdn", DRAW, ILLEGAL)])
    assert result.exit_code == 1
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["reason"] for r in rows] == ["threefold", "illegal-move"]
    assert list(rows[0]) == [
        "game", "white", "black", "result", "reason", "ply", "recorded_result", "agrees",
        "detail", "variant", "warnings",
    ]  # fmt: skip


def test_stdin():
    result = run(["--json", "-"], stdin=DRAW)
    assert result.exit_code == 0
    assert json.loads(result.output)["reason"] == "threefold"


def test_disputed_option(games):
    path = games("s.pdn", SACRIFICE)
    default = json.loads(run(["--json", "--elapsed", "30", path]).output)
    assert (default["result"], default["reason"], default["ply"]) == ("2-0", "no-pieces", 3)
    out = run(["--json", "--elapsed", "30", "--disputed", "cumulative", path]).output
    assert (json.loads(out)["reason"], json.loads(out)["ply"]) == ("16-move", 2)


def test_english_options(games):
    moves = ["1-5", "32-28", "5-1", "28-32", "1-6", "32-27"]
    path = games("e.pdn", pdn(moves, fen="B:WK32:BK1", result="1/2-1/2"))
    out = run(["--json", "--variant", "english", "--english-count", "3", path]).output
    assert (json.loads(out)["reason"], json.loads(out)["ply"]) == ("3-move", 6)
    out = run(["--json", "--variant", "english", "--english-rule", "casual", path]).output
    assert json.loads(out)["reason"] == "unfinished"


def test_write_pdn(games, tmp_path):
    out = tmp_path / "out.pdn"
    result = run(["--write-pdn", str(out), games("a.pdn", DRAW, ILLEGAL)])
    assert result.exit_code == 1
    written = list(read_games(str(out)))
    assert [g.result_token for g in written] == ["1-1", "2-0"]  # unknown: kept as is
    assert written[0].tags["Result"] == "1-1" and "Result" not in written[1].tags
    assert [m.text for m in written[0].moves] == CYCLE * 2
    assert written[0].tags["FEN"] == KINGS


@pytest.mark.parametrize(
    "args, message",
    [
        (["/nonexistent.pdn"], "/nonexistent.pdn: no such file"),
        (["--db", "/nonexistent-db", "GAMES"], "/nonexistent-db: database directory"),
    ],
)
def test_unusable_input(games, args, message):
    args = [games("a.pdn", DRAW) if a == "GAMES" else a for a in args]
    result = run(args)
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_file_without_games(games):
    result = run([games("empty.pdn", "")])
    assert result.exit_code == 2
    assert "no games found" in result.stderr


def test_malformed_file_is_a_game_error():
    result = run([str(data_file("pdn", "bad-nested-comment.pdn"))])
    assert result.exit_code == 1
    assert "nested comment" in result.output


def test_console_script_without_traceback(tmp_path):
    bad = tmp_path / "bad.pdn"
    bad.write_bytes(b"\x00\xff\xfe garbage [[[ {\n")
    for args, code in (([str(bad)], 1), (["/nonexistent.pdn"], 2), ([], 2)):
        proc = subprocess.run(
            [sys.executable, "-m", "adjudicator.cli", "rule", *args],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
        )
        assert proc.returncode == code, proc.stderr
        assert "Traceback" not in proc.stderr + proc.stdout


def test_real_files():
    wk = run(["--json", str(data_file("pdn", "wk2003.pdn"))])
    assert wk.exit_code == 0 and len(wk.output.splitlines()) == 23
    oca = run(["--json", "--variant", "english", str(data_file("pdn", "OCA_2.0.pdn"))])
    assert oca.exit_code == 0 and len(oca.output.splitlines()) == 43
