"""Scan 3.1 (a real Hub engine) through ``adjudicator match``: started in its own folder with
its options and no wrapper, an unknown option refused, games at once the same as one at a
time, Frisian against the Frisian tables. Scan is found through the env var ``SCAN`` (the
path of its binary; ``.ci/run`` builds it from ``../shared/engines/scan``); its folder is
copied to a temporary one, as it reads ``scan.ini`` and ``data/`` from where it runs."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import session_database
from match_books import book_engine

import tablebase
from adjudicator import rule_file
from adjudicator.cli import main
from adjudicator.drawrules import DrawState
from adjudicator.pdn import read_games
from adjudicator.tablesearch import rule_position
from tablebase.rules import Position
from tablebase.rules.variants import FRISIAN

SCAN = os.environ.get("SCAN")
needs_scan = pytest.mark.skipif(
    not SCAN or not os.path.isfile(SCAN),
    reason="Scan not built: set SCAN to its binary (.ci/run builds it from "
    "../shared/engines/scan into build/engines/ when ../shared exists)",
)
# the ends that are not the rules' (any other reason is a rule of the variant: no-pieces,
# threefold, 25-move, Frisian's king-against-king, ..., or the tables)
NOT_RULES = {"claim", "resignation", "false-claim", "illegal-move", "malformed-message",
             "disconnected", "engine-crashed", "time", "refused", "unfinished",
             "draw-adjudication", "resign-adjudication"}  # fmt: skip
BALLOTS = '[Event "b"]\n1. 32-28 18-23 *\n\n[Event "b"]\n1. 33-28 17-22 *\n'


@pytest.fixture
def scan_dir(tmp_path) -> Path:
    folder = tmp_path / "scan"
    shutil.copytree(os.path.dirname(os.path.abspath(SCAN)), folder)
    return folder


def scan_spec(folder: Path, name: str = "Scan", **options: str) -> str:
    spec = f"name={name} cmd=./{os.path.basename(SCAN)} arg=hub dir={folder}"
    opts = {"tt-size": "16", **options}
    return spec + "".join(f" option.{k}={v}" for k, v in opts.items())


def match(*args: str):
    return CliRunner().invoke(main, ["match", *args])


def ruled_the_same(pdn: Path, db=None) -> list:
    """Every game ended by a rule is ruled by ``adjudicator rule`` to the same result, reason
    and ply; returns the games."""
    games = list(read_games(str(pdn)))
    rulings = [r.to_dict() for r in rule_file(str(pdn), db=db)]
    assert len(rulings) == len(games)
    for game, ruling in zip(games, rulings, strict=True):
        if game.tags["Termination"] not in NOT_RULES:
            assert ruling["result"] == game.tags["Result"], game.tags
            assert ruling["reason"] == game.tags["Termination"], game.tags
            assert ruling["ply"] == len(game.moves), game.tags
    return games


@pytest.mark.slow
@needs_scan
def test_scan_runs_in_its_folder_with_its_options_and_no_wrapper(tmp_path, scan_dir):
    (tmp_path / "ballots.pdn").write_text(BALLOTS)
    pdn = tmp_path / "scan.pdn"
    result = match(
        "--engine", scan_spec(scan_dir, "Scan-a"),
        "--engine", scan_spec(scan_dir, "Scan-b", book="false", threads="1"),
        "--openings", str(tmp_path / "ballots.pdn"), "--depth", "2", "--time", "5",
        "--pdn", str(pdn), "--max-plies", "400",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    games = ruled_the_same(pdn)
    assert len(games) == 4
    assert {g.tags["White"] for g in games} == {"Scan-a", "Scan-b"}
    assert all(g.tags["Termination"] not in NOT_RULES for g in games), [g.tags for g in games]


@pytest.mark.slow
@needs_scan
def test_an_option_scan_does_not_declare_is_refused_before_the_match(tmp_path, scan_dir):
    pdn = tmp_path / "none.pdn"
    result = match(
        "--engine", scan_spec(scan_dir, hash="64"), "--engine", scan_spec(scan_dir),
        "--pdn", str(pdn),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "engine Scan: unknown option 'hash' (its parameters: variant, book," in result.output
    assert "Traceback" not in result.output
    assert not pdn.exists() and not Path(str(pdn) + ".partial").exists()
    result = match(
        "--engine", scan_spec(scan_dir, **{"tt-size": "99"}), "--engine", scan_spec(scan_dir)
    )  # fmt: skip
    assert result.exit_code == 2
    assert "option tt-size=99: the value must be between 16 and 30" in result.output


@pytest.mark.slow
@needs_scan
def test_scan_games_at_once_are_the_games_played_one_at_a_time(tmp_path, scan_dir):
    (tmp_path / "ballots.pdn").write_text(BALLOTS)
    texts = []
    for n in (1, 2):
        pdn = tmp_path / f"c{n}.pdn"
        result = match(
            "--engine", scan_spec(scan_dir, "A"), "--engine", scan_spec(scan_dir, "B"),
            "--openings", str(tmp_path / "ballots.pdn"), "--depth", "3", "--time", "5",
            "--concurrency", str(n), "--pdn", str(pdn),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        texts.append(pdn.read_text())
    assert texts[0] == texts[1]


# Frisian endgames of 3 pieces: each side's value in the Frisian tables is known
FRISIAN_FENS = ["W:WK46,K47:B5", "B:WK46,K47:B5", "W:W33,K47:BK5", "B:W33,K47:BK5",
                "W:W28:BK3,K4", "B:W28:BK3,K4"]  # fmt: skip


@pytest.mark.slow
@needs_scan
def test_scan_plays_frisian_against_the_frisian_tables_which_never_score_below_the_value(
    tmp_path, tmp_path_factory, scan_dir
):
    db = session_database(tmp_path_factory, "frisian", 3)
    (tmp_path / "fr.txt").write_text("\n".join(FRISIAN_FENS) + "\n")
    tables = (
        f"name=tables cmd={sys.executable} arg=-m arg=tablebase.cli arg=hub arg=--variant "
        f"arg=frisian arg=--db arg={db}"
    )
    pdn = tmp_path / "frisian.pdn"
    result = match(
        "--variant", "frisian", "--engine", scan_spec(scan_dir, "Scan"), "--engine", tables,
        "--openings", str(tmp_path / "fr.txt"), "--db", str(db), "--adjudicate", "rules",
        "--depth", "4", "--time", "5", "--pdn", str(pdn),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    games = list(read_games(str(pdn)))
    assert len(games) == 2 * len(FRISIAN_FENS)
    assert all(g.tags["GameType"] == str(FRISIAN.game_type) for g in games)
    with tablebase.open(db) as tb:
        for game in games:
            start = Position.from_fen(game.tags["FEN"], FRISIAN)
            value = rule_position(tb, start, *_count(start)).white_score
            assert value is not None
            tables_white = game.tags["White"] == "tables"
            got = {FRISIAN.result_for(k): k for k in (0, 1, 2)}[game.tags["Result"]]
            mine, owed = (got, value) if tables_white else (2 - got, 2 - value)
            assert mine >= owed, (game.tags, value)
        ruled_the_same(pdn, tb)


def _count(start: Position):
    state = DrawState(start)
    return state.count, state.counter, state.seen_twice()


def test_scan_tests_need_no_scan_to_be_collected(tmp_path):
    """(The fast tier's guard: the module imports and its helpers run without Scan.)"""
    spec = book_engine(tmp_path / "b.json", {}, "B")
    assert "hub_book.py" in spec
