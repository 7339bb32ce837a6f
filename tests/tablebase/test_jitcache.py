"""The compiled-code cache folder follows the project's sources (tablebase.jitcache)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import pytest

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


def test_a_folder_in_use_by_a_running_process_is_never_pruned(tmp_path: Path) -> None:
    day = jitcache.STALE_SECONDS
    now = 100 * day
    folders = [tmp_path / f"digest{i}" for i in range(jitcache.KEEP + 2)]
    for d in folders:
        d.mkdir()
    # another process (a build started long ago) holds digest0
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from tablebase import jitcache; "
            "jitcache.hold(Path(sys.argv[1])); print('held', flush=True); sys.stdin.read()",
            str(folders[0]),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        for i, d in enumerate(folders):  # digest0 the oldest, every one stale
            os.utime(d, (now - (50 - i) * day, now - (50 - i) * day))
        jitcache._prune(tmp_path, now)
        kept = sorted(p.name for p in tmp_path.iterdir())
        # digest0 and digest1 are beyond the KEEP newest and stale: digest1 goes, digest0
        # stays because a process uses it
        assert kept == ["digest0"] + [d.name for d in folders[2:]]
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    os.utime(folders[0], (now - 50 * day, now - 50 * day))
    jitcache._prune(tmp_path, now)  # the holder has exited: its lock is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == [d.name for d in folders[2:]]


def test_this_process_holds_its_own_cache_folder() -> None:
    folder = Path(numba.config.CACHE_DIR)
    fd = os.open(folder / jitcache.IN_USE, os.O_RDWR)
    try:
        import fcntl

        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
