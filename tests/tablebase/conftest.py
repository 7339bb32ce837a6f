"""Fixtures for the generator tests: small databases built once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablebase.generator import run_pair_task
from tablebase.slices import Slice, build_pairs


def build_db(directory: Path, variant: str, pieces: int) -> Path:
    """Solve every pair up to ``pieces`` pieces in this process, in build order."""
    return solve_into(directory, variant, build_pairs(pieces))


def solve_into(directory: Path, variant: str, pairs: list[tuple[Slice, ...]]) -> Path:
    """Solve ``pairs`` (in build order) into ``directory`` in this process."""
    directory.mkdir(parents=True, exist_ok=True)
    for pair in pairs:
        run_pair_task(variant, tuple(s.name for s in pair), str(directory), threads=2)
    return directory


@pytest.fixture(scope="session")
def db3_international(tmp_path_factory) -> Path:
    """The 2-3 piece International database."""
    return build_db(tmp_path_factory.mktemp("db") / "international", "international", 3)


@pytest.fixture(scope="session")
def db3_english(tmp_path_factory) -> Path:
    """The 2-3 piece English database."""
    return build_db(tmp_path_factory.mktemp("db") / "english", "english", 3)
