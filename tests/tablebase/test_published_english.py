"""English tables against facts published independently of this project
(``docs/reference/english_published.json``): those whose slices a test can afford to
build. ``scripts/check_published.py`` checks the rest (6 and 7 pieces) on a full build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tablebase.material.slices import Slice, material_pairs, parse_slice
from tablebase.probe.database import Tablebase
from tablebase.rules.position import Position
from tablebase.rules.variants import ENGLISH
from tablebase.storage.reader import read_attrs
from tablebase.storage.slicefile import slice_path
from tests.tablebase.conftest import solve_into

FACTS = json.loads(
    (Path(__file__).resolve().parents[2] / "docs/reference/english_published.json").read_text()
)
RESULTS = {"win": 1, "draw": 0, "loss": -1}
KINGS_ONLY_5 = parse_slice("0302")  # three kings against two, and the slices it needs


def material(fen: str) -> Slice:
    """The slice of ``fen``'s pieces as white and black hold them (either side to move)."""
    return Slice(*Position.from_fen(fen, ENGLISH).piece_count())


@pytest.fixture(scope="module")
def db_kings5(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("published") / "english"
    return solve_into(db, "english", material_pairs([KINGS_ONLY_5], lambda s: False))


def test_the_facts_are_the_english_ones() -> None:
    assert FACTS["variant"] == "english"
    assert len(FACTS["positions"]) >= 6 and FACTS["slices"]
    for f in FACTS["positions"]:
        assert f["result"] in RESULTS and f["source"], f


def test_published_slice_counts(db3_english) -> None:
    for f in FACTS["slices"]:
        attrs = read_attrs(slice_path(db3_english, parse_slice(f["material"])))
        for key in ("positions", "wins", "draws", "losses", "longest_win"):
            assert attrs[key] == f[key], (f["material"], key)


def test_published_positions_up_to_five_kings(db_kings5) -> None:
    """Every published position of three kings against two (either side to move, so
    both slices of the pair): its win, draw or loss."""
    facts = [f for f in FACTS["positions"] if material(f["fen"]) in KINGS_ONLY_5.pair]
    assert len(facts) >= 3
    with Tablebase(db_kings5) as tb:
        for f in facts:
            assert tb.probe_wdl(f["fen"]) == RESULTS[f["result"]], f


SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_published.py"


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300
    )


def test_the_script_checks_the_facts_it_can_and_lists_the_rest(db_kings5) -> None:
    """On a database of three kings against two, the script checks that pair's published
    positions (and slices, where published) and lists the rest as not checked."""
    r = run_script("--db", str(db_kings5))
    assert r.returncode == 0, r.stdout + r.stderr
    ok = [ln for ln in r.stdout.splitlines() if ln.endswith(": ok")]
    facts = [f for f in FACTS["positions"] if material(f["fen"]) in KINGS_ONLY_5.pair]
    assert len(ok) >= len(facts) >= 3
    assert "not checked" in r.stdout and "DISAGREE" not in r.stdout
    assert r.stdout.splitlines()[-1].endswith(" facts checked, 0 disagree")


def test_the_script_refuses_another_variants_database(db3_international, tmp_path) -> None:
    """An International database is not checked against the English facts (it was, and
    every slice 'disagreed' before a traceback): one line, exit 2."""
    r = run_script("--db", str(db3_international))
    assert (r.returncode, r.stdout) == (2, ""), r.stdout + r.stderr
    assert r.stderr == "error: no published facts for international (there are for: english)\n"
    r = run_script("--db", str(db3_international), "--variant", "english")
    assert r.returncode == 2 and "holds international tables, not english" in r.stderr
    r = run_script("--db", str(tmp_path / "none"))
    assert r.returncode == 2 and "no readable slice files" in r.stderr
    assert "Traceback" not in r.stderr
