"""Export to Scan's bitbase files and reading them back (``tablebase.scanbb``), through the
command line: the files' layout and lengths, the round trip on every covered entry
(``compare-scan``) and, independently of the export's own index walk, position by position
through the reader (``ScanBitbases``: a position's entry computed from its squares) against
our prober; capture positions played out as Scan does; damaged and missing files found."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

import tablebase
from tablebase.material.slices import all_slices
from tablebase.rules import has_capture
from tablebase.rules.position import Position
from tablebase.rules.variants import FRISIAN, INTERNATIONAL, get_variant
from tablebase.scanbb.codec import BYTE_LENGTHS, decoded_length
from tablebase.scanbb.files import ScanBitbases, id_path
from tablebase.scanbb.index import ScanId, position_of_entry, scan_entry_of, scan_ids
from tests.conftest import session_database, tablebase_cli


def export(db: Path, dst: Path) -> str:
    r = tablebase_cli("export", "--format", "scan", str(db), str(dst))
    return r.stdout


def random_positions(variant, pieces: int, n: int, seed: int) -> list[Position]:
    """``n`` positions from random entries of random ids of 2..``pieces`` pieces (no two
    men on a square; runs where the id has them)."""
    rng = random.Random(seed)
    ids = scan_ids(pieces)
    out = []
    while len(out) < n:
        sid = rng.choice(ids)
        pos = position_of_entry(variant, sid, rng.randrange(sid.size(variant)))
        if pos is not None:
            out.append(pos if rng.random() < 0.5 else pos.flipped())
    return out


def check_reader_against_tables(db: Path, dst: Path, variant, pieces: int, n: int) -> None:
    bases = ScanBitbases(dst, variant)
    covered = 0
    with tablebase.open(db) as tb:
        for pos in random_positions(variant, pieces, n, seed=pieces):
            ours = tb.probe_wdl(pos)
            if not has_capture(pos):
                covered += 1
                assert bases.stored(pos) == ours, pos.fen()
            assert bases.probe(pos) == ours, pos.fen()  # captures played out as Scan does
    assert covered > n // 3


@pytest.fixture(scope="module")
def intl3_export(tmp_path_factory) -> tuple[Path, Path, str]:
    db = session_database(tmp_path_factory, "international", 3)
    dst = tmp_path_factory.mktemp("scan-intl3") / "data"
    return db, dst, export(db, dst)


def test_export_writes_one_file_per_id_of_the_decoded_length(intl3_export) -> None:
    db, dst, out = intl3_export
    ids = scan_ids(3)
    assert "16 Scan bitbase files" in out and "Scan loads them with bb-size 3" in out
    files = sorted(p.relative_to(dst).as_posix() for p in dst.rglob("*") if p.is_file())
    assert files == sorted(f"bb/{s.pieces}/{s.name}" for s in ids)
    assert "bb/2/0011" in files and "bb/3/1110" in files  # 1110: W man and king against B man
    for sid in ids:
        data = np.fromfile(id_path(dst, INTERNATIONAL, sid), dtype=np.uint8)
        assert decoded_length(data) == sid.size(INTERNATIONAL)


def test_round_trip_on_every_covered_entry(intl3_export) -> None:
    db, dst, _ = intl3_export
    r = tablebase_cli("compare-scan", str(db), str(dst))
    assert "16 files" in r.stdout and ": 0 differ" in r.stdout
    # king against king: the positions where white's king cannot take black's, counted here
    covered = sum(
        1
        for w in range(50)
        for b in range(50)
        if w != b and not has_capture(Position(0, 1 << w, 0, 1 << b, True))
    )
    assert 0 < covered < 50 * 49
    assert f"0011: {covered:,} positions agree" in r.stdout.splitlines()
    # compare-scan takes Scan's own folder (holding data/) and the bb folder alike
    assert tablebase_cli("compare-scan", str(db), str(dst.parent)).returncode == 0
    assert tablebase_cli("compare-scan", str(db), str(dst / "bb")).returncode == 0


def test_reader_agrees_with_the_tables_position_by_position(intl3_export) -> None:
    db, dst, _ = intl3_export
    check_reader_against_tables(db, dst, INTERNATIONAL, 3, 3000)


def test_probe_scan_command(intl3_export) -> None:
    db, dst, _ = intl3_export
    fens = ["W:WK10,K20:B40", "B:WK10,K20:B40", "W:WK1:BK50", "W:WK34:B23,28", "B:W33:BK29"]
    r = tablebase_cli("probe-scan", str(dst), *fens)
    names = {1: "win", 0: "draw", -1: "loss"}
    with tablebase.open(db) as tb:
        assert r.stdout.splitlines() == [f"{f}: {names[tb.probe_wdl(f)]}" for f in fens]
    assert has_capture(Position.from_fen("W:WK34:B23,28"))  # played out through 2 pieces
    assert has_capture(Position.from_fen("B:W33:BK29"))
    five = "W:WK46,K47,K48:B6,K50"  # no capture: read from its own file
    assert not has_capture(Position.from_fen(five))
    bad = tablebase_cli("probe-scan", str(dst), five, check=False)
    assert bad.returncode == 2 and "missing bitbase file" in bad.stderr
    assert "bb/5/0131" in bad.stderr  # our slice 0311 is Scan's 0131 (men first)


def test_a_changed_value_is_found_and_named(intl3_export, tmp_path) -> None:
    db, dst, _ = intl3_export
    copy = tmp_path / "data"
    shutil.copytree(dst, copy)
    path = id_path(copy, INTERNATIONAL, ScanId(1, 0, 1, 1))  # ours 1101
    pos = Position.from_fen("W:W35,K3:BK50")  # no capture: Scan reads its entry
    assert not has_capture(pos)
    _, entry = scan_entry_of(pos)
    data = bytearray(path.read_bytes())
    ends = np.cumsum(BYTE_LENGTHS[np.frombuffer(bytes(data), dtype=np.uint8)])
    i = int(np.searchsorted(ends, entry, side="right"))  # the byte holding the entry
    data[i] = data[i] - data[i] % 3 + (data[i] % 3 + 1) % 3  # same length, another value
    path.write_bytes(bytes(data))
    r = tablebase_cli("compare-scan", str(db), str(copy), check=False)
    assert r.returncode == 1
    line = next(x for x in r.stdout.splitlines() if x.startswith("1011:"))
    assert "positions differ (first: entry" in line and "W:W" in line  # its FEN
    assert all(": 0 differ" in x or "agree" in x for x in r.stdout.splitlines()[:-1] if x != line)
    # a file one byte shorter decodes to another length: refused, as Scan refuses it
    path.write_bytes(bytes(data[:-1]))
    r = tablebase_cli("compare-scan", str(db), str(copy), check=False)
    assert r.returncode == 1 and "1011: " in r.stdout and "Scan expects" in r.stdout
    path.unlink()
    r = tablebase_cli("compare-scan", str(db), str(copy), check=False)
    assert r.returncode == 1 and "missing bitbase file" in r.stdout


def test_bad_input_is_a_clear_error(intl3_export, tmp_path, tmp_path_factory) -> None:
    db, dst, _ = intl3_export
    r = tablebase_cli("export", "--format", "scan", str(db), str(dst), check=False)
    assert r.returncode == 2 and "already exists" in r.stderr and "Traceback" not in r.stderr
    assert "resume an interrupted export" in r.stderr
    r = tablebase_cli("export", "--format", "scan", "--wdl-only", str(db), str(tmp_path / "x"),
                      check=False)  # fmt: skip
    assert r.returncode == 2 and "--format scan takes none of" in r.stderr
    r = tablebase_cli("export", "--format", "scan", str(tmp_path / "none"), str(tmp_path / "y"),
                      check=False)  # fmt: skip
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = tablebase_cli("compare-scan", str(db), str(tmp_path), check=False)
    assert r.returncode == 2 and "no bb/ folder" in r.stderr
    english = session_database(tmp_path_factory, "english", 3)
    r = tablebase_cli("export", "--format", "scan", str(english), str(tmp_path / "z"),
                      check=False)  # fmt: skip
    assert r.returncode == 2 and "Scan has no bitbases of english" in r.stderr


def test_an_interrupted_export_resumes(intl3_export, tmp_path) -> None:
    """``--resume`` keeps the whole files of an interrupted export and writes the others: one
    never written, one left under its temporary name, one cut short. The folder ends as a
    whole export leaves it, byte for byte."""
    db, dst, _ = intl3_export
    part = tmp_path / "data"
    shutil.copytree(dst, part)
    files = sorted(p for p in part.rglob("*") if p.is_file())
    assert len(files) == 16
    files[-1].unlink()  # never written
    data = files[-2].read_bytes()
    files[-2].unlink()
    files[-2].with_name(files[-2].name + ".tmp").write_bytes(data[: len(data) // 2])
    files[0].write_bytes(files[0].read_bytes()[:-1])  # cut short: decodes to fewer entries
    r = tablebase_cli("export", "--format", "scan", "--resume", str(db), str(part))
    assert (
        "16 Scan bitbase files" in r.stdout and "(13 kept from the interrupted export)" in r.stdout
    )
    assert r.stderr.count(", kept") == 13
    for f in dst.rglob("*"):
        if f.is_file():
            assert (part / f.relative_to(dst)).read_bytes() == f.read_bytes(), f
    assert sorted(p.name for p in part.rglob("*") if p.is_file()) == sorted(
        p.name for p in dst.rglob("*") if p.is_file()
    )  # the temporary file is gone
    r = tablebase_cli("export", "--resume", str(db), str(tmp_path / "t"), check=False)
    assert r.returncode == 2 and "--resume goes with --format scan" in r.stderr


def test_frisian_round_trip_with_king_runs(tmp_path_factory) -> None:
    db = session_database(tmp_path_factory, "frisian", 3)
    dst = tmp_path_factory.mktemp("scan-fris3") / "data"
    out = export(db, dst)
    assert "bb-size 3" in out
    assert id_path(dst, FRISIAN, ScanId(1, 1, 1, 0)).exists()
    assert str(id_path(dst, FRISIAN, ScanId(1, 1, 1, 0))).endswith("bb_frisian/3/1110")
    r = tablebase_cli("compare-scan", str(db), str(dst))
    assert ": 0 differ" in r.stdout
    check_reader_against_tables(db, dst, FRISIAN, 3, 2000)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["international", "frisian"])
def test_round_trip_on_four_pieces(tmp_path_factory, variant: str) -> None:
    db = session_database(tmp_path_factory, variant, 4)
    dst = tmp_path_factory.mktemp(f"scan-{variant}4") / "data"
    assert "bb-size 4" in export(db, dst)
    r = tablebase_cli("compare-scan", str(db), str(dst))
    assert f"{len(all_slices(4))} files" in r.stdout and ": 0 differ" in r.stdout
    check_reader_against_tables(db, dst, get_variant(variant), 4, 20000)
