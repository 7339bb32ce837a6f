"""Quiet unmoves: every predecessor by one non-capture move, un-promotion included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tablebase.rules import legal_moves, play, quiet_unmoves, unmoves
from tablebase.rules.position import Position
from tablebase.rules.variants import BRAZILIAN, ENGLISH, INTERNATIONAL, RUSSIAN


def unmove_set(fen: str, variant=INTERNATIONAL, legal_only: bool = True):
    pos = Position.from_fen(fen, variant)
    return {(prev.fen(), mv.frm, mv.to) for prev, mv in quiet_unmoves(pos, legal_only)}


def test_man_unmoves_go_backwards_only():
    # White just moved the man now on 28 (black to move); it came from 32 or 33.
    assert unmove_set("B:W28:BK1") == {("W:W32:BK1", 32, 28), ("W:W33:BK1", 33, 28)}


def test_flying_king_unmoves_reach_back_along_every_diagonal():
    got = unmove_set("B:WK50:BK1")
    assert {frm for _, frm, _ in got} == {44, 39, 33, 28, 22, 17, 11, 6, 45}
    assert all(to == 50 for _, _, to in got)


def test_english_king_unmoves_are_one_step():
    got = unmove_set("B:W21:BK18", ENGLISH, legal_only=False)
    assert got == {("W:W25:BK18", 25, 21)}  # white moved last: its man came from 25
    got = unmove_set("W:WK18:B1", ENGLISH)
    assert got == set()  # black moved last but its only piece on 1 cannot have stepped
    got = unmove_set("B:WK18:B1", ENGLISH)
    assert {frm for _, frm, _ in got} == {14, 15, 22, 23}


def test_unpromotion_international():
    # A white king on 3 may have been a man on 8 or 9 that was crowned by its last step.
    got = unmove_set("B:WK3:BK50")
    assert ("W:W8:BK50", 8, 3) in got and ("W:W9:BK50", 9, 3) in got
    assert ("W:WK8:BK50", 8, 3) in got and ("W:WK14:BK50", 14, 3) in got
    assert ("W:W14:BK50", 14, 3) not in got  # a man steps only one square


def test_unpromotion_english():
    got = unmove_set("W:W32:BK30", ENGLISH)
    assert ("B:W32:B25", 25, 30) in got and ("B:W32:B26", 26, 30) in got
    assert ("B:W32:BK25", 25, 30) in got and ("B:W32:BK26", 26, 30) in got


def test_legal_only_drops_predecessors_with_a_capture():
    # Had white's man stood on 33, white would have had to take 29 instead of stepping.
    everything = unmove_set("B:W28:B23,29", legal_only=False)
    legal = unmove_set("B:W28:B23,29")
    assert ("W:W33:B23,29", 33, 28) in everything
    assert ("W:W33:B23,29", 33, 28) not in legal
    assert ("W:W32:B23,29", 32, 28) in legal


def test_legal_only_sees_backward_captures_of_men_on_8x8():
    # White's man on d4 (18) came from c3 or e3; from either, with black's man on d2, white
    # had a backward capture in Russian and Brazilian, so neither step was legal; English men
    # do not capture backwards, so both were.
    for v in (RUSSIAN, BRAZILIAN):
        assert unmove_set("B:W18:B26", v) == set()
        assert {frm for _, frm, _ in unmove_set("B:W18:B26", v, legal_only=False)} == {22, 23}
    assert {frm for _, frm, _ in unmove_set("B:W18:B26", ENGLISH)} == {22, 23}


def test_russian_flying_king_and_unpromotion_unmoves():
    # A white king on b8 (1): a flying king from a7 or anywhere on b8-h2 before it, or a man
    # crowned by stepping from a7 or c7.
    got = unmove_set("B:WK1:B21", RUSSIAN)
    kings = {frm for prev, frm, _ in got if prev.startswith("W:WK")}
    men = {frm for prev, frm, _ in got if not prev.startswith("W:WK")}
    assert kings == {5, 6, 10, 15, 19, 24, 28}
    assert men == {5, 6}


def test_compiled_unmoves_buffer_rows():
    v = INTERNATIONAL
    pos = Position.from_fen("B:WK3:BK50", v)
    out = np.zeros((256, 7), dtype=np.uint64)
    n = unmoves.quiet_unmoves(v.rules, False, *pos.side_boards, out, True)
    rows = {(int(r[4]) + 1, int(r[5]) + 1, int(r[6])) for r in out[:n]}
    assert (8, 3, 1) in rows and (8, 3, 0) in rows and (14, 3, 0) in rows
    assert (14, 3, 1) not in rows


# --- properties ------------------------------------------------------------------------------

SETTINGS = settings(max_examples=250, deadline=None)


@SETTINGS
@given(data=st.data(), variant=st.sampled_from([INTERNATIONAL, ENGLISH, RUSSIAN, BRAZILIAN]))
def test_property_every_quiet_move_is_undone(positions, data, variant):
    pos = data.draw(positions(variant))
    for move in legal_moves(pos):
        if move.is_capture:
            continue
        nxt = play(pos, move)
        preds = {(prev, mv.frm, mv.to) for prev, mv in quiet_unmoves(nxt)}
        assert (pos, move.frm, move.to) in preds, (pos.fen(), move)


@SETTINGS
@given(
    data=st.data(),
    variant=st.sampled_from([INTERNATIONAL, ENGLISH, RUSSIAN, BRAZILIAN]),
    legal_only=st.booleans(),
)
def test_property_every_unmove_leads_back_by_a_legal_move(positions, data, variant, legal_only):
    pos = data.draw(positions(variant))
    for prev, mv in quiet_unmoves(pos, legal_only):
        assert prev.white_to_move != pos.white_to_move
        assert prev.variant is variant
        assert Position.from_fen(prev.fen(), variant) == prev  # a valid position
        if legal_only:
            (move,) = [m for m in legal_moves(prev) if (m.frm, m.to) == (mv.frm, mv.to)]
            assert not move.is_capture
        else:
            move = mv  # the step itself; the mover may have had to capture instead
        assert play(prev, move) == pos, (pos.fen(), prev.fen(), mv)
