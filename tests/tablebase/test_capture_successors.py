"""The solver's capture successors (:func:`captures.capture_successors`): the positions after
every legal capture, each once, against the reference move lists of
``tests/data/reference/movegen_cases.jsonl`` (International, English) and against the move
generator followed by ``play_row`` on random placements of every variant."""

from __future__ import annotations

import numpy as np
import pytest
from placements import random_placements

from tablebase.rules.captures import capture_successors, has_capture
from tablebase.rules.makemove import play_row
from tablebase.rules.movebuffer import new_move_buffer, new_successor_buffer, new_workspace
from tablebase.rules.movegen import generate_moves
from tablebase.rules.position import Position
from tablebase.rules.variants import VARIANTS, get_variant


def side_boards(pos: Position) -> tuple[bool, int, int, int, int]:
    """The side to move first: (white, own men, own kings, opponent men, opponent kings)."""
    if pos.white_to_move:
        return True, pos.white_men, pos.white_kings, pos.black_men, pos.black_kings
    return False, pos.black_men, pos.black_kings, pos.white_men, pos.white_kings


def successors(pos: Position) -> list[tuple[int, int, int, int]]:
    v = pos.variant
    white, om, ok, pm, pk = side_boards(pos)
    out = new_successor_buffer()
    ws = new_workspace()
    n = capture_successors(
        v.rules, white, np.uint64(om), np.uint64(ok), np.uint64(pm),
        np.uint64(pk), out, ws,
    )  # fmt: skip
    return [tuple(int(x) for x in row) for row in out[:n]]


def generated(pos: Position) -> set[tuple[int, int, int, int]]:
    """The positions after the generator's captures (empty without a capture)."""
    v = pos.variant
    white, om, ok, pm, pk = side_boards(pos)
    if not has_capture(v.rules, white, *map(np.uint64, (om, ok, pm, pk))):
        return set()
    moves = new_move_buffer()
    ws = new_workspace()
    args = map(np.uint64, (om, ok, pm, pk))
    n = generate_moves(v.rules, white, *args, moves, ws)
    return {
        tuple(int(x) for x in play_row(*map(np.uint64, (om, ok, pm, pk)), moves, i))
        for i in range(n)
    }


def test_a_windmill_is_one_successor_and_a_choice_of_landings_several():
    # 2x13x22x11x2 takes all four men and ends on its start square
    pos = Position.from_fen("W:WK2:B7,8,17,18")
    assert successors(pos) == [(0, 0, 0, 1 << 1)]
    # 46x28 may land on 23, 19, 14, 10 or 5: five positions, black to move, no black piece
    pos = Position.from_fen("W:WK46:B28")
    got = successors(pos)
    assert sorted(r[3] for r in got) == sorted(1 << (t - 1) for t in (23, 19, 14, 10, 5))
    assert all(r[:3] == (0, 0, 0) for r in got)


def test_no_capture_no_successor():
    assert successors(Position.from_fen("W:W31-50:B1-20")) == []


def test_majority_keeps_only_the_longest_and_a_man_is_crowned_where_it_ends():
    # 38x29x18 takes two and is the only legal capture (47x37 would take one): black to
    # move with its man on 42 left, against white men on 18 and 47
    (row,) = successors(Position.from_fen("W:W38,47:B23,33,42"))
    assert row == (1 << 41, 0, (1 << 17) | (1 << 46), 0)
    # 14x3 ends on the last row: a white king on 3, black has nothing left
    (row,) = successors(Position.from_fen("W:W14:B9"))
    assert row == (0, 0, 0, 1 << 2)


@pytest.mark.parametrize("variant", ["international", "english"])
def test_against_the_reference_move_lists(movegen_cases, variant):
    v = get_variant(variant)
    cases = [c for c in movegen_cases if c["variant"] == variant]
    assert len(cases) == 250
    checked = 0
    for case in cases:
        pos = Position.from_fen(case["fen"], v)
        white, om, ok, pm, pk = side_boards(pos)
        promo = v.white_promotion_row if white else v.black_promotion_row
        want = set()
        for m in case["moves"]:
            if not m["captures"]:
                continue
            frm, to = 1 << (m["from"] - 1), 1 << (m["to"] - 1)
            cap = sum(1 << (c - 1) for c in m["captures"])
            crowned = bool(om & frm) and bool(promo & to)
            if om & frm:
                nm, nk = (om & ~frm) | (0 if crowned else to), ok | (to if crowned else 0)
            else:
                nm, nk = om, (ok & ~frm) | to
            want.add((pm & ~cap, pk & ~cap, nm, nk))
        got = successors(pos)
        assert len(got) == len(set(got)), case["fen"]
        assert set(got) == want, case["fen"]
        checked += bool(want)
    assert checked > 100  # most reference positions have a capture


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_against_the_move_generator_on_random_placements(variant):
    v = get_variant(variant)
    captures = 0
    for pos in random_placements(v, 3000, seed=11, most=12):
        got = successors(pos)
        assert len(got) == len(set(got)), pos.fen()
        assert set(got) == generated(pos), pos.fen()
        captures += bool(got)
    assert captures > 500
