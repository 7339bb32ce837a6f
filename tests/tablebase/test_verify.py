"""``tablebase verify``: each pair and its dependencies read once for both its slices."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from tablebase.build import task as generator
from tablebase.build.verify import verify_pair
from tablebase.cli import main
from tablebase.material.slices import pair_dependencies, parse_slice
from tablebase.rules.variants import INTERNATIONAL


def test_verify_reads_each_file_of_a_pair_once(db3_international, monkeypatch) -> None:
    reads: Counter[str] = Counter()
    real = generator.read_slice

    def counting(path, *args, **kwargs):
        reads[Path(path).stem] += 1
        return real(path, *args, **kwargs)

    monkeypatch.setattr(generator, "read_slice", counting)
    r = CliRunner().invoke(main, ["verify", "--db", str(db3_international), "--sample", "300"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert sum(ln.endswith("300 checked, ok") for ln in lines) == 16  # every slice once
    # a file is read once for its own pair (not once per slice of the pair) and once for
    # each other pair that depends on it
    pairs = {parse_slice(ln.split(":")[0]).pair for ln in lines}
    for s in {s for pair in pairs for s in pair}:
        users = sum(s in pair_dependencies(p[0]) for p in pairs if s not in p)
        assert reads[s.name] == 1 + users, (s.name, reads[s.name], users)
    assert reads["1020"] == 1 and reads["2010"] == 1


def test_verify_pair_checks_both_slices(db3_international) -> None:
    pair = parse_slice("1020").pair
    checks = verify_pair(db3_international, INTERNATIONAL, pair, sample=200, seed=3)
    assert sorted(c.slice for c in checks) == sorted(s.name for s in pair)
    assert all(c.checked == 200 and c.bad_count == 0 for c in checks)


def _copy_of_1010(db3: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A copy of the database to alter, slice 1010, its attributes and its stats."""
    import shutil

    from tablebase.storage.reader import read_attrs
    from tablebase.storage.slicefile import SliceStats, slice_path

    db = tmp_path / "international"
    shutil.copytree(db3, db)
    s = parse_slice("1010")
    a = read_attrs(slice_path(db, s))
    stats = SliceStats(
        a["positions"], a["wins"], a["draws"], a["losses"], a["longest_win"], a["longest_win_index"]
    )
    return db, s, a, stats


@pytest.mark.slow  # 8 s on a fresh install (the verifier of two-byte values): CI's slow tier
def test_verify_reads_two_byte_values(db3_international, tmp_path) -> None:
    """A slice stored with 16-bit values (distances past 253 plies) is verified like the
    others, and a wrong 16-bit value is found."""
    import numpy as np

    from tablebase.storage.reader import read_attrs, read_slice
    from tablebase.storage.slicefile import slice_path
    from tablebase.storage.values import decode, dtw_histogram, encode
    from tablebase.storage.wdl import encode_wdl
    from tablebase.storage.writer import slice_attrs, write_parts, write_slice

    db, s, a, stats = _copy_of_1010(db3_international, tmp_path)
    values = read_slice(slice_path(db, s), INTERNATIONAL, s).astype(np.uint16)
    # stored with two bytes although they fit one, as builds before 8827559 stored the
    # other slices of a pair solved wide (write_slice now stores them with one)
    attrs = slice_attrs(INTERNATIONAL, s, stats, a["longest_win_fen"], dtw_histogram(values))
    write_parts(db, INTERNATIONAL, s, attrs, encode_wdl(INTERNATIONAL, s, values), values)
    assert read_attrs(slice_path(db, s))["value_bits"] == 16
    r = CliRunner().invoke(main, ["verify", "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert "1010: 2025 checked, ok" in r.output  # every position, read as two bytes

    idx = int(a["longest_win_index"])
    assert decode(int(values[idx])) == (1, 17)
    values[idx] = encode(1, 301)  # a distance only two bytes hold, and wrong
    write_slice(db, INTERNATIONAL, s, values, stats, a["longest_win_fen"])
    r = CliRunner().invoke(main, ["verify", "--db", str(db)])
    assert r.exit_code == 1
    lines = r.output.splitlines()
    at = lines.index("1010: 2025 checked, 1 INCONSISTENT")
    assert lines[at + 1] == f"  inconsistent: {a['longest_win_fen']}"


def test_sample_indices_are_distinct_sorted_and_in_range() -> None:
    import numpy as np

    from tablebase.build.verify import sample_indices

    for size, sample in ((10, 10), (10, 7), (1000, 400), (238_360_500, 100_000)):
        got = sample_indices(size, sample, seed=1)
        assert got.shape == (sample,) and got.dtype == np.int64
        assert (np.diff(got) > 0).all() and got[0] >= 0 and got[-1] < size
    assert (sample_indices(1000, 400, 2) != sample_indices(1000, 400, 3)).any()
    np.testing.assert_array_equal(sample_indices(10**6, 5000, 4), sample_indices(10**6, 5000, 4))


def test_a_pair_over_the_memory_is_checked_on_its_sample_by_blocks(db3_international) -> None:
    """Under a memory no pair's tables fit, every slice is checked on its sample with the
    values read by blocks, and finds what the loaded check finds: the same entries checked
    and nothing inconsistent, in every slice."""
    from tablebase.build.verify import verify_database

    loaded = verify_database(db3_international, INTERNATIONAL, sample=300, seed=5)
    blocks = verify_database(db3_international, INTERNATIONAL, sample=300, seed=5, memory=1)
    assert blocks.summary() == loaded.summary()
    assert len(blocks.checks) == 16 and blocks.failures == 0
    assert all(c.note.startswith("values read by blocks") for c in blocks.checks)
    assert not any(c.note for c in loaded.checks)


def test_a_wrong_value_is_found_by_blocks_as_when_loaded(db3_international, tmp_path) -> None:
    """A value changed with its checksums made to match (a forgery only re-deriving finds)
    is named by the check by blocks, one- and two-byte values alike; and a pair over the
    memory without a sample is reported unverified, not passed."""
    import numpy as np

    from tablebase.build.verify import verify_database
    from tablebase.storage.reader import read_attrs, read_slice
    from tablebase.storage.slicefile import slice_path
    from tablebase.storage.values import encode
    from tablebase.storage.writer import write_slice

    db, s, a, stats = _copy_of_1010(db3_international, tmp_path)
    idx = int(a["longest_win_index"])
    for wide in (False, True):
        values = read_slice(slice_path(db, s), INTERNATIONAL, s).astype(np.uint16)
        values[idx] = encode(1, 301 if wide else 19)  # wrong; two bytes hold 301
        write_slice(db, INTERNATIONAL, s, values, stats, a["longest_win_fen"])
        assert read_attrs(slice_path(db, s))["value_bits"] == (16 if wide else 8)
        for memory in (None, 1):
            only = frozenset({"1010"})
            report = verify_database(db, INTERNATIONAL, sample=10**6, memory=memory, only=only)
            (c,) = report.checks
            assert (c.checked, c.bad_count, c.bad_fens) == (2025, 1, (a["longest_win_fen"],)), (
                memory
            )
            assert c.wdl_bad == 0  # the WDL part was written from the same values

    r = CliRunner().invoke(main, ["verify", "--db", str(db), "--memory", "1K"])
    assert r.exit_code == 1
    assert "1010: not verified: its pair and dependencies need 0.0 GiB" in r.output
    assert "--sample checks it within the memory" in r.output
    r = CliRunner().invoke(main, ["verify", "--db", str(db), "--memory", "1K", "--sample", "5000"])
    assert r.exit_code == 1
    assert "1010: 2025 checked, 1 INCONSISTENT (values read by blocks" in r.output
    assert "0101: 2450 checked, ok (values read by blocks" in r.output


def test_a_missing_dependency_leaves_its_users_unverified_loaded_or_by_blocks(
    db3_international, tmp_path
) -> None:
    """Without the files of 1011 and 1110, verify exits 1 saying what it could not check,
    with no traceback, and checks the rest. Loaded, the pair 1020+2010 (which depends on
    1011) is not verified; by blocks, only the slice whose successors lie in 1011 is not:
    2010, where black's man promotes into 1011's mirror, while 1020 is checked."""
    import shutil

    db = tmp_path / "international"
    shutil.copytree(db3_international, db)
    (db / "1011.h5").unlink()
    (db / "1110.h5").unlink()
    missing = "/1011.h5: missing"
    r = CliRunner().invoke(main, ["verify", "--db", str(db)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    lines = r.output.splitlines()
    for name in ("1020", "2010"):
        line = next(ln for ln in lines if ln.startswith(f"{name}:"))
        assert line.startswith(f"{name}: not verified:") and missing in line, line
    assert "1010: 2025 checked, ok" in lines
    r = CliRunner().invoke(main, ["verify", "--db", str(db), "--memory", "1K", "--sample", "9999"])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    lines = r.output.splitlines()
    line = next(ln for ln in lines if ln.startswith("2010:"))
    assert line.startswith("2010: not verified:") and missing in line, line
    assert any(ln.startswith("1020: 9999 checked, ok (values read by blocks") for ln in lines)
    assert any(ln.startswith("1010: 2025 checked, ok (values read by blocks") for ln in lines)
