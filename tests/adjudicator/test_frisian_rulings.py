"""Frisian draw rules in rulings (docs/RULES-VARIANTS.md "Frisian draw rules"), each on a
concrete position: no threefold and no general count, two kings against one king drawn after
seven moves each (14 plies), king against king drawn at once unless a capture is forced now
or on the next move of either side (a win by force within three plies)."""

from __future__ import annotations

import pytest
from adj_helpers import FakeTablebase, apply, position, walk
from conftest import session_database

from adjudicator import RuleOptions, rule_game
from adjudicator.drawrules import DrawState, ending
from tablebase.rules import has_capture, legal_moves, play
from tablebase.rules.drawrules import FRISIAN_RULES, NO_LIMIT, Counter
from tablebase.rules.notation import move_text
from tablebase.rules.variants import FRISIAN

KINGS_2V2 = "W:WK46,K50:BK1,K5"
TWO_V_ONE = "W:WK46,K50:BK3"
# King against king, no capture now and a safe move for the side to move: drawn at once.
KVK_DRAWN = "W:WK28:BK3"
# The side to move captures now (diagonally 28x19.., straight 28x8 over 18).
KVK_CAPTURE_DIAGONAL = "W:WK28:BK23"
KVK_CAPTURE_STRAIGHT = "W:WK28:BK18"
# Each white move along the long diagonal from the corner lets the king on 5 capture it.
KVK_LOST_NEXT_MOVE = "W:WK46:BK5"
# White has no capture now but a quiet move after which black's king, in the corner, has
# only moves into white's capture: white captures on its next move.
KVK_WON_NEXT_MOVE = "W:WK10:BK5"
# 33x50 takes the king on 44 and leaves king against king with no capture forced.
INTO_KVK = "W:WK33:BK23,K44"


def ruled(moves, fen, **options):
    return rule_game(moves, fen=fen, variant="frisian", options=RuleOptions(**options))


def frisian(fen: str):
    return position(fen, "frisian")


def test_frisian_rules_are_data_of_the_variant():
    assert FRISIAN.draw_rules is FRISIAN_RULES
    assert FRISIAN_RULES.threefold is False
    assert FRISIAN_RULES.count.plies == 0  # no general count
    assert ending(frisian(TWO_V_ONE)) == "7-move"
    assert ending(frisian("B:WK3:BK46,K50")) == "7-move"  # either colour may be the weak side
    assert ending(frisian(KVK_DRAWN)) == "king-against-king"
    assert ending(frisian("W:WK46,K50,35:BK3")) is None  # a man on the board: no ending
    assert ending(frisian("W:WK46,K50,K45:BK3")) is None  # three kings: no count at all


def test_no_general_count_in_a_long_kings_only_game():
    moves = walk(frisian(KINGS_2V2), 120)
    r = ruled(moves, KINGS_2V2)
    assert (r.reason, r.ply, r.result) == ("unfinished", 120, "unknown"), r.detail
    state = DrawState(frisian(KINGS_2V2))
    assert state.count.limit == NO_LIMIT and state.count.describe() == "no count runs"


def _shuttle(fen: str) -> list[str]:
    """Four quiet king moves that bring ``fen``'s position back, never offering a capture."""
    pos = frisian(fen)
    for a in legal_moves(pos):
        p1 = play(pos, a)
        if has_capture(p1):
            continue
        for b in legal_moves(p1):
            p2 = play(p1, b)
            if has_capture(p2):
                continue
            back_a = [m for m in legal_moves(p2) if (m.frm, m.to) == (a.to, a.frm)]
            if not back_a or has_capture(play(p2, back_a[0])):
                continue
            p3 = play(p2, back_a[0])
            back_b = [m for m in legal_moves(p3) if (m.frm, m.to) == (b.to, b.frm)]
            if back_b and play(p3, back_b[0]) == pos:
                return [
                    move_text(pos, a),
                    move_text(p1, b),
                    move_text(p2, back_a[0]),
                    move_text(p3, back_b[0]),
                ]
    raise AssertionError(f"no shuttle from {fen}")


def test_no_threefold_repetition():
    moves = _shuttle(KINGS_2V2) * 3  # the start position occurs four times
    assert apply(frisian(KINGS_2V2), moves) == frisian(KINGS_2V2)
    r = ruled(moves, KINGS_2V2)
    assert r.reason == "unfinished", r.detail
    intl = rule_game(moves, fen=KINGS_2V2, variant="international")
    assert intl.reason == "threefold"  # the same moves repeat under International rules


def test_two_kings_against_one_drawn_after_seven_moves_each():
    moves = walk(frisian(TWO_V_ONE), 14)
    r = ruled(moves, TWO_V_ONE)
    assert (r.reason, r.ply, r.result) == ("7-move", 14, "1-1"), r.detail
    assert "two kings against one king, 14 plies" in r.detail
    before = ruled(moves[:13], TWO_V_ONE)
    assert (before.reason, before.ply) == ("unfinished", 13), before.detail


def test_two_kings_against_one_counts_from_the_capture_that_made_it():
    fen = "W:WK46,K50:BK3,K39"  # 50x28 takes the king on 39 (flying, on the diagonal 50-6)
    start = frisian(fen)
    capture = next(m for m in legal_moves(start) if m.is_capture and m.to == 28)
    first = move_text(start, capture, legal_moves(start))
    after = play(start, capture)
    assert ending(after) == "7-move"
    moves = [first, *walk(after, 14)]
    r = ruled(moves, fen)
    assert (r.reason, r.ply) == ("7-move", 15), r.detail
    assert ruled(moves[:14], fen).reason == "unfinished"


def test_king_against_king_drawn_at_once():
    r = ruled([], KVK_DRAWN)
    assert (r.reason, r.ply, r.result) == ("king-against-king", 0, "1-1"), r.detail
    assert "no capture forced" in r.detail


def test_king_against_king_made_by_a_capture_is_drawn_on_that_ply():
    start = frisian(INTO_KVK)
    capture = next(m for m in legal_moves(start) if m.is_capture and m.to == 50)
    text = move_text(start, capture, legal_moves(start))
    r = ruled([text, "3-9"], INTO_KVK)
    assert (r.reason, r.ply, r.result) == ("king-against-king", 1, "1-1"), r.detail
    assert "the record goes on for 1 ply more" in r.detail


def test_king_against_king_with_a_capture_now_is_played_out():
    for fen, capture in ((KVK_CAPTURE_DIAGONAL, "28x19"), (KVK_CAPTURE_STRAIGHT, "28x8")):
        assert ruled([], fen).reason == "unfinished"
        r = ruled([capture], fen)
        assert (r.reason, r.ply, r.result) == ("no-pieces", 1, "2-0"), r.detail


def test_king_against_king_lost_next_move_is_played_out():
    pos = frisian(KVK_LOST_NEXT_MOVE)
    assert not has_capture(pos)
    assert all(has_capture(play(pos, m)) for m in legal_moves(pos))
    assert ruled([], KVK_LOST_NEXT_MOVE).reason == "unfinished"
    r = ruled(["46-41", "5x46"], KVK_LOST_NEXT_MOVE)
    assert (r.reason, r.ply, r.result) == ("no-pieces", 2, "0-2"), r.detail


def test_king_against_king_won_on_the_next_move_is_played_out():
    pos = frisian(KVK_WON_NEXT_MOVE)
    assert not has_capture(pos)
    assert ruled([], KVK_WON_NEXT_MOVE).reason == "unfinished"
    line = None
    for m in legal_moves(pos):  # the quiet move after which every black reply is lost
        after = play(pos, m)
        replies = legal_moves(after)
        if not has_capture(after) and replies and all(has_capture(play(after, r)) for r in replies):
            reply = replies[0]
            capture = legal_moves(play(after, reply))[0]
            line = [
                move_text(pos, m),
                move_text(after, reply),
                move_text(play(after, reply), capture),
            ]
            break
    assert line is not None
    r = ruled(line, KVK_WON_NEXT_MOVE)
    assert (r.reason, r.ply, r.result) == ("no-pieces", 3, "2-0"), r.detail


def test_king_against_king_rule_agrees_with_a_built_table(tmp_path):
    """The drawn-at-once test (``capture_forced``) holds exactly where the tables, built
    here for Frisian's two-king slice by the generator, say a side wins within three plies
    (the longest king-against-king win in those tables is three plies)."""
    import numpy as np

    import tablebase
    from tablebase.build.task import run_pair_task
    from tablebase.rules.drawrules import capture_forced
    from tablebase.rules.movebuffer import new_move_buffer, new_workspace

    run_pair_task("frisian", ("0101",), str(tmp_path), threads=1)
    buf, ws = new_move_buffer(), new_workspace()
    forced = longest = 0
    with tablebase.open(tmp_path) as tb:
        for side in "WB":
            for w in range(1, 51):
                for b in range(1, 51):
                    if w == b:
                        continue
                    pos = frisian(f"{side}:WK{w}:BK{b}")
                    wdl, dtw = tb.probe(pos)
                    if wdl:
                        longest = max(longest, dtw)
                    got = capture_forced(
                        FRISIAN.rules,
                        pos.white_to_move,
                        np.uint64(0),
                        np.uint64(pos.white_kings),
                        np.uint64(0),
                        np.uint64(pos.black_kings),
                        buf,
                        ws,
                    )
                    assert bool(got) == (wdl != 0 and dtw <= 3), pos.fen()
                    forced += bool(got)
    assert longest == 3 and 0 < forced < 4900


def test_king_against_king_blunder_after_the_draw_is_not_a_win():
    # White has a safe move (28-22), so the position is drawn at once; the record's blunder
    # 28-17 into the capture 3x21 afterwards does not change the ruling.
    r = ruled(["28-17", "3x21"], KVK_DRAWN)
    assert (r.reason, r.ply) == ("king-against-king", 0), r.detail


def test_counter_python_face_settles_the_king_against_king_count():
    counter = Counter(FRISIAN_RULES)
    drawn = counter.start(frisian(KVK_DRAWN))
    assert (drawn.rule, drawn.limit, drawn.expired) == ("king-against-king", 0, True)
    forced = counter.start(frisian(KVK_LOST_NEXT_MOVE))
    assert (forced.rule, forced.limit, forced.expired) == ("king-against-king", 3, False)
    state = DrawState(frisian(INTO_KVK))
    before = frisian(INTO_KVK)
    move = next(m for m in legal_moves(before) if m.is_capture and m.to == 50)
    assert state.push(before, move, play(before, move)) == "king-against-king"


# --- unfinished games ruled with the tables (a test double holding the values) -------------


def test_unfinished_two_kings_against_one_ruled_with_the_tables_under_the_7_move_count():
    tb = FakeTablebase({TWO_V_ONE: (1, 9)}, variant="frisian")
    r = rule_game([], fen=TWO_V_ONE, variant="frisian", tablebase=tb)
    assert (r.reason, r.result) == ("tablebase", "2-0"), r.detail
    assert "14 plies remain on the 7-move count" in r.detail
    # Eight plies already played on the count: the win in 9 no longer fits the 6 left, and
    # no line restarts the count (every other position is a table draw here).
    late = rule_game(
        [], fen=TWO_V_ONE, variant="frisian", tablebase=tb, options=RuleOptions(elapsed=8)
    )
    assert (late.reason, late.result) == ("tablebase", "1-1"), late.detail
    assert "but only 6 plies remain on the 7-move count: draw" in late.detail


def test_unfinished_game_outside_the_endings_has_no_count():
    fen = "W:W35,K46,K50:BK3"
    tb = FakeTablebase({fen: (1, 61)}, variant="frisian")
    r = rule_game([], fen=fen, variant="frisian", tablebase=tb)
    assert (r.reason, r.result) == ("tablebase", "2-0"), r.detail
    assert "no count runs" in r.detail


def test_unfinished_king_against_king_with_a_forced_capture_ruled_by_the_tables():
    tb = FakeTablebase({KVK_LOST_NEXT_MOVE: (-1, 2)}, variant="frisian")
    r = rule_game([], fen=KVK_LOST_NEXT_MOVE, variant="frisian", tablebase=tb)
    assert (r.reason, r.result) == ("tablebase", "0-2"), r.detail


# --- unfinished games ruled with real Frisian tables (2-3 pieces built here) ---------------


@pytest.fixture(scope="module")
def frisian_tables(tmp_path_factory):
    import tablebase

    with tablebase.open(session_database(tmp_path_factory, "frisian", 3)) as tb:
        yield tb


def test_unfinished_game_ruled_with_frisian_tables(frisian_tables):
    # A man promotes to make two kings against one; the tables' win in 6 plies fits the
    # fresh 7-move count (14 plies).
    fen = "B:W7,K2:BK11"
    start = frisian(fen)
    text = "11-16"
    after = apply(start, [text])
    crown = next(m for m in legal_moves(after) if m.frm == 7 and m.to == 1)
    line = [text, move_text(after, crown)]
    final = apply(start, line)
    assert ending(final) == "7-move"
    assert frisian_tables.probe(final) == (-1, 6)  # black to move loses in 6 plies
    r = rule_game(line, fen=fen, variant="frisian", tablebase=frisian_tables)
    assert (r.reason, r.ply, r.result) == ("tablebase", 2, "2-0"), r.detail
    assert "white's theoretical win in 6 plies; 14 plies remain on the 7-move count" in r.detail


def test_table_win_past_the_7_move_count_is_a_draw(frisian_tables):
    fen = "W:WK1,K2:BK6"
    assert frisian_tables.probe(frisian(fen)) == (1, 13)
    fits = rule_game([], fen=fen, variant="frisian", tablebase=frisian_tables)
    assert (fits.reason, fits.result) == ("tablebase", "2-0"), fits.detail
    last_ply = rule_game(
        [],
        fen=fen,
        variant="frisian",
        tablebase=frisian_tables,
        options=RuleOptions(elapsed=13),
    )
    assert (last_ply.reason, last_ply.result) == ("tablebase", "1-1"), last_ply.detail
    assert "but only 1 ply remains on the 7-move count: draw" in last_ply.detail


def test_shortcut_trusted_only_where_no_failing_ending_can_start_afresh():
    """Frisian tables have two-kings-against-one wins longer than the 7-move count: the
    shortcut stays exact inside that ending (its count already runs) and wherever it cannot
    arise, not where a promotion or capture can start it afresh."""
    from tablebase.rules.countsearch import Search, failing_slices

    longest = {"0201": 19, "0102": 19, "0101": 3, "1101": 41}
    failing = failing_slices(FRISIAN_RULES, longest, longest.__getitem__)
    assert failing == {"0201", "0102"}  # king against king (3 plies) keeps its premise
    search = Search(FakeTablebase({}, variant="frisian"), Counter(FRISIAN_RULES), shortcut=failing)
    assert search.trusts(frisian(TWO_V_ONE))  # inside the ending: its own count runs
    assert search.trusts(frisian(KVK_DRAWN))  # two kings against one cannot arise
    assert not search.trusts(frisian("W:W35,K46:BK3"))  # 35 promotes: 7-move count afresh
    assert not search.trusts(frisian("W:WK46,K50:BK3,K39"))  # a capture leads into it
    assert Search(FakeTablebase({}, "frisian"), Counter(FRISIAN_RULES)).trusts(frisian(TWO_V_ONE))
    assert not Search(FakeTablebase({}, "frisian"), Counter(FRISIAN_RULES), shortcut=False).trusts(
        frisian(TWO_V_ONE)
    )
