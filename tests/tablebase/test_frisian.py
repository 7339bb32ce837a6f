"""Frisian draughts in the rules engine: one concrete position per rule (straight captures of
men and of flying kings, the capture of greatest value, king precedence, crowning only at the
end of a move, the three-move king limit), FEN with the king runs, perft from the start
against independent implementations, and the command line.

Board (PDN squares, white at the bottom)::

     .  1  .  2  .  3  .  4  .  5
     6  .  7  .  8  .  9  . 10  .
     . 11  . 12  . 13  . 14  . 15
    16  . 17  . 18  . 19  . 20  .
     . 21  . 22  . 23  . 24  . 25
    26  . 27  . 28  . 29  . 30  .
     . 31  . 32  . 33  . 34  . 35
    36  . 37  . 38  . 39  . 40  .
     . 41  . 42  . 43  . 44  . 45
    46  . 47  . 48  . 49  . 50  .

A straight capture jumps the nearest square of the same colour along a row (23 over 24 to
25) or a column (23 over 33 to 43).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tablebase.cli import main
from tablebase.rules import FenError, Position, legal_moves, perft, play, quiet_unmoves
from tablebase.rules.captures import capture_key, has_capture
from tablebase.rules.kingruns import king_barred, king_run_after, king_run_kept
from tablebase.rules.notation import move_text, parse_move
from tablebase.rules.position import NO_RUNS, squares_of
from tablebase.rules.variants import (
    FRISIAN,
    INTERNATIONAL,
    VARIANTS,
    variant_for_game_type,
)


def pos(fen: str) -> Position:
    return Position.from_fen(fen, FRISIAN)


def moves_of(p: Position) -> set[tuple[int, int, tuple[int, ...]]]:
    return {(m.frm, m.to, m.captures) for m in legal_moves(p)}


# --- the variant as data -------------------------------------------------------------------


def test_variant_data():
    assert VARIANTS["frisian"] is FRISIAN
    assert variant_for_game_type(40) is FRISIAN
    assert FRISIAN.size == 10 and FRISIAN.white_moves_first and FRISIAN.flying_kings
    assert Position.start(FRISIAN) == Position.from_fen("W:W31-50:B1-20", FRISIAN)
    assert FRISIAN.king_move_limit == 3 and FRISIAN.rules.king_limit == 3
    assert FRISIAN.rules.straight and FRISIAN.rules.value
    assert FRISIAN.mid_capture_crowning == "passes"
    with pytest.raises(ValueError, match="needs men_capture_backwards"):
        dataclasses.replace(FRISIAN, name="x", men_capture_backwards=False)
    with pytest.raises(ValueError, match="needs majority_capture"):
        dataclasses.replace(FRISIAN, name="x", majority_capture=False)
    for name, v in VARIANTS.items():
        if name != "frisian":
            assert v.rules.king_limit == 0 and not v.rules.straight and not v.rules.value
            assert v.neighbours.shape == (v.squares, 4)


def test_straight_neighbours():
    nbr = FRISIAN.neighbours
    assert nbr.shape == (50, 8)
    # up (row - 2), left, right, down (row + 2) of square 23, 0-based
    assert [int(nbr[22, d]) + 1 for d in range(4, 8)] == [13, 22, 24, 33]
    assert (nbr[:, :4] == INTERNATIONAL.neighbours).all()
    assert int(nbr[0, 4]) == -1 and int(nbr[5, 5]) == -1  # off the top, off the left edge


# --- straight captures ---------------------------------------------------------------------


def test_man_captures_along_a_row():
    assert moves_of(pos("W:W23:B24")) == {(23, 25, (24,))}
    assert moves_of(pos("W:W23:B22")) == {(23, 21, (22,))}


def test_man_captures_along_a_column_forwards_and_backwards():
    assert moves_of(pos("W:W33:B23")) == {(33, 13, (23,))}
    assert moves_of(pos("W:W23:B33")) == {(23, 43, (33,))}
    assert moves_of(pos("B:W33:B23")) == {(23, 43, (33,))}  # black, backwards


def test_straight_capture_needs_the_square_behind():
    # 24 is taken but 25 is occupied; no capture, so the men move diagonally forward
    assert moves_of(pos("W:W23,25:B24")) == {(23, 18, ()), (23, 19, ()), (25, 20, ())}


def test_man_chain_mixes_diagonal_and_straight():
    # 46 up the column over 36 and 16, along row 1 over 7 and 9, down column 9 over 20
    p = pos("W:W46:B36,16,7,9,20")
    assert moves_of(p) == {(46, 30, (7, 9, 16, 20, 36))}


def test_flying_king_captures_straight_at_distance():
    # king on 46 takes 36 down the column from afar and may stop on any empty square behind
    assert moves_of(pos("W:WK46:B26")) == {(46, 16, (26,)), (46, 6, (26,))}
    # along the bottom row: 47, 48 empty, 49 taken, lands on 50
    assert moves_of(pos("W:WK46:BK49")) == {(46, 50, (49,))}


def test_king_chain_with_straight_legs():
    # king 46 up the column over 26 to 16 or 6; from 6 along row 1 over 9 to 10
    p = pos("W:WK46:B26,9")
    assert moves_of(p) == {(46, 10, (9, 26))}


def test_has_capture_sees_straight_captures():
    v = FRISIAN
    for fen, expected in (("W:W23:B24", True), ("W:WK46:B26", True), ("W:W23:B25", False)):
        own_m, own_k, opp_m, opp_k = pos(fen).side_boards
        got = has_capture(v.rules, True, own_m, own_k, opp_m, opp_k)
        assert bool(got) == expected, fen
    # the same position under International has no capture (only a row neighbour)
    p = Position.from_fen("W:W23:B24", INTERNATIONAL)
    assert {m.captures for m in legal_moves(p)} == {()}


# --- the capture of greatest value -----------------------------------------------------------


def capture_value(men: int, kings: int, with_king: bool = False) -> int:
    return int(capture_key(FRISIAN.rules, with_king, men + kings, kings))


def test_capture_key_orders_kings_just_under_two_men():
    assert capture_value(1, 0) < capture_value(0, 1) < capture_value(2, 0)
    for n in range(1, 20):
        assert capture_value(2 * n - 1, 0) < capture_value(0, n) < capture_value(2 * n, 0)
    # at equal value the capture made with a king comes first, but after any of more value
    assert capture_value(1, 0) < capture_value(1, 0, True) < capture_value(0, 1)
    assert capture_value(3, 0, True) < capture_value(0, 2)  # precedence never beats value
    # other variants: the number of pieces taken
    assert capture_key(INTERNATIONAL.rules, True, 3, 2) == 3


def test_a_king_outweighs_a_man_where_the_count_ties():
    # both men take one piece; a naive count allows both, the value rule only the king
    assert moves_of(pos("W:W46,45:B36,K40")) == {(45, 34, (40,))}


def test_two_men_outweigh_one_king():
    assert moves_of(pos("W:W46,45:B36,21,K40")) == {(46, 17, (21, 36))}


def test_two_kings_outweigh_three_men_though_fewer_pieces():
    # 46 takes kings 36 and 21; 45 takes men 35, 15 and 4: the count would take the men
    p = pos("W:W46,45:BK36,K21,35,15,4")
    assert moves_of(p) == {(46, 17, (21, 36))}


def test_equal_value_goes_to_the_king():
    # the man on 46 and the king on 5 each take one man: the king's captures only
    p = pos("W:W46,K5:B36,10")
    assert moves_of(p) == {(5, s, (10,)) for s in (14, 19, 23, 28, 32, 37, 41)}
    # but a man's capture of greater value beats the king's
    p = pos("W:W46,K5:B36,16,10")
    assert moves_of(p) == {(46, 6, (16, 36))}


# The two readings of the king's value part here: three kings against five men. Under "just
# under two men" (n kings worth more than 2n - 1 men: the reading we follow, see
# docs/RULES-VARIANTS.md) the kings must be taken; under "a man and a half" (pydraughts:
# 3 x 1.501 < 5) the men.
THREE_KINGS_FIVE_MEN = "W:W46,45:BK36,K21,K11,35,15,4,9,24"


def test_three_kings_outweigh_five_men():
    assert moves_of(pos(THREE_KINGS_FIVE_MEN)) == {(46, 6, (11, 21, 36))}


def test_pydraughts_reads_the_kings_value_otherwise():
    """pydraughts 0.6.7 values a king at 1.501 men and takes the five men here."""
    game_module = pytest.importorskip("draughts.core.game", reason="pydraughts not installed")
    game = game_module.Game("frisian", THREE_KINGS_FIVE_MEN)
    moves, captures = game.legal_moves()
    theirs = {
        (m[0][0], m[-1][1], tuple(sorted(c for c in cs if c)))
        for m, cs in zip(moves, captures, strict=True)
    }
    assert theirs == {(45, 34, (4, 9, 15, 24, 35))}


# --- crowning ---------------------------------------------------------------------------------


def test_man_passing_the_last_row_mid_capture_stays_a_man():
    # 12 over 7 to 1 (the last row), along it over 2 to 3, then down over 9 to 14
    p = pos("W:W12:B7,2,9")
    (m,) = legal_moves(p)
    assert (m.frm, m.to, m.captures, m.crowns) == (12, 14, (2, 7, 9), False)
    after = play(p, m)
    assert after.white_men == 1 << 13 and after.white_kings == 0


def test_man_ending_on_the_last_row_is_crowned():
    (m,) = legal_moves(pos("W:W12:B7,2"))
    assert (m.to, m.crowns) == (3, True)
    assert play(pos("W:W12:B7,2"), m).white_kings == 1 << 2


# --- the king-move limit ---------------------------------------------------------------------

KINGS_AND_MEN = "W:W31,K45:B10,K3"


def quiet(p: Position, frm: int, to: int) -> Position:
    (m,) = [m for m in legal_moves(p) if (m.frm, m.to) == (frm, to)]
    return play(p, m)


def test_three_quiet_moves_then_the_king_is_barred():
    p = pos(KINGS_AND_MEN)
    p = quiet(p, 45, 40)
    assert p.king_runs == ((40, 1), (0, 0))
    p = quiet(p, 3, 8)  # black's king: black has a man, so its run starts
    assert p.king_runs == ((40, 1), (8, 1))
    p = quiet(quiet(quiet(p, 40, 45), 8, 3), 45, 40)
    assert p.king_runs == ((40, 3), (3, 2))
    assert 3 in {m.frm for m in legal_moves(p)}  # black's king has made two: it may go on
    p = quiet(p, 10, 15)  # black's man move ends black's run
    assert p.king_runs == ((40, 3), (0, 0))
    assert moves_of(p) == {(31, 26, ()), (31, 27, ())}  # the king on 40 may not move
    assert perft(p, 1) == 2


def test_a_man_move_resets_the_run():
    p = pos(KINGS_AND_MEN).with_runs(((45, 3), (0, 0)))
    assert {m.frm for m in legal_moves(p)} == {31}
    p = quiet(quiet(p, 31, 26), 3, 8)
    assert p.king_runs == ((0, 0), (8, 1))
    assert 45 in {m.frm for m in legal_moves(p)}


def test_a_capture_resets_the_run_and_a_barred_king_may_capture():
    p = pos("W:W31,K45:B10,40").with_runs(((45, 3), (0, 0)))
    # over 40 to 23 (a flying landing), then up the diagonal over 10 to 5
    assert moves_of(p) == {(45, 5, (10, 40))}
    after = play(p, legal_moves(p)[0])
    assert after.king_runs == ((0, 0), (0, 0))


def test_another_king_starts_its_own_run():
    p = pos("W:W31,K45,K50:B10,K3").with_runs(((45, 3), (0, 0)))
    assert 50 in {m.frm for m in legal_moves(p)} and 45 not in {m.frm for m in legal_moves(p)}
    p = quiet(p, 50, 44)
    assert p.king_runs == ((44, 1), (0, 0))
    p = quiet(p, 3, 8)
    assert 45 in {m.frm for m in legal_moves(p)}  # the first king is free again


def test_no_limit_without_men():
    # white has only a king: it moves four times in a row while black's man walks down
    p = pos("W:WK45:B2")
    for frm, to, bf, bt in ((45, 50, 2, 8), (50, 45, 8, 13), (45, 50, 13, 19), (50, 45, 19, 24)):
        p = quiet(quiet(p, frm, to), bf, bt)
        assert p.king_runs == ((0, 0), (0, 0))  # white has no men: no run is kept
    assert 45 in {m.frm for m in legal_moves(p)}
    assert p.with_runs(((45, 3), (0, 0))).king_runs[0] == (0, 0)
    v = FRISIAN
    assert king_barred(v.rules, np.uint64(0), np.uint64(1 << 44), 44, 3) == 0


def test_the_run_ends_with_its_king_or_the_last_man():
    # black's king on 34 is barred; white takes it: black's run is gone
    p = pos("W:W39:B10,K34").with_runs(((0, 0), (34, 3)))
    p = play(p, legal_moves(p)[0])
    assert p.king_runs == ((0, 0), (0, 0))
    # white takes black's last man: black's run no longer counts
    p = pos("W:W26:B16,K3").with_runs(((0, 0), (3, 3)))
    p = play(p, legal_moves(p)[0])
    assert p.king_runs == ((0, 0), (0, 0))
    assert 3 in {m.frm for m in legal_moves(p)}


def test_constructor_checks_and_normalises_runs():
    p = pos(KINGS_AND_MEN)
    built = Position(
        p.white_men, p.white_kings, p.black_men, p.black_kings, True, FRISIAN, ((45, 2), (0, 0))
    )
    assert built == p.with_runs(((45, 2), (0, 0))) and built.king_runs == ((45, 2), (0, 0))
    with pytest.raises(ValueError, match="no white king"):
        Position(
            p.white_men, p.white_kings, p.black_men, p.black_kings, True, FRISIAN, ((31, 1), (0, 0))
        )
    with pytest.raises(ValueError, match="bad black king run"):
        p.with_runs(((0, 0), (3, 4)))
    kings_only = pos("W:WK45:B10,K3")
    assert kings_only.with_runs(((45, 3), (0, 0))) == kings_only  # white has no men


def test_compiled_run_helpers():
    r = FRISIAN.rules
    men, king45 = np.uint64(1 << 30), np.uint64(1 << 44)
    assert king_barred(r, men, king45, 44, 3) == king45
    assert king_barred(r, men, king45, 44, 2) == 0
    assert king_barred(r, np.uint64(0), king45, 44, 3) == 0
    assert king_barred(INTERNATIONAL.rules, men, king45, 44, 3) == 0
    assert tuple(king_run_after(r, men, king45, 44, 2, 44, 39, False)) == (39, 3)
    assert tuple(king_run_after(r, men, king45, -1, 0, 44, 39, False)) == (39, 1)
    assert tuple(king_run_after(r, men, king45, 44, 2, 44, 33, True)) == (-1, 0)
    assert tuple(king_run_after(r, men, king45, 44, 2, 30, 25, False)) == (-1, 0)
    assert tuple(king_run_kept(r, men, king45, 44, 2)) == (44, 2)
    assert tuple(king_run_kept(r, men, np.uint64(0), 44, 2)) == (-1, 0)


# --- FEN -------------------------------------------------------------------------------------


def test_fen_round_trip_with_runs():
    p = pos("W:W31,K45:B10,K3:H0:F1:+0+345")
    assert p.king_runs == ((45, 3), (0, 0))
    assert p.fen() == "W:W31,K45:BK3,10:H0:F1:+0+345"
    assert pos(p.fen()) == p
    q = pos("B:W31,K45:B10,K3:+23+145")  # without H and F
    assert q.king_runs == ((45, 1), (3, 2))
    assert pos(q.fen()) == q
    assert pos("W:W31,K45:B10,K3:H0:F1:+0+0").fen() == "W:W31,K45:BK3,10"
    assert pos(KINGS_AND_MEN).flipped().flipped() == pos(KINGS_AND_MEN)
    f = q.flipped()
    assert f.king_runs == ((48, 2), (6, 1)) and f.flipped() == q


@pytest.mark.parametrize(
    ("fen", "reason"),
    [
        ("W:W31,K45:B10,K3:+0+445", "at most 3"),
        ("W:W31,K45:B10,K3:+0+340", "no white king"),
        ("W:W31,K45:B10,K3:+0+3", "needs its king's square"),
        ("W:W31,K45:B10,K3:+x+0", "king-move field"),
    ],
)
def test_fen_run_errors(fen, reason):
    with pytest.raises(FenError, match=reason):
        pos(fen)


def test_runs_only_where_the_variant_has_a_limit():
    assert Position.from_fen("W:W31,K45:B10:+0+0", INTERNATIONAL).king_runs == ((0, 0), (0, 0))
    with pytest.raises(FenError, match="no king-move limit"):
        Position.from_fen("W:W31,K45:B10:+0+145", INTERNATIONAL)


# --- notation --------------------------------------------------------------------------------


def test_notation_of_straight_captures_and_the_barred_king():
    p = pos("W:W46:B36,16,7,9,20")
    (m,) = legal_moves(p)
    assert move_text(p, m, legal_moves(p)) == "46x30"
    assert parse_move(p, "46x30") == m
    barred = pos(KINGS_AND_MEN).with_runs(((45, 3), (0, 0)))
    with pytest.raises(ValueError, match="45-40"):
        parse_move(barred, "45-40")


def test_a_route_with_straight_legs_names_its_capture():
    """Two king captures from 1 to 15 share their first straight leg (1x5 along the top
    row) and differ in the middle: each is written as its whole route, and each route reads
    back as its own capture (the reader once took straight legs for no route at all and
    called both texts ambiguous)."""
    p = pos("W:WK1,36,41,43:B4,9,10,12,13,20,32,40")
    moves = legal_moves(p)
    twins = [m for m in moves if m.frm == 1 and m.to == 15]
    assert sorted(m.path for m in twins) == [(1, 5, 14, 3, 21, 38, 15), (1, 5, 19, 8, 21, 38, 15)]
    for m in twins:
        text = move_text(p, m, moves)
        assert text == "x".join(str(s) for s in m.path)
        assert parse_move(p, text) == m
    # from and to alone still name both
    with pytest.raises(ValueError, match="ambiguous"):
        parse_move(p, "1x15")


# --- perft -----------------------------------------------------------------------------------

# No published Frisian perft was found. Depths 1-6 were computed here with pydraughts 0.6.7
# (``draughts.core.game.Game("frisian")``, legal_moves recursion; depth 5 took 196 s, depth 6
# 801 s on the shared machine) and
# depths 1-8 with py-draughts 1.10.1 (``draughts.boards.frisian``, push/pop recursion), both
# independent Python implementations, counting a capture once per distinct (from, to,
# captured set) as perft.json does. py-draughts lists every route of a capture: after
# 31-27 17-22 33-28 it gives 22x33x31x22 and 22x31x33x22, one capture taking 27, 28, 32.
FRISIAN_PERFT = [9, 81, 658, 3874, 21265, 102431, 540126, 2825779]


@pytest.mark.parametrize(("depth", "count"), list(enumerate(FRISIAN_PERFT, start=1)))
def test_perft_from_start(depth, count):
    assert perft(Position.start(FRISIAN), depth) == count


def _py_draughts_perft(depth: int) -> int:
    board_class = pytest.importorskip("draughts.boards.frisian").Board
    board = board_class()

    def count(d: int) -> int:
        distinct = {}
        for m in board.legal_moves:
            key = (m.square_list[0], m.square_list[-1], frozenset(m.captured_list))
            distinct.setdefault(key, m)
        if d == 1:
            return len(distinct)
        total = 0
        for m in distinct.values():
            board.push(m)
            total += count(d - 1)
            board.pop()
        return total

    return count(depth)


def _pydraughts_perft(depth: int) -> int:
    game_module = pytest.importorskip("draughts.core.game", reason="pydraughts not installed")
    game = game_module.Game("frisian", "startpos")

    def count(d: int) -> int:
        moves, captures = game.legal_moves()
        distinct = {}
        for m, cs in zip(moves, captures, strict=True):
            distinct.setdefault((m[0][0], m[-1][1], frozenset(c for c in cs if c)), m)
        if d == 1:
            return len(distinct)
        total = 0
        for m in distinct.values():
            game.push(m)
            total += count(d - 1)
            game.pop()
        return total

    return count(depth)


def test_perft_live_against_py_draughts():
    assert _py_draughts_perft(5) == perft(Position.start(FRISIAN), 5)


def test_perft_live_against_pydraughts():
    assert _pydraughts_perft(3) == perft(Position.start(FRISIAN), 3)


@pytest.mark.slow
def test_perft_deep_live_against_py_draughts():
    assert _py_draughts_perft(7) == perft(Position.start(FRISIAN), 7) == FRISIAN_PERFT[6]


@pytest.mark.slow
def test_perft_live_against_pydraughts_depth_5():
    assert _pydraughts_perft(5) == FRISIAN_PERFT[4]


def test_perft_honours_the_runs():
    p = pos(KINGS_AND_MEN)
    barred = p.with_runs(((45, 3), (0, 0)))
    assert perft(barred, 1) == 2 < perft(p, 1)
    # perft 2 from the barred position: each man move frees the king again
    assert perft(barred, 2) == sum(perft(play(barred, m), 1) for m in legal_moves(barred))


# --- command line ----------------------------------------------------------------------------


def test_cli_perft_and_moves():
    runner = CliRunner()
    r = runner.invoke(main, ["perft", "--variant", "frisian", "-d", "4"])
    assert r.exit_code == 0, r.output
    assert r.output.strip().splitlines()[-1] == "3874"
    r = runner.invoke(main, ["moves", "--variant", "frisian", "--json", "W:W46:B36,16,7,9,20"])
    assert r.exit_code == 0, r.output
    (item,) = json.loads(r.output)["moves"]
    assert item["move"] == "46x30" and item["captures"] == [7, 9, 16, 20, 36]
    r = runner.invoke(main, ["moves", "--variant", "frisian", "W:W31,K45:B10,K3:H0:F1:+0+345"])
    assert r.exit_code == 0, r.output
    assert r.output.strip().endswith("2 moves: 31-26 31-27")
    r = runner.invoke(main, ["moves", "--variant", "frisian", "W:W31,K45:B10,K3:+0+340"])
    assert r.exit_code != 0 and "no white king" in r.output


# --- properties ------------------------------------------------------------------------------

SETTINGS = settings(max_examples=200, deadline=None)


def _with_random_runs(data, p: Position) -> Position:
    runs = []
    for men, kings in ((p.white_men, p.white_kings), (p.black_men, p.black_kings)):
        squares = squares_of(kings)
        if men and squares and data.draw(st.booleans()):
            runs.append((data.draw(st.sampled_from(squares)), data.draw(st.integers(1, 3))))
        else:
            runs.append((0, 0))
    return p.with_runs((runs[0], runs[1]))


@SETTINGS
@given(data=st.data())
def test_property_fen_round_trip_with_runs(positions, data):
    p = _with_random_runs(data, data.draw(positions(FRISIAN)))
    assert Position.from_fen(p.fen(), FRISIAN) == p
    assert Position.from_fen(p.fen("alphanumeric"), FRISIAN) == p
    assert p.flipped().flipped() == p


@SETTINGS
@given(data=st.data())
def test_property_runs_follow_the_rule(positions, data):
    """Along random games every run names a king of a side that has men, a barred king makes
    no quiet move, and the side's quiet moves with other pieces stay."""
    p = _with_random_runs(data, data.draw(positions(FRISIAN)))
    for _ in range(12):
        for (sq, n), men, kings in (
            (p.king_runs[0], p.white_men, p.white_kings),
            (p.king_runs[1], p.black_men, p.black_kings),
        ):
            assert 0 <= n <= 3
            assert n == 0 or (men and kings >> (sq - 1) & 1)
        moves = legal_moves(p)
        sq, n = p.king_runs[0 if p.white_to_move else 1]
        free = dataclasses.replace(p, king_runs=NO_RUNS)
        if n == 3:
            assert not [m for m in moves if m.frm == sq and not m.is_capture]
            assert {m for m in legal_moves(free) if m.frm != sq or m.is_capture} == set(moves)
        else:
            assert set(moves) == set(legal_moves(free))
        if not moves:
            break
        p = play(p, data.draw(st.sampled_from(moves)))


@SETTINGS
@given(data=st.data())
def test_property_every_quiet_move_is_undone(positions, data):
    p = data.draw(positions(FRISIAN))
    for move in legal_moves(p):
        if move.is_capture:
            continue
        nxt = dataclasses.replace(play(p, move), king_runs=NO_RUNS)
        preds = {(prev, mv.frm, mv.to) for prev, mv in quiet_unmoves(nxt)}
        assert (p, move.frm, move.to) in preds, (p.fen(), move)
