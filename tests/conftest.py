"""Shared fixtures: the reference data and real game files of ``tests/data`` (their sources:
``tests/data/README.md``), hypothesis strategies of positions, the CLI in a child process.

A missing data file fails the test that needs it (it is part of the repository), never a skip.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(__file__).resolve().parent / "data"


def tablebase_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``tablebase ARGS`` in a child process (output captured as text); with ``check``,
    fail the calling test unless it exits 0."""
    r = subprocess.run(
        [sys.executable, "-m", "tablebase.cli", *args], capture_output=True, text=True
    )
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def data_file(*parts: str) -> Path:
    """Path to ``tests/data/<parts>``; fails the calling test when it does not exist."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"missing test data file {path}", pytrace=False)
    return path


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The ``tests/data/reference`` folder."""
    return data_file("reference")


def session_database(tmp_path_factory: pytest.TempPathFactory, variant: str, pieces: int) -> Path:
    """The ``variant`` database of every slice up to ``pieces`` pieces, solved the first time
    a test of the run asks for it and shared by every test after: read it, never change it
    (copy it first). It lives at a fixed place under the run's temporary folder, so that
    every import of this module finds the same one, and under ``pytest -n`` (pytest-xdist)
    every worker process finds the one the first built: a lock file lets one worker build
    while the others wait. The database of ``pieces`` starts from a copy of the one of
    ``pieces - 1`` (built first, and shared in turn), so each slice is solved once a run."""
    root = _run_temp(tmp_path_factory) / "session-databases"
    directory = root / str(pieces) / variant
    done = directory.parent / f"{variant}.done"
    if done.exists():
        return directory
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{pieces}-{variant}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if not done.exists():
            from tablebase.build.task import run_pair_task
            from tablebase.material.slices import build_pairs

            if directory.exists():  # left half-built by a worker that died
                shutil.rmtree(directory)
            pairs = build_pairs(pieces)
            if pieces > 2:
                shutil.copytree(session_database(tmp_path_factory, variant, pieces - 1), directory)
                pairs = [p for p in pairs if p[0].pieces == pieces]
            directory.mkdir(parents=True, exist_ok=True)
            for pair in pairs:
                run_pair_task(variant, tuple(s.name for s in pair), str(directory), threads=2)
            done.touch()
    return directory


def _run_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole run: the session's own, or under pytest-xdist the
    folder that holds every worker's (``.../pytest-N`` above ``.../pytest-N/popen-gwK``)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def perft_reference() -> dict:
    """``tests/data/reference/perft.json``: published perft counts of both variants."""
    return json.loads(data_file("reference", "perft.json").read_text())


@pytest.fixture(scope="session")
def movegen_cases() -> list[dict]:
    """``tests/data/reference/movegen_cases.jsonl``: positions with complete move lists."""
    path = data_file("reference", "movegen_cases.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- hypothesis strategies, shared as session fixtures (draw them with ``st.data()``) ------


def _random_position(draw, variant, max_pieces: int):
    from hypothesis import strategies as st

    from tablebase.rules.position import Position

    squares = draw(
        st.lists(st.integers(1, variant.squares), unique=True, min_size=1, max_size=max_pieces)
    )
    kinds = draw(st.lists(st.sampled_from("wWbB"), min_size=len(squares), max_size=len(squares)))
    boards = {"w": 0, "W": 0, "b": 0, "B": 0}
    for square, kind in zip(squares, kinds, strict=True):
        b = 1 << (square - 1)
        if kind == "w" and b & variant.white_promotion_row:
            kind = "W"  # a man cannot stand on its own promotion row
        if kind == "b" and b & variant.black_promotion_row:
            kind = "B"
        boards[kind] |= b
    white = draw(st.booleans())
    return Position(boards["w"], boards["W"], boards["b"], boards["B"], white, variant)


def _playout_position(draw, variant, max_plies: int):
    from hypothesis import strategies as st

    from tablebase.rules import legal_moves, play
    from tablebase.rules.position import Position

    choices = draw(st.lists(st.integers(0, 1 << 16), max_size=max_plies))
    pos = Position.start(variant)
    for c in choices:
        moves = legal_moves(pos)
        if not moves:
            break
        pos = play(pos, moves[c % len(moves)])
    return pos


@pytest.fixture(scope="session")
def positions():
    """``positions(variant)``: a hypothesis strategy of positions of ``variant``: random
    placements (men never on their own promotion row, either side to move) and positions
    reached by random playouts from the start."""
    from hypothesis import strategies as st

    def make(variant, max_pieces: int = 16, max_plies: int = 120):
        randoms = st.composite(lambda draw: _random_position(draw, variant, max_pieces))()
        playouts = st.composite(lambda draw: _playout_position(draw, variant, max_plies))()
        return st.one_of(randoms, playouts)

    return make
