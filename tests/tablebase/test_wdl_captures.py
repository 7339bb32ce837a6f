"""The WDL part with capture positions' codes stored (``captures="stored"`` on the dataset):
every position answers through one read, files of the smaller form (captures left to the
prober, the WDL-only copy's default) probe right beside them, and ``tablebase export``
converts between the forms."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest

import tablebase
from tablebase.build.task import run_pair_task
from tablebase.material.index import BINOM, position_from_index
from tablebase.material.slices import parse_slice
from tablebase.rules import has_capture
from tablebase.rules.position import Position
from tablebase.rules.variants import FRISIAN, INTERNATIONAL
from tablebase.solve.stats import valid_mask
from tablebase.storage.export import export_database
from tablebase.storage.reader import read_attrs, read_slice, read_wdl, read_wdl_part
from tablebase.storage.slicefile import WDL_CAPTURES, WDL_DATASET, slice_path
from tablebase.storage.wdl import codes_of, encode_wdl, non_positions, pack, unpack
from tablebase.storage.writer import write_parts
from tests.conftest import tablebase_cli

FOUR = ("0103", "0301", "0202", "0112", "1201", "0211", "1102")  # kings, and men with kings


run = tablebase_cli  # tablebase ARGS in a child process


@pytest.fixture(scope="module")
def db34(db3_international, tmp_path_factory) -> Path:
    """The 2-3 piece International database and the four-piece slices of :data:`FOUR` (their
    pairs built in dependency order), as the generator writes them."""
    db = tmp_path_factory.mktemp("db34") / "international"
    shutil.copytree(db3_international, db)
    for pair in (("0103", "0301"), ("0202",), ("0112", "1201"), ("0211", "1102")):
        run_pair_task("international", pair, str(db), threads=2)
    return db


@pytest.fixture(scope="module")
def copies(db34, tmp_path_factory) -> dict[str, Path]:
    """WDL-only copies of :func:`db34`: ``stored`` (``--store-captures``), ``resolved``
    (``--resolve-captures``), ``by_pieces`` (``--store-captures-up-to 3``: the 2-3 piece
    slices stored, the four-piece ones resolved) and ``mixed`` (every other file of the
    first two)."""
    base = tmp_path_factory.mktemp("copies")
    out = {}
    for name, extra in (
        ("stored", ("--store-captures",)),
        ("resolved", ("--resolve-captures",)),
        ("by_pieces", ("--store-captures-up-to", "3")),
    ):
        out[name] = base / name / "international"
        run("export", "--wdl-only", *extra, str(db34), str(out[name]))
    mixed = out["mixed"] = base / "mixed" / "international"
    mixed.mkdir(parents=True)
    for k, path in enumerate(sorted(out["stored"].glob("*.h5"))):
        src = path if k % 2 else out["resolved"] / path.name
        shutil.copy(src, mixed / path.name)
    return out


def entries_of(s, variant=INTERNATIONAL) -> Iterator[tuple[int, list[int]]]:
    """The entries of slice ``s`` that are positions, in order, with their bitboards."""
    for i in range(s.boards(variant)):
        *b, ok = position_from_index(i, variant.squares, variant.per_row, *tuple(s), BINOM)
        if ok:
            yield i, [int(x) for x in b]


def all_positions(s, variant=INTERNATIONAL) -> tuple[np.ndarray, list[np.ndarray]]:
    """The entries of slice ``s`` that are positions, and their bitboards."""
    idx, boards = [], [[], [], [], []]
    for i, b in entries_of(s, variant):
        idx.append(i)
        for k in range(4):
            boards[k].append(b[k])
    return np.array(idx), [np.array(b, dtype=np.uint64) for b in boards]


@pytest.mark.slow
def test_generated_files_store_every_position_code(db34) -> None:
    """The generator's files (it passes capture positions as don't-care) hold every
    position's own code in the WDL part, capture positions included, and say so."""
    captures = 0
    for path in sorted(db34.glob("*.h5")):
        s = parse_slice(path.stem)
        assert read_attrs(path)["wdl_captures_stored"], s.name
        with h5py.File(path, "r") as f:
            assert f[WDL_DATASET].attrs[WDL_CAPTURES] == b"stored"  # fixed-length (format 3)
        values = read_slice(path, INTERNATIONAL, s)
        stored = unpack(read_wdl(path, INTERNATIONAL, s), values.shape[0])
        idx, boards = all_positions(s)
        np.testing.assert_array_equal(stored[idx], codes_of(values)[idx], err_msg=s.name)
        captures += sum(
            has_capture(Position(*(int(b[i]) for b in boards), True))
            for i in range(0, idx.shape[0], 50)
        )
    assert captures > 1000  # capture positions were among those compared


@pytest.mark.parametrize(
    "copy",
    [
        # every copy in the slow tier ("stored" took 45 s of the quick tier; issue 51)
        *(
            pytest.param(c, marks=pytest.mark.slow)
            for c in ("stored", "resolved", "by_pieces", "mixed")
        ),
    ],
)
def test_every_position_probes_like_the_values(db34, copies, copy) -> None:
    """Every position of every slice (3 and 4 pieces), either side to move, captures
    included, in a batch and (a sample) one by one: through a WDL-only copy storing
    captures, one of the older form, one storing them up to three pieces, and a database
    mixing both kinds of files."""
    full = tablebase.open(db34)
    small = tablebase.open(copies[copy])
    kinds = {read_attrs(p)["wdl_captures_stored"] for p in copies[copy].glob("*.h5")}
    both = {True, False}
    assert kinds == {"stored": {True}, "resolved": {False}, "by_pieces": both, "mixed": both}[copy]
    if copy == "by_pieces":
        for path in copies[copy].glob("*.h5"):
            stored = read_attrs(path)["wdl_captures_stored"]
            assert stored == (parse_slice(path.stem).pieces <= 3), path.name
    rng = np.random.default_rng(3)
    for s in small.slices():
        if s.pieces < 3:
            continue
        _, boards = all_positions(s)
        for wtm in (True, False):
            want = full.probe_batch_wdl(*boards, wtm)
            np.testing.assert_array_equal(
                small.probe_batch_wdl(*boards, wtm), want, err_msg=f"{s.name} wtm={wtm}"
            )
            for i in rng.choice(want.shape[0], 40, replace=False):
                p = Position(*(int(b[i]) for b in boards), wtm)
                assert small.probe_wdl(p) == want[i], p.fen()


def test_a_stored_capture_code_is_read_not_searched(db34, tmp_path) -> None:
    """A capture position's code is read from a slice flagged ``stored``, and resolved
    through its captures in a slice of the older form: a code altered on purpose shows
    through the first and not the second."""
    s = parse_slice("0112")
    path = slice_path(db34, s)
    values = read_slice(path, INTERNATIONAL, s)
    entry, pos = next(
        (i, p) for i, b in entries_of(s) if has_capture(p := Position(*b, True))
    )  # the first capture position
    codes = unpack(read_wdl(path, INTERNATIONAL, s), values.shape[0])
    true_code = int(codes[entry])
    codes[entry] = 1 if true_code != 1 else 2  # win <-> not a win
    attrs = {k: v for k, v in read_attrs(path).items() if k not in ("parts", "value_bits")}
    attrs.pop("wdl_captures_stored")
    with tablebase.open(db34) as full:
        truth = full.probe_wdl(pos)
    for captures, expect_altered in ((True, True), (False, False)):
        db = tmp_path / f"c{int(captures)}" / "international"
        shutil.copytree(db34, db)
        slice_path(db, s).unlink()
        write_parts(db, INTERNATIONAL, s, attrs, pack(codes), None, captures)
        with tablebase.open(db, wdl_only=True) as tb:
            got = tb.probe_wdl(pos)
            batch = tb.probe_batch_wdl(*(np.array([getattr(pos, f)], np.uint64) for f in (
                "white_men", "white_kings", "black_men", "black_kings")), True)  # fmt: skip
        assert (got != truth) == expect_altered, pos.fen()
        assert int(batch[0]) == got


def test_capture_into_a_missing_slice(db34, copies, tmp_path) -> None:
    """A capture position of a slice storing captures answers without the slice its
    captures reach; in the older form the error names that slice."""
    from tablebase.probe.database import MissingSliceError

    fen = "W:WK28:B23,K1"  # 28x19 leaves one king each: slice 0101
    with tablebase.open(db34) as full:
        truth = full.probe_wdl(fen)
    for name in ("stored", "resolved"):
        db = tmp_path / name / "international"
        db.mkdir(parents=True)
        for path in copies[name].glob("*.h5"):
            if path.stem != "0101":
                shutil.copy(path, db / path.name)
        with tablebase.open(db) as tb:
            if name == "stored":
                assert tb.probe_wdl(fen) == truth
            else:
                with pytest.raises(MissingSliceError) as e:
                    tb.probe_wdl(fen)
                assert e.value.slice == "0101"


@pytest.mark.slow  # over 29 s in the quick tier (issue 51): CI's slow tier runs it
def test_export_converts_the_older_form(db34, copies, tmp_path) -> None:
    """``tablebase export`` rewrites parts of the smaller form with captures stored: from
    the values in a full database (the default of a full copy), and through the captures in
    a WDL-only copy (``--store-captures``); both give the bytes encoded from the values.
    ``--resolve-captures`` of a WDL-only copy storing captures gives the smaller form's
    bytes."""
    full_old = tmp_path / "full-old" / "international"
    run("export", "--resolve-captures", str(db34), str(full_old))
    assert not any(read_attrs(p)["wdl_captures_stored"] for p in full_old.glob("*.h5"))
    full_new = tmp_path / "full-new" / "international"
    run("export", str(full_old), str(full_new))
    wdl_new = tmp_path / "wdl-new" / "international"
    r = run("export", "--wdl-only", "--store-captures", str(copies["resolved"]), str(wdl_new))
    assert "wdl only" in r.stdout
    wdl_old = tmp_path / "wdl-old" / "international"
    run("export", "--wdl-only", "--resolve-captures", str(copies["stored"]), str(wdl_old))
    for path in sorted(db34.glob("*.h5")):
        s = parse_slice(path.stem)
        want = encode_wdl(INTERNATIONAL, s, read_slice(path, INTERNATIONAL, s))
        for db in (full_new, wdl_new):
            packed, stored = read_wdl_part(slice_path(db, s), INTERNATIONAL, s)
            assert stored, f"{db} {s.name}"
            np.testing.assert_array_equal(packed, want, err_msg=f"{db} {s.name}")
        old = read_wdl(slice_path(full_old, s), INTERNATIONAL, s)
        packed, stored = read_wdl_part(slice_path(wdl_old, s), INTERNATIONAL, s)
        assert not stored
        np.testing.assert_array_equal(packed, old, err_msg=f"{wdl_old} {s.name}")
        if s.pieces >= 3:
            assert not np.array_equal(old, want), s.name  # the older form differs
    np.testing.assert_array_equal(
        read_slice(slice_path(full_new, parse_slice("0112")), INTERNATIONAL, parse_slice("0112")),
        read_slice(slice_path(db34, parse_slice("0112")), INTERNATIONAL, parse_slice("0112")),
    )


@pytest.mark.slow  # 8-30 s in the quick tier (issue 51): CI's slow tier runs it
def test_wdl_only_copy_stores_captures_up_to_five_pieces(db34, copies, tmp_path) -> None:
    """``export --wdl-only`` stores capture codes in the slices of up to five pieces and
    leaves them to the prober above (:data:`tablebase.storage.export.STORE_CAPTURES_UP_TO`): on
    2-4 pieces it writes the bytes of ``--store-captures``; ``--store-captures-up-to 3``
    writes the stored bytes up to three pieces and the smaller form's at four. Asking for two
    forms is a usage error that writes nothing."""
    from tablebase.storage.export import STORE_CAPTURES_UP_TO, captures_stored_up_to

    assert STORE_CAPTURES_UP_TO == 5
    assert captures_stored_up_to(True, False, False, None) == 5
    assert captures_stored_up_to(False, False, False, None) > 7  # a full copy: every slice
    default = tmp_path / "default" / "international"
    r = run("export", "--wdl-only", str(db34), str(default))
    assert "with captures stored" in r.stdout
    for path in sorted(copies["stored"].glob("*.h5")):
        s = parse_slice(path.stem)
        packed, stored = read_wdl_part(slice_path(default, s), INTERNATIONAL, s)
        assert stored, s.name
        np.testing.assert_array_equal(packed, read_wdl(path, INTERNATIONAL, s), err_msg=s.name)
    for path in sorted(copies["by_pieces"].glob("*.h5")):
        s = parse_slice(path.stem)
        like = copies["stored" if s.pieces <= 3 else "resolved"] / path.name
        np.testing.assert_array_equal(
            read_wdl(path, INTERNATIONAL, s), read_wdl(like, INTERNATIONAL, s), err_msg=s.name
        )
    for pair in (
        ("--resolve-captures", "--store-captures"),
        ("--store-captures-up-to", "4", "--store-captures"),
        ("--store-captures-up-to", "4", "--resolve-captures"),
    ):
        both = tmp_path / "both" / "international"
        r = run("export", "--wdl-only", *pair, str(db34), str(both), check=False)
        assert r.returncode == 2 and "exclude each other" in r.stderr, pair
        assert "Traceback" not in r.stderr and not both.exists()
    r = run("export", "--wdl-only", "--store-captures-up-to", "-1", str(db34), str(both),
            check=False)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr and not both.exists()
    with pytest.raises(ValueError, match="different forms"):
        export_database(db34, both, True, resolve_captures=True, store_captures=True)
    with pytest.raises(ValueError, match="different forms"):
        export_database(db34, both, True, store_captures=True, store_up_to=3)
    assert not both.exists()


def test_non_positions_are_the_entries_two_men_share(db34) -> None:
    """:func:`tablebase.storage.wdl.non_positions` against the solver's ``valid_mask`` and the
    index's own ``ok``, for slices with men on both sides, one side, none, and (Frisian)
    king-run states."""
    v = INTERNATIONAL
    for name in ("1010", "2010", "1020", "1011", "0112", "0202", "2020", "3010"):
        s = parse_slice(name)
        bits = np.unpackbits(non_positions(v, s), count=s.size(v), bitorder="little")
        counts = np.array(tuple(s), dtype=np.int64)
        valid = valid_mask(s.size(v), v.squares, v.per_row, counts, BINOM)
        np.testing.assert_array_equal(bits.astype(bool), ~valid, err_msg=name)
        if s.size(v) < 200_000:
            idx, _ = all_positions(s)
            assert np.flatnonzero(bits == 0).tolist() == idx.tolist()
    s = parse_slice("1110")  # Frisian: a man and a king against a man, runs for white
    cw, cb = s.run_states(FRISIAN)
    assert cw * cb > 1
    bits = np.unpackbits(non_positions(FRISIAN, s), count=s.size(FRISIAN), bitorder="little")
    counts = np.array(tuple(s), dtype=np.int64)
    valid = valid_mask(s.boards(FRISIAN), FRISIAN.squares, FRISIAN.per_row, counts, BINOM)
    np.testing.assert_array_equal(bits.astype(bool), np.repeat(~valid, cw * cb))
