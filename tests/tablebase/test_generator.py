"""Generated tables: local consistency, published longest wins, counts and determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tablebase.build.task import load_dependencies, slice_stats, solve_pair
from tablebase.build.verify import verify_slice
from tablebase.material.slices import Slice, build_pairs, parse_slice
from tablebase.probe.database import Tablebase
from tablebase.rules.variants import ENGLISH, INTERNATIONAL
from tablebase.storage.reader import read_attrs, read_slice
from tablebase.storage.slicefile import slice_path
from tests.conftest import data_file


@pytest.mark.parametrize("variant", [INTERNATIONAL, ENGLISH], ids=lambda v: v.name)
def test_every_value_is_consistent_with_its_successors(variant, request) -> None:
    db = request.getfixturevalue(f"db3_{variant.name}")
    slices = [s for pair in build_pairs(3) for s in pair]
    assert sorted(p.stem for p in db.glob("*.h5")) == sorted(s.name for s in slices)
    for s in slices:
        check = verify_slice(db, variant, s, threads=2)
        assert check.bad_count == 0, (s.name, check.bad_fens)
        assert check.checked == s.size(variant)


def test_verify_detects_a_wrong_value(db3_international, tmp_path) -> None:
    """Flip one stored value (with a matching checksum) and verify must name it."""
    import shutil

    from tablebase.storage.writer import write_slice

    db = tmp_path / "international"
    shutil.copytree(db3_international, db)
    s = parse_slice("1010")
    values = read_slice(slice_path(db, s), INTERNATIONAL, s).copy()
    idx = int(np.flatnonzero(values == 2)[0])  # a win in 1
    values[idx] = 4  # claim win in 3
    stats, fen = slice_stats(INTERNATIONAL, s, values)
    write_slice(db, INTERNATIONAL, s, values, stats, fen)
    check = verify_slice(db, INTERNATIONAL, s)
    assert check.bad_count >= 1
    assert len(check.bad_fens) >= 1


def _published():
    path = data_file("reference", "longest_wins.json")
    data = json.loads(path.read_text())
    assert data["variant"] == "international"
    return data["positions"]


def test_published_longest_wins_up_to_three_pieces(db3_international) -> None:
    """Each example has exactly the published distance; no win in its slice is longer than
    the longest published for that slice (1020 also lists "David and Goliath", 29 plies,
    beside its longest win of 33)."""
    entries = [e for e in _published() if parse_slice(e["material"]).pieces <= 3]
    assert len(entries) >= 15
    longest: dict[str, int] = {}
    for e in entries:
        longest[e["material"]] = max(longest.get(e["material"], 0), e["plies"])
    with Tablebase(db3_international) as tb:
        for e in entries:
            assert tb.probe(e["fen"]) == (1, e["plies"]), e
    for material, plies in longest.items():
        s = parse_slice(material)
        assert read_attrs(slice_path(db3_international, s))["longest_win"] == plies, material


def test_stored_counts_match_the_values(db3_international) -> None:
    for s in [Slice(1, 0, 1, 0), Slice(0, 1, 2, 0), Slice(2, 0, 0, 1)]:
        attrs = read_attrs(slice_path(db3_international, s))
        values = read_slice(slice_path(db3_international, s), INTERNATIONAL, s)
        stats, fen = slice_stats(INTERNATIONAL, s, values)
        assert attrs["wins"] == stats.wins and attrs["losses"] == stats.losses
        assert attrs["draws"] == stats.draws
        assert attrs["positions"] == stats.wins + stats.draws + stats.losses
        assert attrs["longest_win_fen"] == fen


def test_threads_do_not_change_the_result(db3_international) -> None:
    pair = (parse_slice("1020"), parse_slice("2010"))
    deps = load_dependencies(db3_international, INTERNATIONAL, pair)
    one = solve_pair(INTERNATIONAL, pair, deps, threads=1)
    two = solve_pair(INTERNATIONAL, pair, deps, threads=2)
    for s in pair:
        assert np.array_equal(one.view(s), two.view(s))
        assert np.array_equal(
            one.view(s), read_slice(slice_path(db3_international, s), INTERNATIONAL, s)
        )


def test_colour_flip_gives_the_same_value(db3_international) -> None:
    from tablebase.rules.position import Position

    with Tablebase(db3_international) as tb:
        for fen in ["W:W33:B2", "W:WK42:B22", "B:W28,K46:B3", "B:WK10:B5,K23"]:
            pos = Position.from_fen(fen)
            assert tb.probe(pos) == tb.probe(pos.flipped())


def test_known_positions(db3_international, db3_english) -> None:
    with Tablebase(db3_international) as tb:
        assert tb.probe("W:WK47:BK4") == (0, None)  # king against king: drawn
        # a king alone on the long diagonal must move along it and be taken
        assert tb.probe("W:WK46:BK5") == (-1, 2)
        assert tb.probe("W:W28:B23") == (1, 1)  # white must capture 28x19 and black is bare
        assert tb.probe("B:W28:B23") == (1, 1)  # black to move captures 23x32
    with Tablebase(db3_english) as tb:
        assert tb.probe("W:WK1,K2:BK32") == (1, tb.probe_dtw("W:WK1,K2:BK32"))
        assert tb.probe_wdl("W:WK1,K2:BK32") == 1  # two kings beat one in checkers
        assert tb.probe_wdl("W:WK1:BK32") == 0


def test_value_counts_is_the_definition() -> None:
    """The counts and the first entry of the longest win, counted in parallel blocks of
    boards, against plain numpy over the valid entries."""
    from tablebase.solve.stats import value_counts

    rng = np.random.default_rng(4)
    for boards, per in ((1, 1), (7, 3), (1000, 1), (5000, 4)):
        values = rng.integers(0, 30, boards * per).astype(np.uint8)
        values[rng.random(values.shape[0]) < 0.4] = 0
        valid = rng.random(boards) < 0.8
        values[rng.integers(0, values.shape[0], 3)] = 40  # the longest win, several times
        ok = np.repeat(valid, per)
        v = values[ok]
        wins = v[(v != 0) & (v % 2 == 0)]
        top = int(wins.max()) if wins.shape[0] else 0
        first = int(np.flatnonzero(ok & (values == top))[0]) if wins.shape[0] else -1
        want = (v.shape[0], wins.shape[0], int(np.count_nonzero(v % 2 == 1)), top, first)
        assert tuple(int(x) for x in value_counts(values, valid, per)) == want


def test_a_pair_report_says_where_its_time_went(db3_international, tmp_path) -> None:
    # a 3-piece pair solved afresh beside a copy of its dependencies
    import shutil

    from tablebase.build.task import PHASES, run_pair_task
    from tablebase.material.slices import pair_dependencies

    pair = (parse_slice("1011"), parse_slice("1110"))
    for d in pair_dependencies(pair[0]):
        shutil.copy(slice_path(db3_international, d), tmp_path)
    report = run_pair_task("international", tuple(s.name for s in pair), str(tmp_path), 1)
    assert not report.skipped
    assert len(report.phase_seconds) == len(PHASES)
    assert all(sec > 0 for sec in report.phase_seconds), report.phase_seconds
    assert sum(report.phase_seconds) <= report.seconds
    # a rerun finds the pair complete: nothing solved, no phase timed
    again = run_pair_task("international", tuple(s.name for s in pair), str(tmp_path), 1)
    assert again.skipped and again.phase_seconds == (0.0,) * len(PHASES)
