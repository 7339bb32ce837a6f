"""King runs in the tables (Frisian's three-move king limit): the run codes of the index,
the solver's passes with runs, and their consistency with the move generator.

The solver is exercised on International rules with a king-move limit added (``INTL_RUNS``)
as well as on Frisian itself: with International's captures the run machinery is the only
thing that differs, and kings-only slices (where the limit never applies) must come out
exactly as International's tables.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tablebase.build import task as g
from tablebase.material.index import (
    BINOM,
    entry_index,
    mirror_run_code,
    position_index,
    reverse_board,
    run_code,
    run_of_code,
    run_states,
)
from tablebase.material.slices import Slice, build_pairs, pair_dependencies
from tablebase.rules.variants import INTERNATIONAL
from tablebase.solve import skeleton
from tablebase.solve.records import Shape, Tables

INTL_RUNS = dataclasses.replace(INTERNATIONAL, name="international-runs", king_move_limit=3)


def _build(variant, pieces):
    solved = {}
    for pair in build_pairs(pieces):
        deps = {d: solved[d] for d in sorted(pair_dependencies(pair[0]))}
        sol = g.solve_pair(variant, pair, deps, 1)
        for s in pair:
            solved[s] = sol.view(s).copy()
    return solved


@pytest.fixture(scope="module")
def runs3():
    return _build(INTL_RUNS, 3)


def _all_tables(variant, solved):
    t = g.FlatTables(variant, list(solved))
    for s, vals in solved.items():
        t.view(s)[:] = vals
    return t


def test_run_states_only_for_a_side_with_men_and_kings():
    assert run_states(3, 1, 2) == 7
    assert run_states(3, 0, 2) == 1  # no men: the limit does not apply
    assert run_states(3, 2, 0) == 1  # no kings: no run
    assert run_states(0, 1, 2) == 1  # a variant without the limit
    assert Slice(1, 2, 1, 1).run_states(INTL_RUNS) == (7, 4)
    assert Slice(1, 2, 1, 1).size(INTL_RUNS) == Slice(1, 2, 1, 1).size(INTERNATIONAL) * 28


def test_run_codes_round_trip_and_mirror():
    rng = np.random.default_rng(7)
    for _ in range(200):
        squares = np.sort(rng.choice(50, size=3, replace=False))
        kings = np.uint64(sum(1 << int(q) for q in squares))
        seen = {0}
        for sq in squares:
            for n in (1, 2, 3):
                code = run_code(3, 1, kings, int(sq), n)
                assert run_of_code(3, kings, code) == (int(sq), n)
                seen.add(int(code))
                # the same run on the board turned round, kings counted from the other end
                flipped = reverse_board(kings, 50)
                assert mirror_run_code(3, 3, code) == run_code(3, 1, flipped, 49 - int(sq), n)
        assert seen == set(range(10))  # every code of 1 + 3 * 3 states, each once
    assert run_code(3, 0, np.uint64(1), 0, 2) == 0  # a side without men has no run


def test_entry_index_puts_the_runs_inside_the_board():
    wm, wk = np.uint64(1 << 30), np.uint64(1 << 3 | 1 << 40)
    bm, bk = np.uint64(1 << 12), np.uint64(1 << 45)
    b = position_index(50, 5, wm, wk, bm, bk, BINOM)
    per = 7 * 4
    entries = {
        entry_index(50, 5, 3, (wm, wk, bm, bk), (ws, wn, 45, bn), BINOM)
        for ws in (3, 40)
        for wn in (1, 2, 3)
        for bn in (0, 1, 2, 3)
    }
    entries |= {entry_index(50, 5, 3, (wm, wk, bm, bk), (-1, 0, 45, bn), BINOM) for bn in range(4)}
    assert entries == set(range(b * per, (b + 1) * per))
    assert entry_index(50, 5, 0, (wm, wk, bm, bk), (3, 2, 45, 1), BINOM) == b  # no limit


def test_solver_with_runs_is_consistent_with_every_move(runs3):
    """Every entry of 2-3 pieces re-derived from the move generator's moves, the runs
    worked out forward (the solver works them out backward, from predecessors)."""
    t = _all_tables(INTL_RUNS, runs3)
    v = INTL_RUNS
    for s in runs3:
        off, size = t.where[s]
        bad = skeleton.verify_range(
            Tables(t.vals, t.offsets),
            v.rules,
            Shape(np.array(tuple(s), dtype=np.int64), BINOM),
            off,
            np.arange(size, dtype=np.int64),
            4,
        )
        assert not bad.any(), s.name


def test_verify_finds_a_wrong_value_with_runs(runs3):
    t = _all_tables(INTL_RUNS, runs3)
    s = Slice(1, 1, 0, 1)
    off, size = t.where[s]
    cw, cb = s.run_states(INTL_RUNS)
    assert cw == 4
    # a decided entry whose run matters: flip one win into a loss and back
    vals = t.view(s)
    i = int(np.flatnonzero((vals > 0) & (vals % 2 == 0))[1000])
    vals[i] += 1
    bad = skeleton.verify_range(
        Tables(t.vals, t.offsets),
        INTL_RUNS.rules,
        Shape(np.array(tuple(s), dtype=np.int64), BINOM),
        off,
        np.array([i], dtype=np.int64),
        1,
    )
    assert bad[0]


def test_kings_only_slices_equal_international(runs3):
    plain = _build(INTERNATIONAL, 3)
    for s in runs3:
        if s.wm == 0 and s.bm == 0:
            assert np.array_equal(runs3[s], plain[s]), s.name


def test_the_limit_changes_values(runs3):
    """Some boards of 1101 have different values under different runs (the limit binds),
    and a barred king can leave a side without a legal move."""
    s = Slice(1, 1, 0, 1)
    vals = runs3[s].reshape(-1, 4)  # a board's four white run states side by side
    differ = (vals != vals[:, :1]).any(axis=1)
    assert differ.sum() > 0
    # a run of 3 (the king barred) is never better for white than no run
    from tablebase.storage.values import decode

    for row in vals[differ][:500]:
        free, barred = decode(int(row[0]))[0], decode(int(row[3]))[0]
        assert barred <= free
