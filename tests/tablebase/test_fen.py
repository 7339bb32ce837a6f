"""FEN: parsing, writing, round trips and precise errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablebase.rules.position import FenError, Position, board_of, reverse_bits, squares_of
from tablebase.rules.variants import BRAZILIAN, ENGLISH, INTERNATIONAL, RUSSIAN


def test_start_positions():
    assert Position.start(INTERNATIONAL).fen() == "W:W31-50:B1-20"
    assert Position.start(ENGLISH).fen() == "B:W21-32:B1-12"
    assert Position.start("english") == Position.from_fen("B:W21-32:B1-12", ENGLISH)


def test_parse_pieces_kings_and_ranges():
    pos = Position.from_fen("W:W31-33,K45:B1-3,K10")
    assert squares_of(pos.white_men) == [31, 32, 33]
    assert squares_of(pos.white_kings) == [45]
    assert squares_of(pos.black_men) == [1, 2, 3]
    assert squares_of(pos.black_kings) == [10]
    assert pos.white_to_move
    assert pos.piece_at(45) == "W" and pos.piece_at(10) == "B" and pos.piece_at(20) == "."


def test_king_ranges():
    pos = Position.from_fen("B:WK1-3,10:BK46-48")
    assert squares_of(pos.white_kings) == [1, 2, 3]
    assert squares_of(pos.white_men) == [10]
    assert squares_of(pos.black_kings) == [46, 47, 48]
    assert not pos.white_to_move


def test_writer_compresses_runs_of_three_men_and_lists_kings():
    pos = Position.from_fen("W:W31,32,33,35,36,K45,K46,K47:B1,2,K3")
    assert pos.fen() == "W:W31-33,35,36,K45,K46,K47:B1,2,K3"


@pytest.mark.parametrize(
    "fen",
    [
        "W:W31-50:B1-20",
        "B:WK1,28:B23,40",
        "W:W:B1",
        "B:WK10:B",
        "W:W:B",
        "W:W6,K7,K8,9:B41,K42",
    ],
)
def test_round_trip_examples(fen):
    assert Position.from_fen(fen).fen() == fen


def test_trailing_dot_whitespace_and_lower_case_are_accepted():
    want = Position.from_fen("W:W31-50:B1-20")
    assert Position.from_fen("W:W31-50:B1-20.") == want
    assert Position.from_fen("  W:W31-50:B1-20.  ") == want
    assert Position.from_fen("w:w31-50:b1-20") == want
    assert Position.from_fen("W:B1-20:W31-50") == want  # colour fields in either order


def test_empty_sides_are_allowed():
    assert Position.from_fen("W:W:B1").piece_count() == (0, 0, 1, 0)
    assert Position.from_fen("W:WK10:B").piece_count() == (0, 1, 0, 0)
    assert Position.from_fen("B:B1").piece_count() == (0, 0, 1, 0)  # white list omitted


def _error(fen, variant=INTERNATIONAL) -> FenError:
    with pytest.raises(FenError) as info:
        Position.from_fen(fen, variant)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.fen == fen and err.reason in str(err)
    return err


def test_error_unknown_side_to_move():
    err = _error("X:W31:B1")
    assert err.token == "X"
    assert "side to move must be W or B" in err.reason


def test_error_unknown_side_letter():
    err = _error("W:X31:B1")
    assert err.token == "X"
    assert "unknown side letter" in err.reason


@pytest.mark.parametrize(
    ("fen", "variant", "square"),
    [
        ("W:W51:B1", INTERNATIONAL, 51),
        ("W:W0:B1", INTERNATIONAL, 0),
        ("W:W31:B1-51", INTERNATIONAL, 51),
        ("B:W33:B1", ENGLISH, 33),
        ("B:W21:BK40", ENGLISH, 40),
    ],
)
def test_error_square_out_of_range_for_the_variant(fen, variant, square):
    err = _error(fen, variant)
    assert err.reason == f"square {square} out of range 1-{variant.squares} for {variant.name}"


@pytest.mark.parametrize(
    ("fen", "square"),
    [("W:W31,31:B1", 31), ("W:W31:B31", 31), ("W:W31,K31:B1", 31), ("W:W30-35,33:B1", 33)],
)
def test_error_same_square_twice(fen, square):
    err = _error(fen)
    assert err.reason == f"square {square} given twice"


@pytest.mark.parametrize(
    ("fen", "variant", "reason"),
    [
        ("W:W3:B20", INTERNATIONAL, "white man on square 3, its own promotion row"),
        ("W:W31:B48", INTERNATIONAL, "black man on square 48, its own promotion row"),
        ("B:W2:B12", ENGLISH, "white man on square 2, its own promotion row"),
        ("B:W21:B29", ENGLISH, "black man on square 29, its own promotion row"),
    ],
)
def test_error_man_on_its_own_promotion_row(fen, variant, reason):
    assert _error(fen, variant).reason == reason


def test_men_on_their_own_back_row_and_kings_anywhere_are_fine():
    assert Position.from_fen("W:W46,K1:B5,K50").piece_count() == (1, 1, 1, 1)


@pytest.mark.parametrize(
    ("fen", "reason"),
    [
        ("", "empty FEN"),
        ("W:W31:W32", "colour W given twice"),
        ("W:W31,,32:B1", "empty square token"),
        ("W:W31:", "empty colour field"),
        ("W:WKK1:B3", "expected a square number or name, got 'K1'"),
        ("W:W35-31:B1", "range runs backwards"),
        ("W:W1-:B3", "expected a square number or name, got ''"),
        ("W:Wx:B3", "expected a square number or name, got 'x'"),
        ("W:W\uff12\uff11:B3", "expected a square number or name, got '\uff12\uff11'"),  # fullwidth
        ("W:W" + "1" * 5000 + ":B3", "1111111111111111111\u2026 is not a square of international"),
    ],
)
def test_error_malformed(fen, reason):
    error = _error(fen)
    assert error.reason == reason
    assert len(str(error)) < 200  # a huge FEN is named by its start only


# --- helpers and symmetry ---------------------------------------------------------------


def test_board_helpers():
    assert squares_of(board_of([1, 5, 50])) == [1, 5, 50]
    assert reverse_bits(1, 50) == 1 << 49
    assert reverse_bits(0, 50) == 0


def test_flipped_start_is_start_with_the_other_side_to_move():
    start = Position.start(INTERNATIONAL)
    assert start.flipped().fen() == "B:W31-50:B1-20"
    assert start.flipped().flipped() == start


# --- properties ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(data=st.data(), variant=st.sampled_from([INTERNATIONAL, ENGLISH, RUSSIAN, BRAZILIAN]))
def test_property_fen_round_trip(positions, data, variant):
    pos = data.draw(positions(variant))
    text = pos.fen()
    assert Position.from_fen(text, variant) == pos
    assert Position.from_fen(text + ".", variant) == pos
    assert Position.from_fen(text, variant).fen() == text
    named = pos.fen("alphanumeric")
    assert Position.from_fen(named, variant) == pos
    assert Position.from_fen(named + ":H0:F1", variant) == pos


@settings(max_examples=200, deadline=None)
@given(data=st.data(), variant=st.sampled_from([INTERNATIONAL, ENGLISH]))
def test_property_long_form_fen_parses_to_the_same_position(positions, data, variant):
    # Every piece listed on its own, in shuffled order, black list first.
    pos = data.draw(positions(variant))
    tokens = {"W": [], "B": []}
    for colour, men, kings in (
        ("W", pos.white_men, pos.white_kings),
        ("B", pos.black_men, pos.black_kings),
    ):
        tokens[colour] += [str(s) for s in squares_of(men)]
        tokens[colour] += [f"K{s}" for s in squares_of(kings)]
        tokens[colour] = data.draw(st.permutations(tokens[colour]))
    side = "W" if pos.white_to_move else "B"
    fen = f"{side}:B{','.join(tokens['B'])}:W{','.join(tokens['W'])}"
    assert Position.from_fen(fen, variant) == pos


@settings(max_examples=200, deadline=None)
@given(data=st.data(), variant=st.sampled_from([INTERNATIONAL, ENGLISH, RUSSIAN, BRAZILIAN]))
def test_property_flip_is_an_involution(positions, data, variant):
    pos = data.draw(positions(variant))
    assert pos.flipped().flipped() == pos
    w, wk, b, bk = pos.piece_count()
    assert pos.flipped().piece_count() == (b, bk, w, wk)


def test_square_chars_writes_one_character_a_square_in_pdn_order() -> None:
    from tablebase.rules.position import Position
    from tablebase.rules.variants import ENGLISH

    text = Position.from_fen("W:W32,K1:B5,K29", ENGLISH).square_chars("wWbBe")
    assert len(text) == 32
    assert (text[0], text[4], text[28], text[31]) == ("W", "b", "B", "w")
    assert set(text[1:4] + text[5:28] + text[29:31]) == {"e"}
