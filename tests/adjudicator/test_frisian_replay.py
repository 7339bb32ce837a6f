"""Replaying Frisian games: ``[GameType "40"]`` selects Frisian, straight captures and the
capture of greatest value are legal moves, and the king-move limit (at most three quiet moves
in a row with one king while the side has men) is part of the replay's state, with an
illegal fourth king move reported precisely. FEN set-ups carry the counter (lidraughts'
``+<black n><square>+<white n><square>`` field)."""

from __future__ import annotations

import io

import pytest
from adj_helpers import apply, position

from adjudicator import rule_file, rule_game
from adjudicator.replay import replay, start_position
from tablebase.rules import legal_moves, play
from tablebase.rules.position import Position
from tablebase.rules.variants import FRISIAN

# A club-style game written for this test (not taken from any archive): many captures, six
# of them straight along a row or a column (3. 36x16, 4. 16x29, 5. 29x18, 6. 38x18, 12. ...
# 13x31, 32. ... 12x21), a man crowned on square 1 and white's new king taking black's last
# man. The result is white's win, 2-0.
CLUB_GAME = """[Event "Club evening"]
[White "Hylkema"]
[Black "Dijkstra"]
[GameType "40"]
[Result "2-0"]

1. 31-27 16-21 2. 27x16 6x26 3. 36x16 18-23 4. 16x29 20-24 5. 29x18 8x28 6. 38x18 12x23
7. 43-38 23x43 8. 34-30 43x25 9. 35-30 25x34 10. 44x24 14x34 11. 40x29 11-16 12. 29-23
13x31 13. 37x8 2x13 14. 38-32 10-14 15. 42-37 15-20 16. 49-43 5-10 17. 41-36 1-7 18.
36-31 13-19 19. 43-39 19-24 20. 39-34 24x44 21. 50x39 14-19 22. 45-40 9-14 23. 31-27 3-8
24. 39-34 10-15 25. 34-29 19x39 26. 40x38 7-11 27. 27-21 11x31 28. 47-41 4-10 29. 41x21
20-24 30. 48-43 14-20 31. 43-38 8-12 32. 21-17 12x21 33. 38-33 24-29 34. 33x24 20x29 35.
46-41 29-33 36. 41-36 21-26 37. 36x16 33-39 38. 16-11 15-20 39. 11-6 20-24 40. 6-1 24-29
41. 1x5 2-0
"""

# White: a king on 23 and a man on 50; black: a king on 26 and a man on 1.
LIMIT_FEN = "W:W50,K23:B1,K26"


def rule_text(text: str, **kwargs):
    return list(rule_file(io.StringIO(text), **kwargs))


def moves_of(pdn_text: str) -> list[str]:
    from adjudicator.pdn import read_games

    (game,) = list(read_games(io.StringIO(pdn_text)))
    return [m.text for m in game.moves]


def test_gametype_40_selects_frisian_and_the_club_game_replays_to_its_result():
    (r,) = rule_text(CLUB_GAME)
    assert r.variant == "frisian"
    assert (r.reason, r.ply, r.result, r.agrees) == ("no-pieces", 81, "2-0", True), r.detail
    assert r.warnings == []


def test_the_club_game_under_international_rules_is_illegal():
    # 2. ... 6x26 is a straight capture (6 over 16 to 26 along a column): not International.
    (r,) = rule_text(CLUB_GAME, variant="international")
    assert r.reason == "illegal-move"
    assert "move 2 (black) 6x26: not legal" in r.detail


def test_the_club_game_final_position_agrees_with_py_draughts():
    """The final position of our replay equals the one py-draughts' Frisian board (an
    independent implementation of the rules) reaches from the same move texts."""
    board_class = pytest.importorskip("draughts.boards.frisian").Board
    texts = moves_of(CLUB_GAME)
    board = board_class()
    for t in texts[:-1]:  # the last move takes black's last piece; stop just before it
        # py-draughts reads "a-b"/"axb" itself but asks for the full path when two routes
        # take the same pieces: match such a text on its from and to squares instead.
        frm, to = (int(x) for x in t.replace("x", "-").split("-"))
        found = [
            m
            for m in board.legal_moves
            if (m.square_list[0] + 1, m.square_list[-1] + 1) == (frm, to)
            and (("x" in t) == bool(m.captured_list))
        ]
        assert len({tuple(sorted(m.captured_list)) for m in found}) == 1, t
        board.push(found[0])
    theirs = Position.from_fen(board.fen.split('"')[1], FRISIAN)
    ours = replay(texts[:-1], Position.start(FRISIAN)).position
    assert (ours.white_men, ours.white_kings, ours.black_men, ours.black_kings) == (
        theirs.white_men,
        theirs.white_kings,
        theirs.black_men,
        theirs.black_kings,
    )
    assert ours.white_to_move == (board.turn.name == "WHITE")


def _king_moves(pos, square):
    """The quiet moves of the king on ``square`` after which the opponent has no capture."""
    from tablebase.rules import has_capture

    return [
        m
        for m in legal_moves(pos)
        if m.frm == square and not m.is_capture and not has_capture(play(pos, m))
    ]


def _three_each(fen: str) -> tuple[list[str], Position]:
    """Three quiet moves in a row by each side's king (white starts), never offering a
    capture; returns the move texts and the position after them."""
    from tablebase.rules.notation import move_text

    pos = position(fen, "frisian")
    texts = []
    squares = {True: pos.white_kings.bit_length(), False: pos.black_kings.bit_length()}
    for _ in range(6):
        mover = pos.white_to_move
        m = _king_moves(pos, squares[mover])[0]
        texts.append(move_text(pos, m))
        squares[mover] = m.to
        pos = play(pos, m)
    return texts, pos


def test_king_runs_are_counted_through_the_replay():
    texts, after = _three_each(LIMIT_FEN)
    r = replay(texts, position(LIMIT_FEN, "frisian"))
    assert r.error is None
    assert r.position == after
    (wsq, wn), (bsq, bn) = r.position.king_runs
    assert (wn, bn) == (3, 3)
    assert (wsq, bsq) == (int(texts[4].split("-")[1]), int(texts[5].split("-")[1]))


def test_fourth_quiet_move_of_the_same_king_is_illegal():
    texts, after = _three_each(LIMIT_FEN)
    king = after.king_runs[0][0]
    fourth = next(m for m in legal_moves(after.with_runs(((0, 0), (0, 0)))) if m.frm == king)
    bad = f"{king}-{fourth.to}"
    r = rule_game([*texts, bad], fen=LIMIT_FEN, variant="frisian")
    assert (r.reason, r.ply, r.result) == ("illegal-move", 7, "unknown"), r.detail
    assert f"game 1, move 4 (white) {bad}: not legal in this position" in r.detail
    assert f"the king on {king} has made 3 quiet moves in a row" in r.detail
    legal = r.detail.split("legal: ")[1].split(")")[0].split(", ")
    assert legal and all(m.startswith("50-") for m in legal)  # only the man may move


def _man_move(pos: Position) -> str:
    """A quiet man move after which the opponent has no capture."""
    from tablebase.rules import has_capture

    men = pos.white_men if pos.white_to_move else pos.black_men
    return next(
        f"{m.frm}-{m.to}"
        for m in legal_moves(pos)
        if men >> (m.frm - 1) & 1 and not m.is_capture and not has_capture(play(pos, m))
    )


def test_a_man_move_resets_the_run_and_the_king_may_move_again():
    texts, after = _three_each(LIMIT_FEN)
    king = after.king_runs[0][0]
    # White's man moves; black's king is barred now too, so black's man must move.
    white_man = _man_move(after)
    line = [*texts, white_man]
    line.append(_man_move(apply(position(LIMIT_FEN, "frisian"), line)))
    pos = apply(position(LIMIT_FEN, "frisian"), line)
    assert pos.king_runs == ((0, 0), (0, 0))  # each side's man move ended its run
    again = _king_moves(pos, king)[0]
    line.append(f"{king}-{again.to}")
    r = replay(line, position(LIMIT_FEN, "frisian"))
    assert r.error is None and r.position.king_runs[0] == (again.to, 1)
    barred_black = rule_game(
        [*texts, white_man, f"{after.king_runs[1][0]}-{_free_target(after, white_man)}"],
        fen=LIMIT_FEN,
        variant="frisian",
    )
    assert barred_black.reason == "illegal-move"
    assert "has made 3 quiet moves in a row" in barred_black.detail


def _free_target(pos: Position, man_move: str) -> int:
    """Some square black's running king could reach after ``man_move`` if not barred."""
    sq = pos.king_runs[1][0]
    free = pos.with_runs(((0, 0), (0, 0)))
    frm = int(man_move.split("-")[0])
    after_man = play(free, next(m for m in legal_moves(free) if m.frm == frm))
    return next(m.to for m in legal_moves(after_man) if m.frm == sq)


def test_fen_setup_with_the_counter():
    # White's king on 28 has made three quiet moves in a row (lidraughts' "+<n><sq>" field,
    # black's run first): its quiet moves are illegal from the first ply.
    fen = "W:W45,K28:B6,K1:H0:F1:+0+328"
    start = start_position(FRISIAN, fen)
    assert start.king_runs == ((28, 3), (0, 0))
    r = rule_game(["28-22"], fen=fen, variant="frisian")
    assert r.reason == "illegal-move", r.detail
    assert "the king on 28 has made 3 quiet moves in a row" in r.detail
    ok = rule_game(["45-40"], fen=fen, variant="frisian")
    assert ok.reason == "unfinished", ok.detail
    pdn = f'[GameType "40"]\n[FEN "{fen}"]\n\n1. 28-22 *\n'
    (from_pdn,) = rule_text(pdn)
    assert from_pdn.reason == "illegal-move"
