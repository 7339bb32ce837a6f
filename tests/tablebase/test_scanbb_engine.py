"""Exported bitbases loaded and read by Scan 3.1 itself (``tablebase.scanbb.engine``).

Scan must start on the exported files (``init`` answers ``ready``: every file of up to
``bb-size`` pieces there and of its index's length), refuse a folder that lacks one, and its
own probe of sampled positions (random entries and random moves from them, so that Frisian
king runs arise in Scan's play) must equal our tables' value. Needs the Scan binary in the
environment variable ``SCAN`` (``.ci/run`` builds it from ``../shared/engines/scan``);
skipped with that reason otherwise.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

import tablebase
from tablebase.rules import has_capture
from tablebase.rules.variants import FRISIAN, INTERNATIONAL, get_variant
from tablebase.scanbb.engine import (
    ScanEngineError,
    hub_start,
    sample_lines,
    scan_folder,
    scan_values,
)
from tablebase.scanbb.files import id_path
from tablebase.scanbb.index import ScanId
from tests.conftest import session_database, tablebase_cli

SCAN = os.environ.get("SCAN", "")
needs_scan = pytest.mark.skipif(
    not (SCAN and Path(SCAN).is_file()),
    reason="Scan not built: set SCAN to its binary (.ci/run builds it from ../shared/engines/scan)",
)
pytestmark = needs_scan


def exported(tmp_path_factory, variant: str, pieces: int) -> tuple[Path, Path]:
    db = session_database(tmp_path_factory, variant, pieces)
    root = tmp_path_factory.mktemp(f"scan-{variant}{pieces}") / "data"
    tablebase_cli("export", "--format", "scan", str(db), str(root))
    return db, root


def agree_with_scan(db: Path, folder: Path, variant, pieces: int, lines: int, seed: int) -> int:
    """Scan's value of every position of ``lines`` sampled lines equals ours; returns how
    many positions without a capture for the side to move (those Scan reads from its
    files) were compared."""
    sampled = sample_lines(variant, pieces, lines, random.Random(seed))
    values = scan_values(folder, [line for line, _ in sampled])
    covered = runs = 0
    with tablebase.open(db) as tb:
        for (line, shown), got in zip(sampled, values, strict=True):
            for pos, value in zip(shown, got, strict=True):
                assert value == tb.probe_wdl(pos), (line, pos.fen())
                covered += not has_capture(pos)
                runs += pos.king_runs != ((0, 0), (0, 0))
    if variant.king_move_limit:
        assert runs > lines // 10  # Frisian runs reached by Scan's own play
    return covered


def test_scan_starts_on_the_export_and_reads_our_values(tmp_path_factory, tmp_path) -> None:
    db, root = exported(tmp_path_factory, "international", 3)
    folder = scan_folder(SCAN, tmp_path / "scan", INTERNATIONAL, root, 3)
    assert "ready" in hub_start(folder)
    assert agree_with_scan(db, folder, INTERNATIONAL, 3, 300, seed=1) > 300


def test_scan_refuses_a_missing_or_damaged_file(tmp_path_factory, tmp_path) -> None:
    db, root = exported(tmp_path_factory, "international", 3)
    copy = tmp_path / "data"
    shutil.copytree(root, copy)
    # bb-size 4 asks for four-piece files the export of 2-3 pieces has not
    folder = scan_folder(SCAN, tmp_path / "scan4", INTERNATIONAL, copy, 4)
    with pytest.raises(ScanEngineError, match=r'unable to open file "data/bb/4/'):
        hub_start(folder)
    path = id_path(copy, INTERNATIONAL, ScanId(1, 1, 1, 0))
    path.write_bytes(path.read_bytes()[:-1])  # one byte short: another decoded length
    folder = scan_folder(SCAN, tmp_path / "scan3", INTERNATIONAL, copy, 3)
    with pytest.raises(ScanEngineError, match="unmatched uncompressed size: data/bb/3/1110"):
        hub_start(folder)


def test_frisian_scan_reads_our_values_with_king_runs(tmp_path_factory, tmp_path) -> None:
    db, root = exported(tmp_path_factory, "frisian", 3)
    folder = scan_folder(SCAN, tmp_path / "scan", FRISIAN, root, 3)
    assert "ready" in hub_start(folder)
    assert agree_with_scan(db, folder, FRISIAN, 3, 300, seed=2) > 300


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["international", "frisian"])
def test_scan_reads_our_four_piece_values(tmp_path_factory, tmp_path, variant: str) -> None:
    v = get_variant(variant)
    db, root = exported(tmp_path_factory, variant, 4)
    folder = scan_folder(SCAN, tmp_path / "scan", v, root, 4)
    assert "ready" in hub_start(folder)
    assert agree_with_scan(db, folder, v, 4, 2000, seed=4) > 2000
