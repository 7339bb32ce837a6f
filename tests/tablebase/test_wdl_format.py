"""Format version 2: the compact WDL part, the values part (8 or 16 bits), the WDL-only
export, old and unknown format versions, and ``stats --plot``."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

import tablebase
from tablebase.material.index import BINOM, position_from_index
from tablebase.material.slices import parse_slice
from tablebase.probe.database import DistancesUnavailableError
from tablebase.rules.position import Position
from tablebase.rules.variants import INTERNATIONAL
from tablebase.storage.reader import read_attrs, read_slice, read_wdl
from tablebase.storage.slicefile import DATASET, TableFileError, slice_path
from tablebase.storage.values import decode, encode, narrowed, value_dtype
from tablebase.storage.wdl import DONT_CARE, classify, exact_wdl, unpack
from tests.conftest import session_database, tablebase_cli
from tests.tablebase.conftest import with_a_changed_value

run = tablebase_cli  # tablebase ARGS in a child process


@pytest.fixture(scope="module")
def wdl_copy(db3_international, tmp_path_factory) -> Path:
    """The WDL-only copy of 2-3 pieces in the smaller form (every slice leaving capture
    positions to the prober, as the default copy's slices of six pieces and more do)."""
    dst = tmp_path_factory.mktemp("wdl") / "international"
    r = run("export", "--wdl-only", "--resolve-captures", str(db3_international), str(dst))
    assert "wdl only" in r.stdout and "bits/position" in r.stdout
    assert not any(read_attrs(p)["wdl_captures_stored"] for p in dst.glob("*.h5"))
    return dst


def all_positions(s, variant=INTERNATIONAL) -> list[np.ndarray]:
    """Bitboards of every position of slice ``s`` (index order; once each, whatever the
    king-run states of the variant's index)."""
    boards: list[list[int]] = [[], [], [], []]
    for idx in range(s.boards(variant)):
        *b, ok = position_from_index(idx, variant.squares, variant.per_row, *tuple(s), BINOM)
        if ok:
            for k in range(4):
                boards[k].append(int(b[k]))
    return [np.array(b, dtype=np.uint64) for b in boards]


def test_both_parts_are_read(db3_international) -> None:
    s = parse_slice("1010")
    path = slice_path(db3_international, s)
    a = read_attrs(path)
    assert a["format_version"] == 5 and a["parts"] == "wdl values" and a["value_bits"] == 8
    values = read_slice(path, INTERNATIONAL, s)
    packed = read_wdl(path, INTERNATIONAL, s)
    assert values.dtype == np.uint8 and values.shape == (s.size(INTERNATIONAL),)
    assert packed.shape == ((values.shape[0] + 3) // 4,)
    # the histogram kept with the slice counts the positions at each value
    hist = np.asarray(a["value_histogram"])
    assert hist[0] == a["draws"] and hist[1:].sum() == a["wins"] + a["losses"]
    assert len(hist) - 2 == a["longest_win"]  # the last value is the longest win's


def test_wdl_only_copy_answers_every_position_like_the_values(db3_international, wdl_copy):
    """Every position of every slice, either side to move, captures included; the WDL part
    (the smaller form: captures resolved) holds the own code of every position without a
    capture and fills the other entries for runs (some stored codes differ from the values'
    there, none elsewhere)."""

    full = tablebase.open(db3_international)
    small = tablebase.open(wdl_copy)
    assert full.has_distances and not small.has_distances
    differing = 0
    for s in small.slices():
        boards = all_positions(s)
        for wtm in (True, False):
            want = full.probe_batch_wdl(*boards, wtm)
            got = small.probe_batch_wdl(*boards, wtm)
            np.testing.assert_array_equal(got, want, err_msg=f"{s.name} wtm={wtm}")
        values = read_slice(slice_path(db3_international, s), INTERNATIONAL, s)
        stored = unpack(read_wdl(slice_path(wdl_copy, s), INTERNATIONAL, s), values.shape[0])
        exact = unpack(exact_wdl(values), values.shape[0])
        counts = np.array(tuple(s), dtype=np.int64)
        v = INTERNATIONAL
        care = classify(values, v.rules, BINOM, counts, 4) != DONT_CARE
        np.testing.assert_array_equal(stored[care], exact[care], err_msg=s.name)
        differing += int((stored != exact).sum())
    assert differing > 1000  # the entries that are not positions were filled for runs
    for fen in ("W:WK42:B22", "W:W33:B2", "B:WK1,K7:BK50", "W:W28:B23", "B:W28:B23"):
        assert small.probe_wdl(fen) == full.probe_wdl(fen)
        assert small.probe(fen) == (full.probe_wdl(fen), None)
    with pytest.raises(DistancesUnavailableError):
        small.probe_dtw("W:WK42:B22")
    moves = small.best_moves(Position.from_fen("W:W33:B2"))
    assert moves[0].result == "win" and all(m.dtw is None for m in moves)


def test_wdl_only_open_of_a_full_database(db3_international) -> None:
    with tablebase.open(db3_international, wdl_only=True) as tb:
        assert not tb.has_distances
        assert tb.probe_wdl("W:WK42:B22") == 1
        assert tb.probe("W:WK47:BK4") == (0, None)


def test_export_cli_and_probe_on_the_copy(db3_international, wdl_copy, tmp_path) -> None:
    r = run("probe", "--db", str(wdl_copy), "--json", "W:WK42:B22", "W:WK47:BK4")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[0]["result"] == "win" and lines[0]["dtw"] is None
    assert lines[1]["result"] == "draw"
    src_files = sorted(p.name for p in db3_international.glob("*.h5"))
    assert sorted(p.name for p in wdl_copy.glob("*.h5")) == src_files
    assert all(read_attrs(p)["parts"] == "wdl" for p in wdl_copy.glob("*.h5"))
    assert not any(DATASET in h5py.File(p, "r") for p in wdl_copy.glob("*.h5"))
    # the full copy keeps both parts and the same values
    full = tmp_path / "full"
    run("export", str(db3_international), str(full))
    s = parse_slice("1010")
    np.testing.assert_array_equal(
        read_slice(slice_path(full, s), INTERNATIONAL, s),
        read_slice(slice_path(db3_international, s), INTERNATIONAL, s),
    )
    # refusals: into a folder with slices, a WDL-only copy without --wdl-only
    again = run("export", str(db3_international), str(full), check=False)
    assert again.returncode == 2 and "already holds slice files" in again.stderr
    no_values = run("export", str(wdl_copy), str(tmp_path / "x"), check=False)
    assert no_values.returncode == 2 and "--wdl-only" in no_values.stderr
    assert "Traceback" not in again.stderr + no_values.stderr


def write_v1(db: Path, s, values: np.ndarray, attrs: dict) -> None:
    """A slice file as format version 1 wrote it: one uint8 dataset carrying every attribute."""
    import hashlib

    db.mkdir(parents=True, exist_ok=True)
    with h5py.File(slice_path(db, s), "w") as f:
        ds = f.create_dataset(DATASET, data=values, compression="gzip")
        for k in (
            "variant",
            "material",
            "index_scheme",
            "entries",
            "positions",
            "wins",
            "draws",
            "losses",
            "longest_win",
            "longest_win_index",
            "longest_win_fen",
        ):
            ds.attrs[k] = attrs[k]
        ds.attrs["sha256"] = hashlib.sha256(values.tobytes()).hexdigest()


def test_version_1_files_still_open_and_convert(db3_international, tmp_path) -> None:
    old = tmp_path / "old"
    for path in sorted(db3_international.glob("*.h5")):
        s = parse_slice(path.stem)
        write_v1(old, s, read_slice(path, INTERNATIONAL, s), read_attrs(path))
    assert read_attrs(slice_path(old, parse_slice("1010")))["format_version"] == 1
    with tablebase.open(old) as tb, tablebase.open(old, wdl_only=True) as tw:
        for fen in ("W:WK42:B22", "W:W33:B2", "W:W28:B23"):
            assert tw.probe_wdl(fen) == tb.probe_wdl(fen)
        assert tb.probe("W:WK42:B22") == (1, 7)
    new = tmp_path / "new"
    r = run("export", str(old), str(new))
    assert "wdl and values" in r.stdout
    a = read_attrs(slice_path(new, parse_slice("1010")))
    assert a["format_version"] == 5 and a["longest_win"] == 17
    with tablebase.open(new, wdl_only=True) as tb:
        assert tb.probe_wdl("W:W33:B2") == 1


@pytest.mark.slow  # 8-30 s in the quick tier (issue 51): CI's slow tier runs it
def test_version_1_files_verify_by_blocks(db3_international, tmp_path) -> None:
    """A version 1 database (no WDL part: its codes are its values') is checked by blocks
    within a memory its pairs do not fit as it is loaded: every slice consistent."""
    old = tmp_path / "old"
    for path in sorted(db3_international.glob("*.h5")):
        s = parse_slice(path.stem)
        write_v1(old, s, read_slice(path, INTERNATIONAL, s), read_attrs(path))
    loaded = run("verify", "--db", str(old), "--sample", "9999")
    blocks = run("verify", "--db", str(old), "--sample", "9999", "--memory", "1K")
    ok = [ln for ln in loaded.stdout.splitlines() if ln.endswith("checked, ok")]
    assert len(ok) == 16
    suffix = " (values read by blocks; wdl part compared at the sample)"
    assert blocks.stdout.splitlines() == [ln + suffix for ln in ok]


def test_unknown_format_version_is_refused(db3_international, tmp_path) -> None:
    db = tmp_path / "international"
    db.mkdir()
    s = parse_slice("1010")
    target = slice_path(db, s)
    # a copy by the HDF5 library (without the header, which HDF5 knows nothing of) with a
    # version from the future: a file without a header is parsed as versions 1 and 2 are
    with h5py.File(slice_path(db3_international, s), "r") as src, h5py.File(target, "w") as f:
        for k, v in src.attrs.items():
            f.attrs[k] = v
        for k in src:
            src.copy(src[k], f, k)
        f.attrs["format_version"] = 6
    with pytest.raises(TableFileError, match="format version 6 is not one this program reads"):
        read_slice(target, INTERNATIONAL, s)
    with pytest.raises(TableFileError, match="format version 6"):
        tablebase.open(db)
    r = run("probe", "--db", str(db), "W:W33:B2", check=False)
    assert r.returncode == 2 and "format version 6" in r.stderr
    assert "Traceback" not in r.stderr


def test_two_byte_values_that_fit_are_stored_in_one_byte(db3_international, tmp_path) -> None:
    """Values handed over with two bytes but all within one byte (the other slice of a pair
    solved wide) are written with one, so that the slices depending on them are not
    widened; the largest one-byte value (a loss in 254 plies) still fits."""
    assert narrowed(np.array([0, 255], np.uint16)).dtype == np.uint8
    assert narrowed(np.array([0, 256], np.uint16)).dtype == np.uint16
    s = parse_slice("1010")
    longest = read_attrs(slice_path(db3_international, s))["longest_win"]
    db, values = with_a_changed_value(
        db3_international, tmp_path / "international", "1010", 1, encode(-1, 254), longest
    )
    assert read_attrs(slice_path(db, s))["value_bits"] == 8
    back = read_slice(slice_path(db, s), INTERNATIONAL, s)
    assert back.dtype == np.uint8
    np.testing.assert_array_equal(back, values)


def test_widened_values_round_trip(db3_international, tmp_path) -> None:
    """A slice stored with 16-bit values reads back exactly, probes as before, and holds a
    distance beyond one byte."""
    assert value_dtype(254) == np.uint8 and value_dtype(255) == np.uint16
    with pytest.raises(OverflowError):
        value_dtype(70000)
    assert decode(encode(1, 301)) == (1, 301) and decode(encode(-1, 300)) == (-1, 300)
    s = parse_slice("1010")
    idx = int(read_attrs(slice_path(db3_international, s))["longest_win_index"])
    db, values = with_a_changed_value(  # pretend the longest win took 301 plies
        db3_international, tmp_path / "international", "1010", 0, encode(1, 301), 301
    )
    b = read_attrs(slice_path(db, s))
    assert b["value_bits"] == 16 and b["longest_win"] == 301
    back = read_slice(slice_path(db, s), INTERNATIONAL, s)
    assert back.dtype == np.uint16
    np.testing.assert_array_equal(back, values)
    with pytest.raises(TableFileError, match="too wide"):
        read_slice(slice_path(db, s), INTERNATIONAL, s, out=np.empty(values.shape, np.uint8))
    wm, wk, bm, bk, _ = position_from_index(idx, 50, 5, 1, 0, 1, 0, BINOM)
    far = Position(int(wm), int(wk), int(bm), int(bk), True)
    with tablebase.open(db) as tb:
        assert tb.probe(far) == (1, 301)
        assert tb.probe("W:WK47:BK4") == (0, None)  # an 8-bit slice beside it
        extra = Position.from_fen("W:WK42:B22")
        fields = ("white_men", "white_kings", "black_men", "black_kings")
        boards = [np.array([getattr(q, f) for q in (far, extra)], np.uint64) for f in fields]
        got = tb.probe_batch(*boards)
        assert got.dtype == np.uint16 and [decode(int(x)) for x in got] == [(1, 301), (1, 7)]
    with tablebase.open(db, wdl_only=True) as tb:
        assert tb.probe_wdl(far) == 1


def test_stats_lists_longest_wins_and_plots(db3_international, wdl_copy, tmp_path) -> None:
    png = tmp_path / "stats.png"
    r = run("stats", "--db", str(db3_international), "--plot", str(png))
    line = next(x for x in r.stdout.splitlines() if x.startswith("1010:"))
    assert "longest win  17 " in line and " W " in line and " L " in line
    assert any(x.startswith("3 pieces:") and "bits/position" in x for x in r.stdout.splitlines())
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    rows = [
        json.loads(x) for x in run("stats", "--db", str(wdl_copy), "--json").stdout.splitlines()
    ]
    assert {r["material"] for r in rows} >= {"1010", "0110"}
    assert all(r["values_bits"] == 0 and r["wdl_bits"] > 0 for r in rows)


def test_run_scan_encoding_equals_the_plain_definition(db3_international) -> None:
    """The writer's one-scan encoding gives exactly the codes of the plain definition: every
    entry classified (non-position, capture, or its code), then don't-care filled."""
    from tablebase.material.index import BINOM as binom
    from tablebase.storage.wdl import classify, fill_dont_care, filled_codes

    v = INTERNATIONAL
    for path in sorted(db3_international.glob("*.h5")):
        s = parse_slice(path.stem)
        values = read_slice(path, v, s)
        counts = np.array(tuple(s), dtype=np.int64)
        plain = classify(values, v.rules, binom, counts, 3)
        fill_dont_care(plain)
        for chunks in (1, 7):
            got = filled_codes(values, v.rules, binom, counts, chunks)
            np.testing.assert_array_equal(got, plain, err_msg=f"{s.name}, {chunks} chunks")


def test_batch_resolves_many_captures_and_captures_after_captures(db3_international, wdl_copy):
    """Capture positions with many captures, and with captures after which the other side
    must capture in turn (resolved depth first inside the batch), answer as the values do,
    in a batch and one by one."""
    from tablebase.rules import has_capture, legal_moves, play
    from tablebase.rules.moves import MoveList

    fens = ["W:WK1,K2:BK7", "B:WK44:BK49,K50", "W:WK1,K2:B7", "W:WK5:BK1,K10", "W:W28:B23"]
    positions = [Position.from_fen(f) for f in fens]
    assert MoveList(positions[0]).count == 9 and MoveList(positions[1]).count == 9
    recaptures = [p for p in positions if any(has_capture(play(p, m)) for m in legal_moves(p))]
    assert recaptures  # the depth-first path is taken
    boards = [
        np.array([getattr(p, k) for p in positions], dtype=np.uint64)
        for k in ("white_men", "white_kings", "black_men", "black_kings")
    ]
    wtm = np.array([p.white_to_move for p in positions])
    full = tablebase.open(db3_international)
    small = tablebase.open(wdl_copy)
    got = small.probe_batch_wdl(*boards, wtm)
    np.testing.assert_array_equal(got, full.probe_batch_wdl(*boards, wtm))
    assert got.tolist() == [full.probe_wdl(p) for p in positions]
    assert got.tolist() == [small.probe_wdl(p) for p in positions]


@pytest.fixture(scope="module")
def frisian3(tmp_path_factory) -> tuple[Path, Path]:
    """The 2-3 piece Frisian database (king runs in the index) and its WDL-only copy."""
    full = session_database(tmp_path_factory, "frisian", 3)
    dst = tmp_path_factory.mktemp("fr-wdl") / "frisian"
    run("export", "--wdl-only", str(full), str(dst))
    return full, dst


def test_wdl_only_frisian_reads_the_run_entries(frisian3) -> None:
    """Frisian slices hold an entry per king-run state: the WDL part is read at the
    no-run entry in batches and at the position's own runs in single probes (captures end
    the capturer's run), as the values part is."""
    from tablebase.rules import has_capture
    from tablebase.rules.variants import FRISIAN

    full, dst = (tablebase.open(p) for p in frisian3)
    assert not dst.has_distances
    for s in full.slices():
        boards = all_positions(s, FRISIAN)
        for wtm in (True, False):
            np.testing.assert_array_equal(
                dst.probe_batch_wdl(*boards, wtm),
                full.probe_batch_wdl(*boards, wtm),
                err_msg=f"{s.name} wtm={wtm}",
            )
    rng = np.random.default_rng(5)
    checked = captures = 0
    for name in ("1110", "1101", "1011", "0111", "2100", "1200"):
        s = parse_slice(name)
        boards = all_positions(s, FRISIAN)
        for i in rng.choice(boards[0].shape[0], 150, replace=False):
            wm, wk, bm, bk = (int(b[i]) for b in boards)
            runs = []
            for men, kings in ((wm, wk), (bm, bk)):
                squares = [q + 1 for q in range(FRISIAN.squares) if kings >> q & 1]
                ok = men and squares
                runs.append((int(rng.choice(squares)), int(rng.integers(1, 4))) if ok else (0, 0))
            for wtm in (True, False):
                p = Position(wm, wk, bm, bk, wtm, FRISIAN, king_runs=tuple(runs))
                if (p.black_men | p.black_kings if wtm else p.white_men | p.white_kings) == 0:
                    continue
                assert dst.probe_wdl(p) == full.probe_wdl(p), p.fen()
                checked += 1
                captures += has_capture(p)
    assert checked > 1000 and captures > 100


@pytest.mark.slow
def test_wdl_only_copy_of_four_pieces_on_a_random_sample(tmp_path) -> None:
    """2-4 International: 400,000 random four-piece positions (either side to move, capture
    positions included) answer through a WDL-only copy storing capture codes up to three
    pieces (the four-piece slices resolve theirs, as the default copy's six-piece slices
    do) as through the values, in a batch and (a sample) one by one."""
    from tests.tablebase.conftest import build_db

    full_db = build_db(tmp_path / "full" / "international", "international", 4)
    dst = tmp_path / "wdl" / "international"
    run("export", "--wdl-only", "--store-captures-up-to", "3", str(full_db), str(dst))
    full, small = tablebase.open(full_db), tablebase.open(dst)
    v = INTERNATIONAL
    rng = np.random.default_rng(11)
    boards: list[list[int]] = [[], [], [], []]
    four = [s for s in full.slices() if s.pieces == 4]
    while len(boards[0]) < 400_000:
        s = four[int(rng.integers(len(four)))]
        *b, ok = position_from_index(int(rng.integers(s.size(v))), 50, 5, *tuple(s), BINOM)
        if ok:
            for k in range(4):
                boards[k].append(int(b[k]))
    arrs = [np.array(b, dtype=np.uint64) for b in boards]
    wtm = rng.integers(0, 2, arrs[0].shape[0]).astype(bool)
    got = small.probe_batch_wdl(*arrs, wtm)
    np.testing.assert_array_equal(got, full.probe_batch_wdl(*arrs, wtm))
    assert len(set(got.tolist())) == 3
    for i in rng.choice(arrs[0].shape[0], 2000, replace=False):
        p = Position(*(int(a[i]) for a in arrs), bool(wtm[i]))
        assert small.probe_wdl(p) == got[i], p.fen()
