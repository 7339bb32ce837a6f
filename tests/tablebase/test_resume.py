"""Crash safety: kill -9 and resume, damaged files, missing slices."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tablebase.build.folderlock import LOCK_NAME
from tablebase.material.slices import parse_slice
from tablebase.probe.database import MissingSliceError, Tablebase
from tablebase.rules.variants import INTERNATIONAL
from tablebase.storage.reader import read_slice
from tablebase.storage.slicefile import TableFileError, slice_path
from tests.tablebase.conftest import same_table

CLI = [sys.executable, "-m", "tablebase.cli"]


def _generate(db: Path, pieces: int = 3, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [
            *CLI,
            "generate",
            "--variant",
            "international",
            "--pieces",
            str(pieces),
            "--db",
            str(db),
            "--jobs",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kw,
    )


def _same_files(a: Path, b: Path) -> None:
    """The same slice files, table for table (the build lock file aside), and no others."""
    names_a = sorted(p.name for p in a.iterdir() if p.name != LOCK_NAME)
    names_b = sorted(p.name for p in b.iterdir() if p.name != LOCK_NAME)
    assert names_a == names_b
    for name in names_a:
        assert same_table(a / name, b / name), name


@pytest.mark.slow  # 8-30 s in the quick tier (issue 51): CI's slow tier runs it
def test_killed_run_resumes_to_identical_files(db3_international, tmp_path) -> None:
    db = tmp_path / "international"
    proc = _generate(db)
    deadline = time.time() + 300
    while time.time() < deadline and len(list(db.glob("*.h5"))) < 3:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its worker processes, mid-build
    proc.wait()
    done_before = len(list(db.glob("*.h5")))
    assert 3 <= done_before < 17, "the build should have been interrupted midway"
    proc = _generate(db)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "verified, kept" in err  # the slices of the first run were kept
    assert not list(db.glob("*.tmp"))
    _same_files(db, db3_international)


def test_damaged_file_is_reported_by_name_and_regenerated(db3_international, tmp_path) -> None:
    db = tmp_path / "international"
    shutil.copytree(db3_international, db)
    s = parse_slice("0120")
    path = slice_path(db, s)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # flip bits inside the compressed values
    path.write_bytes(bytes(data))
    with pytest.raises(TableFileError) as e:
        read_slice(path, INTERNATIONAL, s)
    assert "0120.h5" in str(e.value)
    with Tablebase(db) as tb, pytest.raises(TableFileError, match="0120.h5"):
        tb.probe("W:WK38:B4,18")
    truncated = slice_path(db, parse_slice("2010"))
    truncated.write_bytes(truncated.read_bytes()[:1000])
    with pytest.raises(TableFileError, match="2010.h5"):
        read_slice(truncated, INTERNATIONAL, parse_slice("2010"))
    proc = _generate(db)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "0120.h5" in err and "2010.h5" in err  # named when found damaged
    _same_files(db, db3_international)


def test_probe_outside_the_database_names_the_slice(db3_international) -> None:
    with Tablebase(db3_international) as tb:
        with pytest.raises(MissingSliceError) as e:
            tb.probe("W:W31,32:B1,2")
        assert e.value.slice == "2020"
        assert "2020" in str(e.value)
    r = subprocess.run(
        [*CLI, "probe", "--db", str(db3_international), "W:W31,32:B1,2"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert "slice 2020" in r.stderr and "Traceback" not in r.stderr
