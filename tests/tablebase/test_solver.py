"""The solver's parts checked against the rules engine, and its two value widths."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit, prange

from tablebase.build import task as generator
from tablebase.material.index import (
    BINOM,
    index_parts,
    position_from_index,
    position_index,
)
from tablebase.material.slices import Slice, parse_slice
from tablebase.rules import quiet_unmoves
from tablebase.rules.captures import has_capture
from tablebase.rules.geometry import promotion_row
from tablebase.rules.makemove import play_row
from tablebase.rules.movebuffer import F_FROM, F_TO, new_move_buffer, new_workspace
from tablebase.rules.movegen import generate_moves
from tablebase.rules.position import Position
from tablebase.rules.variants import ENGLISH, INTERNATIONAL
from tablebase.solve import levels
from tablebase.solve import whole as solve
from tablebase.solve.atomics import cas, prefetch
from tablebase.solve.memory import task_memory_bytes
from tablebase.solve.records import Shape
from tablebase.storage.reader import read_slice
from tablebase.storage.slicefile import slice_path
from tests.tablebase.conftest import assert_locally_consistent, lengthened, solved_with_widths


@njit(parallel=True)
def _hammer(a, rounds):
    for t in prange(8):
        for _ in range(rounds):
            old = a[t % 2]
            while True:
                got = cas(a, t % 2, old, old + 1)
                if got == old:
                    break
                old = got
            prefetch(a, 0)


def test_compare_and_swap_loses_no_update_between_threads() -> None:
    a = np.zeros(2, dtype=np.uint32)
    _hammer(a, 20000)
    assert a.tolist() == [80000, 80000]


@njit
def _cas_once(a, expected, new):
    return cas(a, 0, expected, new)


def test_compare_and_swap_only_replaces_the_expected_value() -> None:
    a = np.array([5], dtype=np.uint16)
    assert _cas_once(a, 4, 9) == 5 and a[0] == 5  # not the expected value: unchanged
    assert _cas_once(a, 5, 9) == 5 and a[0] == 9


def _random_positions(variant, s: Slice, n: int, seed: int):
    rng = np.random.default_rng(seed)
    size = s.size(variant)
    for idx in rng.choice(size, min(n, size), replace=False):
        wm, wk, bm, bk, ok = position_from_index(
            int(idx), variant.squares, variant.per_row, *tuple(s), BINOM
        )
        if ok:
            yield np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk)


CASES = [
    (INTERNATIONAL, "0202"),
    (INTERNATIONAL, "1111"),
    (INTERNATIONAL, "2011"),
    (INTERNATIONAL, "0311"),
    (INTERNATIONAL, "3020"),
    (ENGLISH, "1111"),
    (ENGLISH, "0212"),
    (ENGLISH, "2020"),
    (ENGLISH, "0214"),  # kings that pass one another: their group ranked anew
    (ENGLISH, "0313"),
    (INTERNATIONAL, "0303"),  # flying kings passing several of their own or the other's
    (INTERNATIONAL, "1212"),
]


@pytest.mark.parametrize("with_men", [True, False])
@pytest.mark.parametrize("white", [False, True])
@pytest.mark.parametrize(("variant", "name"), CASES)
def test_predecessor_indices_are_the_engines_quiet_unmoves(variant, name, white, with_men) -> None:
    """The solver's in-pair predecessors of a board (white's un-moves with black to move
    on it, black's with white to move) equal the engine's quiet un-moves (un-promotions
    left out; without ``with_men``, the kings' un-moves only), each indexed as a board of
    the same slice."""
    s = parse_slice(name)
    nsq, width = variant.squares, variant.per_row
    counts = np.array(tuple(s), dtype=np.int64)
    out = np.zeros(levels.UNMOVE_ROWS, dtype=np.int64)
    moff = 1000  # an arbitrary place of the predecessors' part
    checked = 0
    for wm, wk, bm, bk in _random_positions(variant, s, 400, seed=3):
        head, r_wk, r_bk = index_parts(nsq, width, (wm, wk, bm, bk), counts, BINOM)
        m = levels.predecessor_indices(
            variant.rules, Shape(counts, BINOM), (wm, wk, bm, bk),
            (head, r_wk, r_bk), (white, with_men), moff, out,
        )  # fmt: skip
        pos = Position(int(wm), int(wk), int(bm), int(bk), not white, variant)
        expected = []
        for prev, _move in quiet_unmoves(pos, legal_only=False):
            assert prev.white_to_move == white  # the side that moved is to move before it
            boards = (prev.white_men, prev.white_kings, prev.black_men, prev.black_kings)
            if tuple(b.bit_count() for b in boards) != tuple(s):
                continue  # an un-promotion: one man more, another slice
            if not with_men and (prev.white_men, prev.black_men) != (int(wm), int(bm)):
                continue  # a man's un-move
            expected.append(moff + position_index(nsq, width, *map(np.uint64, boards), BINOM))
        assert sorted(out[:m].tolist()) == sorted(expected)
        checked += m
    assert checked > 0 or not (with_men or counts[1 if white else 3])  # the mover has no king


@pytest.mark.parametrize(("variant", "name"), [(INTERNATIONAL, "1011"), (ENGLISH, "1110")])
def test_mirror_part_goes_into_the_mirror_slices_order(variant, name) -> None:
    """Entry j of the mirror slice gets the part's entry at its colour flip's board index
    (every entry, the non-positions as draws), and its flag bit with it."""
    s = parse_slice(name)
    m = s.mirror
    nsq, width = variant.squares, variant.per_row
    size = s.size(variant)
    rng = np.random.default_rng(7)
    part = rng.integers(0, 250, size, dtype=np.uint8)
    part_flags = rng.integers(0, 256, (size + 7) // 8, dtype=np.uint8)
    out = np.full(size, 255, dtype=np.uint8)
    out_flags = np.zeros_like(part_flags)
    solve.to_file_order(
        part, out, (part_flags, out_flags), (nsq, width), Shape(np.array(tuple(m)), BINOM), 8
    )
    bits = np.unpackbits(part_flags, bitorder="little")
    got_bits = np.unpackbits(out_flags, bitorder="little")
    seen = set()
    for j in range(size):
        wm, wk, bm, bk, ok = position_from_index(j, nsq, width, *tuple(m), BINOM)
        if not ok:
            assert out[j] == 0 and got_bits[j] == 1
            continue
        flipped = Position(int(wm), int(wk), int(bm), int(bk), True, variant).flipped()
        board = (flipped.white_men, flipped.white_kings, flipped.black_men, flipped.black_kings)
        i = position_index(nsq, width, *map(np.uint64, board), BINOM)
        seen.add(i)
        assert out[j] == part[i] and got_bits[j] == bits[i]
    assert len(seen) == int(generator.slice_stats(variant, m, out)[0].positions)


@pytest.mark.parametrize(("variant", "name"), CASES)
def test_quiet_move_count_is_the_engines_move_list(variant, name) -> None:
    """Without a capture, the bitboard count of quiet moves inside the pair plus the
    promotions equals the engine's legal move list."""
    s = parse_slice(name)
    moves = new_move_buffer()
    ws = new_workspace()
    promo = promotion_row(variant.rules, True)
    offsets = np.full(4096, 0, dtype=np.int64)  # every slice at place 0 of the flat tables
    quiet = 0
    for wm, wk, bm, bk in _random_positions(variant, s, 400, seed=5):
        if has_capture(variant.rules, True, wm, wk, bm, bk):
            continue
        quiet += 1
        n = generate_moves(variant.rules, True, wm, wk, bm, bk, moves, ws)
        promoting = [
            i
            for i in range(n)
            if (int(wm) >> int(moves[i, F_FROM])) & 1 and (int(promo) >> int(moves[i, F_TO])) & 1
        ]
        where = np.zeros(solve.PENDING_PLACES, dtype=np.int64)
        inside, m = solve.quiet_exits(offsets, variant.rules, BINOM, (wm, wk, bm, bk), where, 3)
        assert inside == n - len(promoting)
        assert m == 3 + len(promoting)  # appended after the places already queued
        want = [
            solve.place_after(
                offsets,
                variant.squares,
                variant.per_row,
                BINOM,
                *map(np.uint64, play_row(wm, wk, bm, bk, moves, i)),
            )  # fmt: skip
            for i in promoting
        ]
        assert sorted(where[3:m].tolist()) == sorted(want)
    assert quiet > 0


@pytest.mark.slow  # over 30 s in the quick tier (issue 51): CI's slow tier runs it
def test_wide_dependencies_leave_the_pair_one_byte(db3_international) -> None:
    """Dependencies read with two-byte values (one of them needed them) do not widen the
    pair: it is solved with one byte, to the same values, at half the state's memory."""
    pair = (parse_slice("1020"), parse_slice("2010"))
    deps = generator.dependency_tables(db3_international, INTERNATIONAL, pair)
    narrow = generator.solve_tables(INTERNATIONAL, pair, deps, 2)
    deps.widen()
    again = generator.solve_tables(INTERNATIONAL, pair, deps, 2)
    assert narrow.values.dtype == again.values.dtype == np.uint8
    np.testing.assert_array_equal(narrow.values, again.values)


@pytest.mark.slow  # over 30 s in the quick tier (issue 51): CI's slow tier runs it
def test_two_byte_values_equal_one_byte_values(db3_international) -> None:
    """The wide state (two-byte values, four-byte state words) solves to the same values,
    and they are locally consistent with their successors."""
    pair = (parse_slice("1020"), parse_slice("2010"))
    deps = generator.dependency_tables(db3_international, INTERNATIONAL, pair)
    narrow = generator._solve(INTERNATIONAL, pair, deps, 2, 8)
    deps.widen()
    assert deps.vals.dtype == np.uint16
    wide = generator._solve(INTERNATIONAL, pair, deps, 2, 16)
    assert narrow.values.dtype == np.uint8 and wide.values.dtype == np.uint16
    for s in pair:
        assert np.array_equal(narrow.view(s), wide.view(s))
        assert np.array_equal(
            wide.view(s), read_slice(slice_path(db3_international, s), INTERNATIONAL, s)
        )
    assert_locally_consistent(INTERNATIONAL, pair, wide, deps)


@pytest.mark.slow  # over 29 s in the quick tier (issue 51): CI's slow tier runs it
def test_distances_past_one_byte_stay_in_two_byte_state_words(
    db3_international, monkeypatch
) -> None:
    """A pair whose decided values pass one byte is solved once, with two-byte state words
    (a decided word's value takes its 15 low bits): the kings-only 0201+0102 (no promotions,
    so no exit values) from its dependencies with every distance 300 plies longer. Its
    values come out two bytes each, equal to those of four-byte state words, and locally
    consistent; 8827559 and before solved it twice."""
    pair = (parse_slice("0201"), parse_slice("0102"))
    deps = lengthened(db3_international, INTERNATIONAL, pair, 300)
    got, widths = solved_with_widths(monkeypatch, INTERNATIONAL, pair, deps)
    assert widths == [8]
    assert got.values.dtype == np.uint16 and got.values.max() > 300
    assert got.levels > 255  # values past one byte were set by the level passes too
    wide = generator._solve(INTERNATIONAL, pair, deps, 2, 16)
    np.testing.assert_array_equal(got.values, wide.values)
    assert_locally_consistent(INTERNATIONAL, pair, got, deps)


@pytest.mark.slow  # 34 s in the quick tier on a fresh install (the two-byte dependencies
# compile the solver again, as for the three above): CI's slow tier runs it
def test_an_exit_past_one_byte_switches_to_four_byte_state_words(
    db3_international, monkeypatch
) -> None:
    """An exit value (a promotion into a solved slice) over 254 does not fit an undecided
    two-byte word: the pair is solved again with four-byte words, and its values are
    locally consistent."""
    pair = (parse_slice("1020"), parse_slice("2010"))
    deps = lengthened(db3_international, INTERNATIONAL, pair, 300)
    got, widths = solved_with_widths(monkeypatch, INTERNATIONAL, pair, deps)
    assert widths == [8, 16]
    assert got.values.dtype == np.uint16 and got.values.max() > 300
    assert_locally_consistent(INTERNATIONAL, pair, got, deps)


def test_a_block_is_due_at_its_next_value_or_exit_level() -> None:
    """The level passes read a block again at the smallest value of its decided words
    still to come, or one level before the smallest exit value still to come; drawn
    words, drawn exits and words without an exit never make it due."""
    dec = 1 << 15
    words = np.array(
        [dec | 5, dec, (3 << 8) | 12, (1 << 8) | 255, 2 << 8, dec | 2], dtype=np.uint16
    )
    assert levels.block_due(words, 0, words.size, 3, 8) == 5  # the win at 5 comes first
    assert levels.block_due(words, 0, words.size, 5, 8) == 11  # then the exit at 12
    assert levels.block_due(words, 0, words.size, 10, 8) == 11
    assert levels.block_due(words, 0, words.size, 11, 8) == levels.NEVER
    assert levels.block_due(words, 1, 2, 0, 8) == levels.NEVER  # a decided draw
    wide = words.astype(np.uint32)
    wide[words >= dec] = (wide[words >= dec] & 0xFF) | (1 << 31)
    wide[words < dec] = ((wide[words < dec] >> 8) << 16) | np.where(
        (wide[words < dec] & 0xFF) == 255, 0xFFFF, wide[words < dec] & 0xFF
    )
    assert levels.block_due(wide, 0, wide.size, 3, 16) == 5
    assert levels.block_due(wide, 0, wide.size, 5, 16) == 11


def test_a_block_is_due_when_a_position_in_it_was_set_the_level_before() -> None:
    due = np.array([4, levels.NEVER], dtype=np.uint16)
    touched = np.zeros((2, 2), dtype=np.uint8)
    assert not levels.block_is_due(due, touched, 0, 3)
    assert levels.block_is_due(due, touched, 0, 4)
    assert not levels.block_is_due(due, touched, 1, 100)
    touched[1, 1] = 1  # set during level 2, so it holds a value 3 to expand
    assert levels.block_is_due(due, touched, 1, 3)
    assert not levels.block_is_due(due, touched, 1, 2)
    assert not levels.block_is_due(due, touched, 1, 4)


def test_working_memory_is_two_bytes_per_entry() -> None:
    assert solve.state_dtype(8)().itemsize == 2
    assert solve.max_value(8) == 254
    # the largest 6-piece pair (2.4 G entries) with its dependencies fits in 24 GiB
    assert task_memory_bytes(2_400_000_000, 6_000_000_000) < 20 * 2**30


@pytest.mark.slow  # 7 s on a fresh install (compiles the plain definition): CI's slow tier
def test_dont_care_entries_are_the_wdl_parts_definition(db3_international) -> None:
    """The solver's flags of entries without a stored WDL code (not positions, captures
    pending) equal the WDL part's own plain definition of them."""
    from tablebase.storage.wdl import DONT_CARE, classify

    for names in (("1020", "2010"), ("0201", "0102"), ("1011", "1110")):
        pair = tuple(parse_slice(n) for n in names)
        deps = generator.dependency_tables(db3_international, INTERNATIONAL, pair)
        solution = generator.solve_tables(INTERNATIONAL, pair, deps, 2)
        for s in pair:
            codes = classify(
                solution.view(s),
                INTERNATIONAL.rules,
                BINOM,
                np.array(tuple(s), dtype=np.int64),
                4,
            )
            assert np.array_equal(solution.dont_care(s), codes == DONT_CARE)
