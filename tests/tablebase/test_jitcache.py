"""The compiled-code cache folder follows the project's sources (tablebase.jitcache)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numba

import tablebase
from tablebase import jitcache

ROOT = Path(tablebase.__file__).resolve().parent.parent


def _copy_sources(dst: Path) -> None:
    for package in ("tablebase", "adjudicator"):
        shutil.copytree(ROOT / package, dst / package, ignore=shutil.ignore_patterns("__pycache__"))


def test_digest_changes_with_any_source_and_only_then(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    before = jitcache.source_digest(tmp_path)
    assert jitcache.source_digest(tmp_path) == before
    (tmp_path / "tablebase" / "notes.txt").write_text("not a source")
    assert jitcache.source_digest(tmp_path) == before
    movegen = tmp_path / "tablebase" / "rules" / "movegen.py"
    text = movegen.read_text()
    movegen.write_text(text + "\n# changed\n")
    assert jitcache.source_digest(tmp_path) != before  # a module others inline from
    movegen.write_text(text)
    assert jitcache.source_digest(tmp_path) == before
    (tmp_path / "adjudicator" / "replaycore.py").write_text("# replaced\n")
    assert jitcache.source_digest(tmp_path) != before


def test_numba_caches_in_the_folder_of_the_current_sources() -> None:
    folder = Path(numba.config.CACHE_DIR)
    assert folder.name == jitcache.source_digest(ROOT)
    assert folder.parent == jitcache.cache_base()
    assert folder.is_dir()


def test_cache_base_honours_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "n"))
    assert jitcache.cache_base() == tmp_path / "n" / "draughts-tablebase"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert jitcache.cache_base() == tmp_path / "x" / "draughts-tablebase" / "numba"


def test_old_folders_are_pruned_newest_and_recent_kept(tmp_path: Path) -> None:
    day = jitcache.STALE_SECONDS
    now = 100 * day
    ages = [50 * day, 40 * day, 3 * day, 0.5 * day, 5 * day, 4 * day, 1, 2]  # digest0..7
    for i, age in enumerate(ages):
        d = tmp_path / f"digest{i}"
        d.mkdir()
        os.utime(d, (now - age, now - age))
    jitcache._prune(tmp_path, now)
    kept = sorted(p.name for p in tmp_path.iterdir())
    # the four most recent (7, 6, 3, 2) and, beyond them, those used within a day (none)
    assert kept == ["digest2", "digest3", "digest6", "digest7"]
    (tmp_path / "digest9").mkdir()
    os.utime(tmp_path / "digest9", (now - 0.2 * day, now - 0.2 * day))
    os.utime(tmp_path / "digest7", (now - 0.9 * day, now - 0.9 * day))
    jitcache._prune(tmp_path, now)  # digest2 (3 days) goes; digest7 (0.9 days) stays
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "digest3",
        "digest6",
        "digest7",
        "digest9",
    ]
