"""The combinatorial index: a bijection between positions and the slice's entries."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablebase.material.index import BINOM, index_parts, position_from_index, position_index
from tablebase.material.slices import Slice, all_slices, slice_size
from tablebase.rules.variants import ENGLISH, INTERNATIONAL
from tablebase.solve.stats import valid_mask

SLICES = [s for s in all_slices(5)]


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from([INTERNATIONAL, ENGLISH]),
    st.sampled_from(SLICES),
    st.integers(0, 1 << 62),
)
def test_unrank_then_rank_is_identity(variant, s: Slice, r: int) -> None:
    idx = r % s.size(variant)
    wm, wk, bm, bk, ok = position_from_index(
        idx, variant.squares, variant.per_row, *tuple(s), BINOM
    )
    if not ok:
        assert wm & bm, "only entries with two men on one square are unused"
        return
    boards = [int(x) for x in (wm, wk, bm, bk)]
    assert [b.bit_count() for b in boards] == list(s)
    assert not (wm & wk or wm & bk or wk & bk or bm & wk or bm & bk)
    assert not int(wm) & variant.white_promotion_row
    assert not int(bm) & variant.black_promotion_row
    assert position_index(variant.squares, variant.per_row, wm, wk, bm, bk, BINOM) == idx
    # the same index in the parts the level passes hand on (index_parts)
    head, r_wk, r_bk = index_parts(
        variant.squares, variant.per_row, (wm, wk, bm, bk), tuple(s), BINOM
    )
    free = variant.squares - s.wm - s.bm
    d_wk, d_bk = int(BINOM[free, s.wk]), int(BINOM[free - s.wk, s.bk])
    assert head % d_wk == 0 and 0 <= r_wk < d_wk and 0 <= r_bk < d_bk
    assert (head + r_wk) * d_bk + r_bk == idx


@pytest.mark.parametrize("n, k", [(32, 1), (32, 2), (32, 3), (45, 2), (50, 1), (50, 2), (50, 3)])
def test_colex_unrank_lists_every_subset_in_colex_order(n: int, k: int) -> None:
    """Ranks 0, 1, 2, ... of k-subsets of n squares unrank to the subsets in colex order
    (ordered by their largest square, then the next, ...), each exactly once: checked
    against itertools, which knows nothing of binomials (one and two pieces are unranked
    by closed forms, three by bisection)."""
    from itertools import combinations

    from tablebase.material.index import unrank_colex

    colex = sorted(combinations(range(n), k), key=lambda c: c[::-1])
    assert len(colex) == BINOM[n, k]
    for r, subset in enumerate(colex):
        assert int(unrank_colex(r, k, n, BINOM)) == sum(1 << x for x in subset), (r, subset)


def test_small_slice_is_a_bijection() -> None:
    """Every position of 1 white man + 1 white king vs 1 black man appears exactly once."""
    v = INTERNATIONAL
    s = Slice(1, 1, 1, 0)
    seen = np.zeros(s.size(v), dtype=np.int64)
    for w in range(6, 51):
        for b in range(1, 46):
            for k in range(1, 51):
                if len({w, b, k}) < 3:
                    continue
                idx = position_index(
                    50,
                    5,
                    np.uint64(1 << (w - 1)),
                    np.uint64(1 << (k - 1)),
                    np.uint64(1 << (b - 1)),
                    np.uint64(0),
                    BINOM,
                )
                seen[idx] += 1
    valid = valid_mask(s.size(v), 50, 5, np.array(tuple(s)), BINOM)
    assert (seen[valid] == 1).all()
    assert (seen[~valid] == 0).all()
    assert valid.sum() == 45 * 45 * 48 - 40 * 48  # men may share squares 6..45 only


def test_sizes() -> None:
    assert slice_size(50, 5, 1, 0, 1, 0) == 45 * 45
    assert Slice(0, 2, 0, 1).size(INTERNATIONAL) == 1225 * 48
    total = sum(s.size(INTERNATIONAL) for s in all_slices(5))
    assert 1.6e9 < total < 1.7e9  # "about 1.6 billion" entries for 2-5 pieces


@pytest.mark.parametrize("nsq", [32, 50])
def test_reverse_board_is_the_180_degree_rotation(nsq):
    """Square s goes to nsq-1-s, for every square and for random sets of squares."""
    from tablebase.material.index import reverse_board

    rng = np.random.default_rng(7)
    for s in range(nsq):
        assert int(reverse_board(np.uint64(1 << s), nsq)) == 1 << (nsq - 1 - s)
    for _ in range(200):
        squares = [int(q) for q in rng.choice(nsq, rng.integers(0, 10), replace=False)]
        board = sum(1 << q for q in squares)
        expected = sum(1 << (nsq - 1 - q) for q in squares)
        assert int(reverse_board(np.uint64(board), nsq)) == expected


def test_deposit_puts_each_bit_on_the_free_square_of_its_rank() -> None:
    """Bit i of x lands on the i-th set bit of the mask, by the instruction (where this
    CPU runs it) and by the loop alike; checked against a list of the mask's bits."""
    from tablebase.rules.bits import FAST_DEPOSIT, _deposit_loop, _deposit_pdep

    rng = np.random.default_rng(5)
    impls = [_deposit_loop] + ([_deposit_pdep] if FAST_DEPOSIT else [])
    for _ in range(3000):
        mask = int(rng.integers(0, 1 << 62)) | (int(rng.integers(0, 2)) << 63)
        squares = [i for i in range(64) if mask >> i & 1]
        x = int(rng.integers(0, 1 << len(squares))) if 0 < len(squares) < 63 else 0b1011
        expected = sum(1 << squares[i] for i in range(len(squares)) if x >> i & 1)
        for f in impls:
            assert int(f(np.uint64(x), np.uint64(mask))) == expected


def test_slice_of_code_inverts_the_material_code() -> None:
    from tablebase.material.slices import parse_slice, slice_code, slice_of_code

    for name in ("0101", "2130", "7777", "0007", "4011"):
        s = parse_slice(name)
        assert slice_of_code(slice_code(*s)) == s
    assert slice_code(1, 2, 3, 4) == ((1 * 8 + 2) * 8 + 3) * 8 + 4  # the documented layout


def test_slice_names_are_four_ascii_digits() -> None:
    import pytest

    from tablebase.material.slices import parse_slice

    for bad in ("12²3", "１０１０", "101", "10a0"):
        with pytest.raises(ValueError, match="must be four digits"):
            parse_slice(bad)
