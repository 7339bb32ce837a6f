"""Compiling the kernels before a build (tablebase.build.warmup, ``tablebase compile``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tablebase.build import warmup


def _cli(cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run(
        [sys.executable, "-m", "tablebase.cli", *args], capture_output=True, text=True, env=env
    )


def _cached_files(cache: Path) -> set[str]:
    return {str(p.relative_to(cache)) for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc")}


def test_marker_is_per_variant_and_unknown_part_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(warmup.numba.config, "CACHE_DIR", str(tmp_path))
    assert not warmup.is_warm("international")
    (tmp_path / ".warm-international").touch()
    assert warmup.is_warm("international")
    assert not warmup.is_warm("frisian")
    assert not warmup.is_warm("international", larger=True)  # tablebase compile's own mark
    (tmp_path / ".warm-international-larger").touch()
    assert warmup.is_warm("international", larger=True)
    with pytest.raises(ValueError, match="unknown warm-up part 'bogus'"):
        warmup.run_part("bogus", "international", str(tmp_path))


@pytest.mark.slow
def test_compile_then_generate_compiles_nothing(tmp_path: Path) -> None:
    """With an empty cache, ``tablebase compile`` caches what a 2-4 build needs: the build
    afterwards writes no new compiled code and logs no compile step."""
    cache = tmp_path / "numba"
    r = _cli(cache, "compile")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kernels compiled in" in r.stdout
    before = _cached_files(cache)
    assert before
    again = _cli(cache, "compile")
    assert "already compiled" in again.stdout
    db = tmp_path / "db"
    r = _cli(cache, "generate", "--variant", "international", "--pieces", "4", "--db", str(db))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compiling kernels" not in r.stderr
    assert _cached_files(cache) == before


@pytest.mark.slow
def test_cold_generate_says_it_compiles(tmp_path: Path) -> None:
    cache = tmp_path / "numba"
    db = tmp_path / "db"
    r = _cli(cache, "generate", "--variant", "english", "--pieces", "3", "--db", str(db))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compiling kernels, first run only" in r.stderr
    assert "kernels compiled in" in r.stderr
    assert len(list(db.glob("*.h5"))) > 0
