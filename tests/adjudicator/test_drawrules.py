"""Each draw rule on a game built to hit it exactly on its ply, and one ply short of it, where
it must not fire; both variants, both readings of the disputed point, the options."""

from __future__ import annotations

import pytest
from adj_helpers import apply, position, walk

from adjudicator import RuleOptions, rule_game
from adjudicator.drawrules import Count, DrawState, ending
from tablebase.rules import has_capture, legal_moves, play
from tablebase.rules.notation import move_text
from tablebase.rules.variants import ENGLISH, INTERNATIONAL

KINGS_2V2 = "W:WK46,K50:BK1,K5"
LONE_V_3K = "W:WK47,K48,K49:BK3"
LONE_V_2K = "W:WK47,K48:BK3"
EN_KINGS = "B:WK29,K32:BK1,K4"


def ruled(moves, fen, variant="international", **options):
    return rule_game(moves, fen=fen, variant=variant, options=RuleOptions(**options))


def assert_fires(moves, fen, reason, ply, variant="international", **options):
    """The rule fires on exactly ``ply`` (the last move given) and not one ply before."""
    assert len(moves) == ply
    r = ruled(moves, fen, variant, **options)
    assert (r.reason, r.ply, r.result) == (
        reason,
        ply,
        "1-1" if variant == "international" else "1/2-1/2",
    ), r.detail
    before = ruled(moves[:-1], fen, variant, **options)
    assert before.reason == "unfinished", before.detail
    assert before.ply == ply - 1


# --- classification and counter transitions ------------------------------------------------


@pytest.mark.parametrize(
    "fen, rule",
    [
        ("W:WK47,K48,K49:BK3", "16-move"),
        ("W:WK47,48,49:BK3", "16-move"),  # a king and two men
        ("B:WK3:BK47,38,42", "16-move"),  # colours swapped
        ("W:W47,48,49:BK3", None),  # no king among the three
        ("W:WK47,K48:BK3", "5-move"),
        ("W:WK47,48:BK3", "5-move"),
        ("W:WK47:BK3", "5-move"),
        ("W:W47,48:BK3", None),
        ("W:WK46,K47,K48,K49:BK3", None),  # four pieces
        ("W:WK47,K48,K49:B3", None),  # a lone man is not a lone king
        ("W:WK46,K50:BK1,K5", None),
    ],
)
def test_ending_material(fen, rule):
    assert ending(position(fen)) == rule


def test_counter_start_and_elapsed():
    c = RuleOptions().counter(INTERNATIONAL)
    assert c.start(position(LONE_V_3K)) == Count("16-move", 32, 0, 0)
    assert c.start(position(LONE_V_2K), 4) == Count("5-move", 10, 4, 1)
    assert c.start(position(KINGS_2V2), 7) == Count("25-move", 50, 7)
    e = RuleOptions(english_count=30).counter(ENGLISH)
    assert e.start(position(EN_KINGS, "english")) == Count("30-move", 60, 0)
    # the English options do not touch International's fixed counts
    assert RuleOptions(english_count=30).counter(INTERNATIONAL).start(position(KINGS_2V2)) == Count(
        "25-move", 50, 0
    )
    casual = RuleOptions(english_preset="casual").counter(ENGLISH)
    assert casual.start(position(EN_KINGS, "english")).limit == 100


@pytest.mark.parametrize(
    "kwargs",
    [{"disputed": "both"}, {"english_preset": "blitz"}, {"english_count": 0}, {"elapsed": -1}],
)
def test_bad_options(kwargs):
    with pytest.raises(ValueError):
        RuleOptions(**kwargs)


# --- threefold repetition ------------------------------------------------------------------


def test_threefold_international():
    cycle = ["50-44", "1-6", "44-50", "6-1"]
    assert_fires(cycle * 2, KINGS_2V2, "threefold", 8)


def test_threefold_english():
    cycle = ["1-5", "32-28", "5-1", "28-32"]
    assert_fires(cycle * 2, "B:WK32:BK1", "threefold", 8, "english")


def test_threefold_needs_same_side_to_move():
    # Each board recurs, but with the other side to move at odd plies: only the same side
    # to move counts, so the third occurrence is at ply 8, not earlier.
    state = DrawState(position(KINGS_2V2))
    pos = position(KINGS_2V2)
    fired = []
    for text in ["50-44", "1-6", "44-50", "6-1"] * 2:
        move = next(m for m in legal_moves(pos) if move_text(pos, m) == text)
        after = play(pos, move)
        fired.append(state.push(pos, move, after))
        pos = after
    assert fired == [None] * 7 + ["threefold"]


def test_irreversible_move_clears_history():
    fen = "W:WK46,K50,36:BK1,K5,15"
    cycle = ["50-44", "1-6", "44-50", "6-1"]
    # Start, ply 4: two occurrences; the man move at ply 5 makes them unreachable.
    moves = cycle + ["36-31", "15-20"] + cycle + cycle
    r = ruled(moves, fen)
    assert (r.reason, r.ply) == ("threefold", 14)


# --- International move counts -------------------------------------------------------------


def test_25_move_rule():
    assert_fires(walk(position(KINGS_2V2), 50), KINGS_2V2, "25-move", 50)


def test_25_move_rule_elapsed_option():
    moves = walk(position(KINGS_2V2), 30)
    assert_fires(moves, KINGS_2V2, "25-move", 30, elapsed=20)


def test_25_move_rule_reset_by_man_move():
    fen = "W:WK46,K50,36:BK1,K5,15"
    start = position(fen)
    first = walk(start, 30)
    mid = apply(start, first)
    man = ["36-31"]
    rest = walk(apply(mid, man), 50)
    assert_fires(first + man + rest, fen, "25-move", 81)


def test_16_move_rule_from_fen():
    assert_fires(walk(position(LONE_V_3K), 32), LONE_V_3K, "16-move", 32)


def test_16_move_rule_starts_after_creating_capture():
    fen = "W:WK47,K48,33:B28,K3"
    moves = ["33x22"] + walk(apply(position(fen), ["33x22"]), 32)
    assert_fires(moves, fen, "16-move", 33)


def test_16_move_rule_starts_after_first_king_and_ignores_man_moves():
    fen = "W:W7,39,44:BK46"  # three men: no count of its own, the 25-move rule is off
    promoted = apply(position(fen), ["7-2"])
    assert ending(promoted) == "16-move"
    first = walk(promoted, 9)
    mid = apply(promoted, first)
    man = next(
        move_text(mid, m)
        for m in legal_moves(mid)
        if mid.white_men >> (m.frm - 1) & 1 and not has_capture(play(mid, m))
    )
    rest = walk(apply(mid, [man]), 22)
    assert_fires(["7-2"] + first + [man] + rest, fen, "16-move", 33)


def test_16_move_rule_replaces_25_move_rule():
    r = ruled(walk(position(LONE_V_3K), 32)[:31], LONE_V_3K, elapsed=0)
    assert r.reason == "unfinished"
    # 40 plies elapsed on a 25-move count would not matter: the ending's count rules.
    r = ruled(walk(position(LONE_V_3K), 12), LONE_V_3K, elapsed=20)
    assert (r.reason, r.ply) == ("16-move", 12)


def test_5_move_rule():
    assert_fires(walk(position(LONE_V_2K), 10), LONE_V_2K, "5-move", 10)


def test_5_move_rule_king_against_king():
    fen = "W:WK47:BK3"
    assert_fires(walk(position(fen), 10), fen, "5-move", 10)


def _sacrifice_game() -> list[str]:
    """26 quiet plies of 3 kings against 1, a sacrifice the lone king must take (16 -> 5-move
    ending at ply 28), then 10 quiet plies."""
    start = position(LONE_V_3K)
    moves = walk(start, 26)
    pos = apply(start, moves)
    for m in legal_moves(pos):
        after = play(pos, m)
        replies = legal_moves(after)
        if m.is_capture or len(replies) != 1 or len(replies[0].captures) != 1:
            continue
        taken = play(after, replies[0])
        if not has_capture(taken):
            sac = [move_text(pos, m), move_text(after, replies[0])]
            return moves + sac + walk(taken, 10)
    raise AssertionError("no sacrifice found")


def test_disputed_point_restart_gives_fresh_5_move_count():
    moves = _sacrifice_game()
    assert ending(apply(position(LONE_V_3K), moves[:28])) == "5-move"
    assert_fires(moves, LONE_V_3K, "5-move", 38, disputed="restart")


def test_disputed_point_cumulative_keeps_16_move_count():
    moves = _sacrifice_game()
    assert_fires(moves[:32], LONE_V_3K, "16-move", 32, disputed="cumulative")
    r = ruled(moves, LONE_V_3K, disputed="cumulative")
    assert (r.reason, r.ply) == ("16-move", 32)
    assert "cumulative" in r.detail and "the record goes on for 6 plies more" in r.detail


SACRIFICE = "W:WK25,K35,K41:BK3"  # 41-14 forces 3x20, then 25x3 takes the lone king


def test_disputed_point_decides_the_game():
    moves = ["41-14", "3x20", "25x3"]
    restart = ruled(moves, SACRIFICE, elapsed=30)
    assert (restart.result, restart.reason, restart.ply) == ("2-0", "no-pieces", 3)
    cumulative = ruled(moves, SACRIFICE, elapsed=30, disputed="cumulative")
    assert (cumulative.result, cumulative.reason, cumulative.ply) == ("1-1", "16-move", 2)


def test_win_takes_precedence_over_expiring_count_international():
    # Black's only piece, a man on 45, is blocked by the king move 44-50 on the ply the
    # 25-move count runs out.
    fen = "W:WK44:B45"
    r = ruled(["44-50"], fen, elapsed=49)
    assert (r.result, r.reason, r.ply) == ("2-0", "no-moves", 1)
    r = ruled(["44-39"], fen, elapsed=49)
    assert (r.result, r.reason, r.ply) == ("1-1", "25-move", 1)


def test_count_expired_at_start():
    r = ruled([], LONE_V_2K, elapsed=10)
    assert (r.reason, r.ply) == ("5-move", 0)


def test_lost_at_start():
    r = ruled([], "W:W:BK3")
    assert (r.result, r.reason, r.ply) == ("0-2", "no-pieces", 0)


# --- English -------------------------------------------------------------------------------


def test_40_move_rule():
    assert_fires(walk(position(EN_KINGS, "english"), 80), EN_KINGS, "40-move", 80, "english")


def test_english_count_setting():
    moves = walk(position(EN_KINGS, "english"), 20)
    assert_fires(moves, EN_KINGS, "10-move", 20, "english", english_count=10)


def test_english_elapsed_option():
    moves = walk(position(EN_KINGS, "english"), 30)
    assert_fires(moves, EN_KINGS, "40-move", 30, "english", elapsed=50)


ENGLISH_WITH_MEN = "B:WK29,K32,25:BK1,K4,8"


def _english_game_with_man_move() -> list[str]:
    start = position(ENGLISH_WITH_MEN, "english")
    first = walk(start, 40)
    mid = apply(start, first)
    man = next(
        move_text(mid, m)
        for m in legal_moves(mid)
        if mid.black_men >> (m.frm - 1) & 1 and not has_capture(play(mid, m))
    )
    return first + [man] + walk(apply(mid, [man]), 59)


def test_casual_preset_ignores_man_moves():
    moves = _english_game_with_man_move()
    assert_fires(moves, ENGLISH_WITH_MEN, "50-move", 100, "english", english_preset="casual")


def test_standard_rule_resets_on_man_move():
    moves = _english_game_with_man_move()
    r = ruled(moves, ENGLISH_WITH_MEN, "english")
    assert r.reason == "unfinished"
    # 39 plies elapsed: the count would run out at ply 41, but ply 41 is the man move.
    r = ruled(moves[:41], ENGLISH_WITH_MEN, "english", elapsed=39)
    assert r.reason == "unfinished"
    r = ruled(moves[:40], ENGLISH_WITH_MEN, "english", elapsed=40)
    assert (r.reason, r.ply) == ("40-move", 40)


def test_win_takes_precedence_over_expiring_count_english():
    # White's king steps to 8, next to black's lone king on 4, backed by the man on 11:
    # black has no move on the ply the 40-move count runs out.
    fen = "W:WK12,11,15:BK4"
    r = ruled(["12-8"], fen, "english", elapsed=79)
    assert (r.result, r.reason, r.ply) == ("0-1", "no-moves", 1)
    r = ruled(["12-16"], fen, "english", elapsed=79)
    assert (r.result, r.reason, r.ply) == ("1/2-1/2", "40-move", 1)


def _sacrifice_in_5_move_ending() -> list[str]:
    """2 kings against 1: 4 quiet plies, a king offered and taken at ply 6 (king against king),
    then 10 quiet plies."""
    start = position(LONE_V_2K)
    moves = walk(start, 4)
    pos = apply(start, moves)
    for m in legal_moves(pos):
        after = play(pos, m)
        replies = legal_moves(after)
        if m.is_capture or len(replies) != 1 or not replies[0].is_capture:
            continue
        taken = play(after, replies[0])
        if not has_capture(taken):
            return moves + [move_text(pos, m), move_text(after, replies[0])] + walk(taken, 10)
    raise AssertionError("no sacrifice found")


def test_capture_inside_5_move_ending_follows_the_disputed_option():
    moves = _sacrifice_in_5_move_ending()
    assert ending(apply(position(LONE_V_2K), moves[:6])) == "5-move"
    assert_fires(moves, LONE_V_2K, "5-move", 16, disputed="restart")
    assert_fires(moves[:10], LONE_V_2K, "5-move", 10, disputed="cumulative")


def test_lone_sides_promotion_starts_the_16_move_count():
    fen = "B:WK1,K2,K3:B40"
    advanced = apply(position(fen), ["40-45"])
    assert ending(position(fen)) is None and ending(advanced) is None
    moves = ["40-45", *walk(advanced, 1)]
    king = apply(position(fen), moves)
    step = next(
        move_text(king, m)
        for m in legal_moves(king)
        if king.black_men >> (m.frm - 1) & 1 and not has_capture(play(king, m))
    )
    crowned = apply(king, [step])
    assert ending(crowned) == "16-move"
    assert_fires(moves + [step] + walk(crowned, 32), fen, "16-move", 35)
