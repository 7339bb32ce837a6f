"""The solver by men configurations (:mod:`tablebase.solve.men`) against the passes over the
whole pair (:mod:`tablebase.solve.whole`) and against the rules engine: the same values and the
same unstored bits on every pair it solves up to four pieces, in every variant without king
runs; locally consistent values; and the order of its configurations."""

from __future__ import annotations

import numpy as np
import pytest

from tablebase.build import task as generator
from tablebase.material.index import BINOM, men_rank
from tablebase.material.slices import build_pairs, parse_slice
from tablebase.rules.geometry import promotion_row
from tablebase.rules.variants import BRAZILIAN, ENGLISH, INTERNATIONAL, RUSSIAN, Variant
from tablebase.solve import men as solve_men
from tests.conftest import session_database
from tests.tablebase.conftest import assert_locally_consistent, lengthened, solved_with_widths

VARIANTS = (ENGLISH, INTERNATIONAL, RUSSIAN, BRAZILIAN)


def solved_whole(monkeypatch, variant, pair, deps, vb=None):
    """The pair solved by the passes over the whole pair (the configurations' solver
    switched off)."""
    with monkeypatch.context() as m:
        m.setattr(solve_men, "MIN_KING_ENTRIES", 1 << 62)
        assert not generator.by_men(variant, pair)
        if vb is None:
            return generator.solve_tables(variant, pair, deps, 2)
        return generator._solve(variant, pair, deps, 2, vb)


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    """``dbs(variant)``: the session's 2-4 piece database of ``variant``, built by the
    generator (the configurations' solver where it applies); read only."""

    def get(variant: Variant):
        return session_database(tmp_path_factory, variant.name, 4)

    return get


@pytest.mark.parametrize(
    "variant",
    # English in the quick tier; the others build a 2-4 database each: the slower tier
    [VARIANTS[0], *(pytest.param(v, marks=pytest.mark.slow) for v in VARIANTS[1:])],
    ids=lambda v: v.name,
)
def test_every_pair_by_men_equals_the_whole_pair_solve(dbs, monkeypatch, variant) -> None:
    """Every pair of three and four pieces the configurations' solver takes: the values in
    its files and its unstored bits equal those of the passes over the whole pair from the
    same dependencies, and are locally consistent."""
    from tablebase.storage.reader import read_slice
    from tablebase.storage.slicefile import slice_path

    pairs = [p for p in build_pairs(4) if sum(tuple(p[0])) >= 3 and generator.by_men(variant, p)]
    assert len(pairs) >= 4
    db = dbs(variant)
    for pair in pairs:
        deps = generator.dependency_tables(db, variant, pair)
        men = generator.solve_tables(variant, pair, deps, 2)
        whole = solved_whole(monkeypatch, variant, pair, deps)
        for s in pair:
            np.testing.assert_array_equal(men.view(s), whole.view(s), err_msg=s.name)
            np.testing.assert_array_equal(read_slice(slice_path(db, s), variant, s), men.view(s))
            np.testing.assert_array_equal(
                men.unstored_bits[s], whole.unstored_bits[s], err_msg=s.name
            )
        assert_locally_consistent(variant, pair, men, deps)


@pytest.mark.slow
def test_long_exits_stay_in_two_byte_words(dbs, monkeypatch) -> None:
    """English 0111+1101 from its dependencies with every distance 300 plies longer: its
    exits (promotions, captures) pass one byte, which the whole pair's two-byte undecided
    words cannot hold (they are solved again with four-byte words); a configuration's own
    words are four bytes, so the pair is solved once, its values two bytes each, equal to
    the four-byte solve of the whole pair and locally consistent."""
    pair = (parse_slice("0111"), parse_slice("1101"))
    assert generator.by_men(ENGLISH, pair)
    deps = lengthened(dbs(ENGLISH), ENGLISH, pair, 300)
    got, widths = solved_with_widths(monkeypatch, ENGLISH, pair, deps)
    assert widths == [8]
    assert got.values.dtype == np.uint16 and got.values.max() > 300
    wide = solved_whole(monkeypatch, ENGLISH, pair, deps, vb=16)
    np.testing.assert_array_equal(got.values, wide.values)
    assert_locally_consistent(ENGLISH, pair, got, deps)


@pytest.mark.parametrize(
    ("variant", "name"), [(ENGLISH, "1121"), (INTERNATIONAL, "2012"), (RUSSIAN, "1120")]
)
def test_every_mans_step_leads_to_a_configuration_solved_before(variant, name) -> None:
    """In :func:`tablebase.solve.men.config_order`, each configuration comes once, and every
    quiet step of a man of either colour (not onto its promotion row) leads to a
    configuration of an earlier group."""
    counts = np.array(tuple(parse_slice(name)), dtype=np.int64)
    nsq, width = variant.squares, variant.per_row
    order, groups = solve_men.config_order(nsq, width, counts, BINOM)
    a = nsq - width
    n_bm = BINOM[a, counts[2]]
    assert sorted(order) == list(range(BINOM[a, counts[0]] * n_bm))
    group_of = np.empty(len(order), dtype=np.int64)
    for g in range(len(groups) - 1):
        group_of[order[groups[g] : groups[g + 1]]] = g
    steps = 0
    for r in range(len(order)):
        wm = _placement(r // n_bm, counts[0], a) << width
        bm = _placement(r % n_bm, counts[2], a)
        if wm & bm:
            continue
        for white, movers in ((True, wm), (False, bm)):
            promo = promotion_row(variant.rules, white)
            for sq in _squares(movers):
                for d in (0, 1) if white else (2, 3):
                    t = int(variant.neighbours[sq, d])
                    if t < 0 or ((wm | bm) >> t) & 1 or (int(promo) >> t) & 1:
                        continue
                    step = (1 << sq) | (1 << t)
                    wm2, bm2 = (wm ^ step, bm) if white else (wm, bm ^ step)
                    r2 = men_rank(nsq, width, np.uint64(wm2), np.uint64(bm2), counts[2], BINOM)
                    assert group_of[r2] < group_of[r], (r, sq, t)
                    steps += 1
    assert steps > 0


def _squares(b: int) -> list[int]:
    return [i for i in range(64) if (b >> i) & 1]


def _placement(rank: int, k: int, n: int) -> int:
    """The ``k`` squares among ``0..n-1`` of colex rank ``rank``, as a bitboard."""
    out = 0
    for i in range(k, 0, -1):
        x = i - 1
        while x + 1 < n and BINOM[x + 1, i] <= rank:
            x += 1
        rank -= BINOM[x, i]
        out |= 1 << x
    return out
