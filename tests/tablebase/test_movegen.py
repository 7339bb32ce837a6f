"""Move generation: one concrete position per rule, perft from the start position and the
500 reference positions of ``tests/data/reference/movegen_cases.jsonl``."""

from __future__ import annotations

import numpy as np
import pytest

from tablebase.rules import has_capture, legal_moves, perft, play
from tablebase.rules.captures import CROWN_CONTINUES, CROWN_PASSES, CROWN_STOPS
from tablebase.rules.geometry import bit, promotion_row
from tablebase.rules.makemove import make_move, play_row
from tablebase.rules.movebuffer import (
    F_FROM,
    F_NCAP,
    F_PATH,
    F_PLEN,
    F_TO,
    find_move,
    move_capture_count,
    move_captured,
    move_crowns,
    move_from,
    move_path_length,
    move_path_square,
    move_to,
    new_move_buffer,
    new_workspace,
)
from tablebase.rules.movegen import generate_moves
from tablebase.rules.position import Position
from tablebase.rules.variants import ENGLISH, INTERNATIONAL, get_variant

Key = tuple[int, int, tuple[int, ...]]


def move_set(fen: str, variant=INTERNATIONAL) -> set[Key]:
    """The legal moves of ``fen`` as a set of (from, to, sorted captures)."""
    return {(m.frm, m.to, m.captures) for m in legal_moves(Position.from_fen(fen, variant))}


def after(fen: str, frm: int, to: int, variant=INTERNATIONAL) -> Position:
    """The position after the unique legal move ``frm`` to ``to``."""
    pos = Position.from_fen(fen, variant)
    (move,) = [m for m in legal_moves(pos) if (m.frm, m.to) == (frm, to)]
    return play(pos, move)


# --- International -------------------------------------------------------------------------


def test_international_flying_king_captures_from_afar_and_lands_anywhere_behind():
    # 46 and 28 share the long diagonal 46-41-37-32-28-23-19-14-10-5.
    assert move_set("W:WK46:B28") == {(46, t, (28,)) for t in (23, 19, 14, 10, 5)}


def test_international_flying_king_quiet_moves_fly():
    moves = move_set("W:WK46:B1")
    assert {t for _, t, _ in moves} == {41, 37, 32, 28, 23, 19, 14, 10, 5}


def test_international_king_capture_passes_its_own_start_square():
    # 38x24 (33), x2 (8), x16 (7), then 16x.. along 16-21-27-32-38-43-49 takes 27 and flies
    # over 38, the square the king started from (now empty), to land on 32, 38, 43 or 49.
    fen = "W:WK38:B7,8,27,33"
    caps = (7, 8, 27, 33)
    assert move_set(fen) == {(38, t, caps) for t in (32, 38, 43, 49, 42, 47)}
    pos = Position.from_fen(fen)
    route = next(m for m in legal_moves(pos) if m.to == 49).path
    assert route == (38, 24, 2, 16, 49)


def test_international_king_capture_may_end_on_its_start_square():
    # The "windmill": 2x13x22x11x2 takes all four men and ends where it began.
    assert move_set("W:WK2:B7,8,17,18") == {(2, 2, (7, 8, 17, 18))}
    assert after("W:WK2:B7,8,17,18", 2, 2).fen() == "B:WK2:B"


def test_international_majority_rule_takes_the_most_pieces():
    # 47x37 would take one piece; 38x29x18 takes two and is the only legal move.
    assert move_set("W:W38,47:B23,33,42") == {(38, 18, (23, 33))}


def test_international_majority_rule_counts_kings_like_men_and_ties_are_free():
    # The man takes two men; the king takes a king and a man: both are maximal.
    assert move_set("W:W38,K46:B33,K23,K41") == {
        (38, 18, (23, 33)),
        *((46, t, (33, 41)) for t in (39, 44, 50)),
        *((46, t, (23, 41)) for t in (5, 10, 14, 19)),
    }


def test_international_majority_rule_also_applies_within_one_piece():
    # The man on 38 could stop after one capture (38x29 is not a move): it must go on.
    moves = move_set("W:W38:B23,33")
    assert moves == {(38, 18, (23, 33))}


def test_international_turkish_strike_captured_pieces_block_and_are_not_jumped_twice():
    # 17x50 takes 44; coming back up 50-44-...-11 would take 11, but 44 is still on the board
    # until the move ends (and may not be jumped again), so each capture is a single one.
    assert move_set("W:WK17:B7,11,44") == {(17, 50, (44,)), (17, 6, (11,))}


def test_international_turkish_strike_blocks_a_longer_route():
    # With pieces removed at once the king could take three; with the strike rule, two.
    moves = move_set("W:WK45:B20,34,42")
    assert moves == {(45, 47, (34, 42)), (45, 15, (20, 34))}
    assert max(len(c) for _, _, c in moves) == 2


def test_international_man_passing_the_last_row_mid_capture_stays_a_man():
    # 14x3 reaches row 0, but must go on 3x12: it ends on 12 as a man.
    assert move_set("W:W14:B8,9") == {(14, 12, (8, 9))}
    pos = after("W:W14:B8,9", 14, 12)
    assert pos.piece_at(12) == "w"
    assert pos.white_kings == 0


def test_international_man_ending_on_the_last_row_is_crowned():
    assert move_set("W:W14:B9") == {(14, 3, (9,))}
    assert after("W:W14:B9", 14, 3).piece_at(3) == "W"
    assert after("B:W31:B41", 41, 46).piece_at(46) == "B"


def test_international_man_captures_backwards():
    assert move_set("W:W28:B33") == {(28, 39, (33,))}
    assert move_set("B:W18:B23") == {(23, 12, (18,))}


def test_international_men_do_not_step_backwards():
    assert move_set("W:W28:B1") == {(28, 22, ()), (28, 23, ())}
    assert move_set("B:W50:B23") == {(23, 28, ()), (23, 29, ())}


def test_international_capture_is_compulsory():
    # The king could fly anywhere, but the man on 28 must capture.
    moves = move_set("W:W28,K50:B33,1")
    assert moves == {(28, 39, (33,))}


def test_international_white_moves_first():
    pos = Position.start(INTERNATIONAL)
    assert pos.white_to_move
    assert {m.frm for m in legal_moves(pos)} == {31, 32, 33, 34, 35}


def test_no_pieces_or_blocked_means_no_moves():
    assert move_set("W:W:B1") == set()
    assert move_set("W:W46:B41,37") == set()  # 46 blocked: 41 is black, 37 behind it too
    assert move_set("B:W21:B", ENGLISH) == set()


# --- English --------------------------------------------------------------------------------


def test_english_black_moves_first():
    pos = Position.start(ENGLISH)
    assert not pos.white_to_move
    assert pos.fen() == "B:W21-32:B1-12"
    assert {m.frm for m in legal_moves(pos)} == {9, 10, 11, 12}
    assert len(legal_moves(pos)) == 7


def test_english_men_capture_forward_only():
    # The black man on 14 has a white man behind it (10) with 7 empty: no capture.
    assert move_set("B:W10:B14", ENGLISH) == {(14, 17, ()), (14, 18, ())}
    assert move_set("B:W10,18:B14", ENGLISH) == {(14, 23, (18,))}


def test_english_any_capture_may_be_chosen():
    # 15x22 takes one piece while 14x23x32 and 15x24x31 take two: all three are legal.
    assert move_set("B:W18,19,27:B14,15", ENGLISH) == {
        (14, 32, (18, 27)),
        (15, 31, (19, 27)),
        (15, 22, (18,)),
    }


def test_english_a_started_capture_must_be_completed():
    # 14x23 may not stop after one jump when 23x32 follows.
    assert move_set("B:W18,27:B14", ENGLISH) == {(14, 32, (18, 27))}


def test_english_man_crowned_mid_capture_stops():
    # 22x31 crowns; a king on 31 could go on 31x24 over 27, but the move ends at once.
    assert move_set("B:W26,27:B22", ENGLISH) == {(22, 31, (26,))}
    pos = after("B:W26,27:B22", 22, 31, ENGLISH)
    assert pos.piece_at(31) == "B"
    assert pos.piece_at(27) == "w"


def test_english_kings_capture_backwards_and_continue():
    # The black king goes 19x10 over 15 and 10x1 over 6, both towards black's own side.
    assert move_set("B:W6,15:BK19", ENGLISH) == {(19, 1, (6, 15))}


def test_english_short_kings_step_one_square():
    assert move_set("W:WK18:B27", ENGLISH) == {(18, t, ()) for t in (14, 15, 22, 23)}


def test_english_short_kings_capture_only_adjacent_pieces():
    assert move_set("W:WK18:B23", ENGLISH) == {(18, 27, (23,))}
    assert move_set("W:WK18:BK22,K23", ENGLISH) == {(18, 25, (22,)), (18, 27, (23,))}


def test_english_capture_is_compulsory():
    assert move_set("B:W18,32:B14,1", ENGLISH) == {(14, 23, (18,))}


# --- compiled API ---------------------------------------------------------------------------


def test_bit_and_promotion_rows():
    assert int(bit(0)) == 1
    assert int(bit(49)) == 1 << 49
    for v in (INTERNATIONAL, ENGLISH):
        assert int(promotion_row(v.rules, True)) == v.white_promotion_row
        assert int(promotion_row(v.rules, False)) == v.black_promotion_row


def test_make_move_returns_the_opponents_point_of_view_and_crowns():
    v = INTERNATIONAL
    pos = Position.from_fen("W:W6,28:B23,40", v)
    own_m, own_k, opp_m, opp_k = pos.side_boards
    a, b, c, d = make_move(
        v.rules, True, (own_m, own_k, opp_m, opp_k), np.uint64(5), np.uint64(0), np.uint64(0)
    )
    nxt = Position.from_side_boards(a, b, c, d, False, v)
    assert nxt.fen() == "B:WK1,28:B23,40"


def test_generate_moves_writes_paths_and_counts():
    v = INTERNATIONAL
    pos = Position.from_fen("W:WK38:B7,8,27,33", v)
    buf, ws = new_move_buffer(), new_workspace()
    n = generate_moves(v.rules, True, *pos.side_boards, buf, ws)
    assert n == 6
    for row in buf[:n]:
        assert int(row[F_NCAP]) == 4
        assert int(row[F_PLEN]) == 5
        assert int(row[F_PATH]) == int(row[F_FROM])
        assert int(row[F_PATH + 4]) == int(row[F_TO])


# --- reference positions --------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["international", "english"])
def test_reference_movegen_cases(movegen_cases, variant):
    cases = [c for c in movegen_cases if c["variant"] == variant]
    assert len(cases) == 250
    bad = []
    for case in cases:
        got = move_set(case["fen"], get_variant(variant))
        want = {(m["from"], m["to"], tuple(sorted(m["captures"]))) for m in case["moves"]}
        if got != want:
            bad.append(f"{case['fen']}: missing {sorted(want - got)}, extra {sorted(got - want)}")
    assert not bad, f"{len(bad)} of {len(cases)} positions differ:\n" + "\n".join(bad[:20])


def test_reference_cases_total_and_has_capture(movegen_cases):
    assert len(movegen_cases) == 500
    for case in movegen_cases:
        pos = Position.from_fen(case["fen"], case["variant"])
        want = any(m["captures"] for m in case["moves"])
        assert has_capture(pos) == want, case["fen"]
        moves = legal_moves(pos)
        for m in moves:
            assert len(set(m.captures)) == len(m.captures)
            assert m.path[0] == m.frm and m.path[-1] == m.to


# --- perft ----------------------------------------------------------------------------------

FAST_DEPTH = 7
DEEP = {"international": 9, "english": 10}


def _perft_params():
    for name, deepest in DEEP.items():
        for depth in range(1, deepest + 1):
            marks = [pytest.mark.slow] if depth > FAST_DEPTH else []
            yield pytest.param(name, depth, marks=marks, id=f"{name}-{depth}")


@pytest.mark.parametrize(("variant", "depth"), list(_perft_params()))
def test_perft_from_start(perft_reference, variant, depth):
    ref = perft_reference[variant]
    v = get_variant(variant)
    start = Position.start(v)
    assert Position.from_fen(ref["fen"], v) == start
    assert perft(start, depth) == ref["perft"][str(depth)]


def test_perft_depth_zero_and_one():
    start = Position.start(INTERNATIONAL)
    assert perft(start, 0) == 1
    assert perft(start, 1) == len(legal_moves(start)) == 9


# --- the move buffer's public API -----------------------------------------------------------


def test_move_list_accessors_and_find():
    from tablebase.rules import MoveList

    pos = Position.from_fen("W:WK17:B12,20,24,43")  # two captures 17 -> 48, different pieces
    ml = MoveList(pos)
    assert len(ml) == 2 and ml.moves() == legal_moves(pos)
    assert {ml.captured(i) for i in range(2)} == {
        (1 << 11) | (1 << 19) | (1 << 42),
        (1 << 11) | (1 << 23) | (1 << 42),
    }
    assert [ml.capture_count(i) for i in range(2)] == [3, 3]
    assert ml.find(17, 48, True) == -2  # two of them
    assert ml.find(17, 48, False) == -1 and ml.find(17, 26, True) == -1
    with pytest.raises(IndexError):
        ml.frm(2)
    start = MoveList(Position.start(INTERNATIONAL))
    i = start.find(32, 28, False)
    assert i >= 0 and (start.frm(i), start.to(i), start.path(i)) == (32, 28, (32, 28))
    assert not start.crowns(i)


def test_compiled_accessors_from_compiled_code():
    """The accessors and play_row are usable inside njit code (what the replay core does)."""
    from numba import njit

    @njit
    def first_capture_then_play(rules, own_m, own_k, opp_m, opp_k, moves, ws):
        n = generate_moves(rules, True, own_m, own_k, opp_m, opp_k, moves, ws)
        i = find_move(moves, n, 9, 11, True)
        path = 0
        for j in range(move_path_length(moves, i)):
            path = path * 100 + move_path_square(moves, i, j) + 1
        a, b, c, d = play_row(own_m, own_k, opp_m, opp_k, moves, i)
        return (
            move_from(moves, i),
            move_to(moves, i),
            move_captured(moves, i),
            move_capture_count(moves, i),
            move_crowns(moves, i),
            path,
            d,
        )

    v = get_variant("russian")
    pos = Position.from_fen("W:W10:B7,8", v)  # d6:f8:h6, crowned on f8
    got = first_capture_then_play(v.rules, *pos.side_boards, new_move_buffer(), new_workspace())
    frm, to, cap, ncap, crowns, path, white_kings_after = got
    assert (frm, to, int(cap), ncap, crowns, path) == (9, 11, (1 << 6) | (1 << 7), 2, True, 100312)
    assert int(white_kings_after) == 1 << 11  # a king on h6, not a man


def test_rules_record_matches_the_compiled_side():
    from tablebase.rules import variants as va

    assert [va.CROWNING.index(c) for c in ("passes", "stops", "continues")] == [
        CROWN_PASSES,
        CROWN_STOPS,
        CROWN_CONTINUES,
    ]
    assert [get_variant(n).rules.crowning for n in ("international", "english", "russian")] == [
        CROWN_PASSES,
        CROWN_STOPS,
        CROWN_CONTINUES,
    ]
    r = get_variant("english").rules
    assert (r.nsq, r.width, r.flying, r.men_back, r.majority) == (32, 4, False, False, False)
    assert r.nbr is get_variant("english").neighbours
