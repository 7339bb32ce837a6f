"""PDN move notation: writing, reading, ambiguity and errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablebase.rules import legal_moves
from tablebase.rules.notation import MoveError, move_text, parse_move, parse_squares
from tablebase.rules.position import Position
from tablebase.rules.variants import BRAZILIAN, ENGLISH, FRISIAN, INTERNATIONAL, RUSSIAN

# Two legal captures from 17 to 48 taking different pieces (a flying king).
TWIN_INTERNATIONAL = "W:WK17:B12,20,24,43"
# The same in English: a black man takes 9 and 17, or 10 and 18, both ending on 22.
TWIN_ENGLISH = "B:W9,10,17,18:B6"


def test_step_and_capture_texts():
    pos = Position.start(INTERNATIONAL)
    texts = {move_text(pos, m) for m in legal_moves(pos)}
    assert "32-28" in texts and len(texts) == 9
    cap = Position.from_fen("W:W38,47:B23,33,42")
    (move,) = legal_moves(cap)
    assert move_text(cap, move) == "38x18"


def test_parse_forms():
    pos = Position.from_fen("W:W38,47:B23,33,42")
    (move,) = legal_moves(pos)
    for text in ("38x18", "38X18", "38:18", " 38 x 18 ", "38x29x18", "38x18x23x33", "38x18x33"):
        assert parse_move(pos, text) == move, text


def test_parse_steps():
    pos = Position.start(INTERNATIONAL)
    move = parse_move(pos, "32-28")
    assert (move.frm, move.to, move.captures) == (32, 28, ())


@pytest.mark.parametrize(
    ("fen", "variant", "short", "paths"),
    [
        (TWIN_INTERNATIONAL, INTERNATIONAL, "17x48", {"17x3x25x48", "17x8x30x48"}),
        (TWIN_ENGLISH, ENGLISH, "6x22", {"6x13x22", "6x15x22"}),
    ],
)
def test_twin_captures_are_written_with_the_full_path(fen, variant, short, paths):
    pos = Position.from_fen(fen, variant)
    moves = legal_moves(pos)
    assert len(moves) == 2
    assert {(m.frm, m.to) for m in moves} == {(moves[0].frm, moves[0].to)}
    assert moves[0].captures != moves[1].captures
    assert {move_text(pos, m) for m in moves} == paths
    assert {move_text(pos, m, moves) for m in moves} == paths
    for m in moves:
        assert parse_move(pos, move_text(pos, m)) == m
    # the short form names both candidates
    with pytest.raises(MoveError) as info:
        parse_move(pos, short)
    assert info.value.reason == "ambiguous"
    assert set(info.value.candidates) == paths
    for p in paths:
        assert p in str(info.value)


def test_twin_captures_can_be_told_apart_by_captured_squares():
    pos = Position.from_fen(TWIN_INTERNATIONAL)
    assert parse_move(pos, "17x48x20").captures == (12, 20, 43)
    assert parse_move(pos, "17x48x24").captures == (12, 24, 43)
    assert parse_move(pos, "17x48x12x24x43").captures == (12, 24, 43)
    eng = Position.from_fen(TWIN_ENGLISH, ENGLISH)
    assert parse_move(eng, "6x22x9x17").captures == (9, 17)
    assert parse_move(eng, "6x22x18").captures == (10, 18)
    with pytest.raises(MoveError, match="ambiguous"):
        parse_move(pos, "17x48x12")  # both take 12


def test_error_not_legal_lists_the_legal_moves():
    pos = Position.start(INTERNATIONAL)
    with pytest.raises(MoveError) as info:
        parse_move(pos, "28-23")
    err = info.value
    assert err.reason == "not legal in this position"
    assert "32-28" in err.candidates and len(err.candidates) == 9
    assert "legal: 31-26" in str(err)


def test_error_capture_written_as_step_and_step_as_capture():
    cap = Position.from_fen("W:W38,47:B23,33,42")
    with pytest.raises(MoveError, match="not legal"):
        parse_move(cap, "38-18")
    with pytest.raises(MoveError, match="not legal"):
        parse_move(Position.start(INTERNATIONAL), "32x28")


def test_error_no_legal_moves_at_all():
    with pytest.raises(MoveError, match=r"legal: none"):
        parse_move(Position.from_fen("W:W:B1"), "1-6")


@pytest.mark.parametrize("text", ["", "abc", "32", "32-", "-28", "32--28", "32-28x", "32/28"])
def test_error_malformed(text):
    with pytest.raises(MoveError) as info:
        parse_move(Position.start(INTERNATIONAL), text)
    assert info.value.reason.startswith("not a move")


def test_error_step_with_more_than_two_squares():
    with pytest.raises(MoveError, match="a step has exactly two squares"):
        parse_squares("32-28-23")
    with pytest.raises(MoveError, match="not a move"):
        parse_squares("38x29-18")


def test_partial_route_is_matched_by_from_and_to():
    pos = Position.from_fen("W:WK38:B7,8,27,33")
    move = parse_move(pos, "38x2x49")
    assert (move.frm, move.to) == (38, 49)


@pytest.mark.parametrize(("text", "square"), [("51-46", 51), ("0-5", 0), ("32-99", 99)])
def test_error_square_out_of_range(text, square):
    with pytest.raises(MoveError, match=f"square {square} out of range 1-50"):
        parse_move(Position.start(INTERNATIONAL), text)


def test_english_squares_out_of_range():
    with pytest.raises(MoveError, match="out of range 1-32"):
        parse_move(Position.start(ENGLISH), "12-33")


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    variant=st.sampled_from([INTERNATIONAL, ENGLISH, RUSSIAN, BRAZILIAN, FRISIAN]),
    notation=st.sampled_from(["numeric", "alphanumeric"]),
)
def test_property_notation_round_trip(positions, data, variant, notation):
    pos = data.draw(positions(variant))
    moves = legal_moves(pos)
    texts = [move_text(pos, m, moves, notation) for m in moves]
    assert len(set(texts)) == len(moves)  # every legal move has its own text
    for move, text in zip(moves, texts, strict=True):
        assert parse_move(pos, text) == move
        if move.is_capture:
            assert parse_move(pos, "x".join(map(str, move.path))) == move


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\uff13\uff12-\uff12\uff18", "not a move"),  # fullwidth digits are not squares
        ("1" * 5000 + "-28", "is not a square"),
    ],
)
def test_non_ascii_and_huge_numbers_are_refused(text, message):
    with pytest.raises(MoveError, match=message):
        parse_move(Position.start(INTERNATIONAL), text)
