"""Tolerant reading, strict ruling: each forgiveness and each warning on a concrete game, the
same game under ``strict``, the variant inferred from the moves, and the bounds on input."""

from __future__ import annotations

import io
import json
import tracemalloc

import pytest
from adj_helpers import pdn
from click.testing import CliRunner
from conftest import data_file

from adjudicator import RuleOptions, rule_file, rule_game
from adjudicator.cli import main
from adjudicator.pdn import MAX_LINE, PdnError, read_games

STRICT = RuleOptions(strict=True)


def rule_text(text: str | bytes, **kwargs):
    data = text.encode() if isinstance(text, str) else text
    return list(rule_file(io.BytesIO(data), **kwargs))


# --- a wrong separator -----------------------------------------------------------------------


def test_dash_for_the_only_capture_is_forgiven_with_a_warning():
    # Black's 30x39 is the only legal move; the file writes 30-39.
    text = pdn(["30-39"], fen="B:W34:B30", result="0-2", GameType="20")
    (r,) = rule_text(text)
    assert (r.reason, r.result, r.ply) == ("no-pieces", "0-2", 1), r.detail
    assert r.warnings == ["move 1 (black): 30-39 written for the capture 30x39; read as 30x39"]
    (s,) = rule_text(text, options=STRICT)
    assert s.reason == "illegal-move"
    assert "30-39: not legal in this position (legal: 30x39)" in s.detail
    assert "the capture 30x39 has these squares" in s.detail


def test_x_for_a_quiet_move_is_forgiven_with_a_warning():
    text = pdn(["38x33", "3-9"], fen="W:W38:B3", result="*", GameType="20")
    (r,) = rule_text(text)
    assert (r.reason, r.ply) == ("unfinished", 2), r.detail
    assert r.warnings == ["move 1 (white): 38x33 written for the quiet move 38-33; read as 38-33"]
    assert rule_text(text, options=STRICT)[0].reason == "illegal-move"


def test_a_wrong_separator_matching_two_moves_stays_an_error():
    # 33-11 (written as a step) matches two captures: no forgiveness for an ambiguous text.
    text = pdn(["33-11"], fen="W:W33:B7-9,18,19,28,29", result="*", GameType="20")
    (r,) = rule_text(text)
    assert r.reason == "illegal-move" and r.warnings == []


# --- a short capture resolved by the moves that follow -----------------------------------------

SHORT = "W:W33:B7-9,18,19,28,29"  # 33x11 is 33x22x13x2x11 (takes 28) or 33x24x13x2x11 (29)


def test_short_capture_resolved_by_the_next_move():
    # After the capture over 28, black's man on 19 can step 19-23; over 29 it is gone.
    text = pdn(["33x11", "19-23", "11-6"], fen=SHORT, result="*", GameType="20")
    (r,) = rule_text(text)
    assert (r.reason, r.ply) == ("unfinished", 3), r.detail
    assert r.warnings == [
        "move 1 (white): short capture 33x11 matches 2 captures; "
        "read as 33x22x13x2x11, the only one the moves that follow allow"
    ]
    (s,) = rule_text(text, options=STRICT)
    assert s.reason == "ambiguous-move"
    assert "33x22x13x2x11, 33x24x13x2x11" in s.detail


def test_short_capture_resolved_the_other_way():
    text = pdn(["33x11", "28-32"], fen=SHORT, result="*", GameType="20")
    (r,) = rule_text(text)
    assert "read as 33x24x13x2x11" in r.warnings[0]


@pytest.mark.parametrize(
    "moves, what",
    [
        (["33x11", "9-13"], "more than one of them"),  # legal after both
        (["33x11", "7-11"], "none of them"),  # legal after neither
        (["33x11"], "more than one of them"),  # nothing follows
    ],
)
def test_short_capture_the_rest_does_not_settle_stays_an_error(moves, what):
    (r,) = rule_text(pdn(moves, fen=SHORT, result="*", GameType="20"))
    assert r.reason == "ambiguous-move"
    assert "matches: 33x22x13x2x11, 33x24x13x2x11" in r.detail
    assert what in r.detail


# --- the reader's forgiveness ------------------------------------------------------------------


def test_missing_result_at_end_of_file_reads_as_star():
    text = '[GameType "20"]\n\n1. 32-28 19-23 2. 28x19 14x23'
    (r,) = rule_text(text)
    assert r.recorded_result == "*" and r.reason == "unfinished"
    assert r.warnings == ["no result token at the end of the file (3:30): read as '*'"]
    (s,) = rule_text(text, options=STRICT)
    assert s.reason == "pdn-error" and "no result token" in s.detail


def test_quirks_of_real_files_read_without_warnings():
    text = (
        '\ufeff[Event "q"]\r\n[GameType "20"]\r\n\r\n'
        "% an escape line\r\n"
        "1- 32-28 {[%clk 0:01:00] clock} 19-23! 2 . 28x19?! $14 14x23\r\n"
        "3... 33-29 (3. 37-32 (3. 31-26) 23-28) 3... 17-22 *\r\n"
    )
    (game,) = read_games(io.BytesIO(text.encode()))
    assert [(m.number, m.side, m.text) for m in game.moves] == [
        (1, "first", "32-28"),
        (1, "second", "19-23"),
        (2, "first", "28x19"),
        (2, "second", "14x23"),
        (3, "second", "33-29"),
        (3, "second", "17-22"),
    ]
    assert game.warnings == []


def test_latin1_file_is_read_with_a_warning():
    text = '[Event "Tournoi de Genève"]\n[GameType "20"]\n\n1. 32-28 *\n'.encode("latin-1")
    (game,) = read_games(io.BytesIO(text))
    assert game.tags["Event"] == "Tournoi de Genève"
    assert game.warnings == ["line 1 is not UTF-8: the file is read as Latin-1"]
    with pytest.raises(PdnError, match="not UTF-8"):
        list(read_games(io.BytesIO(text), strict=True))


def test_result_tag_differing_from_the_final_token_is_a_warning():
    text = pdn(["32-28"], result="1-1", GameType="20", Result="2-0")
    (r,) = rule_text(text)
    assert r.recorded_result == "2-0"
    assert r.warnings == [
        "the Result tag '2-0' differs from the result '1-1' at the end of the moves "
        "(the tag is taken as recorded)"
    ]


# --- the variant from the game -----------------------------------------------------------------


def test_english_file_without_gametype_is_inferred():
    rulings = list(rule_file(data_file("pdn", "OCA_2.0.pdn")))
    assert len(rulings) == 43
    assert {r.variant for r in rulings} == {"english"}
    assert not any(r.is_error for r in rulings), [r.detail for r in rulings if r.is_error]
    inferred = "no GameType tag: variant english inferred"
    assert all(any(w.startswith(inferred) for w in r.warnings) for r in rulings)
    # an explicit option wins and says nothing
    explicit = list(rule_file(data_file("pdn", "OCA_2.0.pdn"), variant="english"))
    assert all(r.warnings == [] or inferred not in r.warnings[0] for r in explicit)


def test_international_game_without_gametype_is_inferred():
    r = rule_game(read_one(pdn(["32-28", "19-23"], result="*")))
    assert r.variant == "international"
    assert r.warnings[0].startswith("no GameType tag: variant international inferred")


def test_no_variant_replays_the_game():
    (r,) = rule_text(pdn(["32-28", "32-28"], result="*"))
    assert r.reason == "illegal-move"
    assert "no variant replays the game" in r.detail


def read_one(text: str):
    (game,) = read_games(io.StringIO(text))
    return game


# --- bounds: huge numbers, huge lines, Unicode digits -------------------------------------------


@pytest.mark.parametrize(
    "text, words",
    [
        ("1. 3" + "2" * 5000 + "-28 *", "number too long"),
        ("1" + "0" * 5000 + ". 32-28 *", "number too long"),
    ],
)
def test_huge_numbers_give_a_precise_error(text, words):
    (r,) = rule_text(text)
    assert r.reason == "pdn-error" and words in r.detail


def test_huge_fen_number_and_gametype_are_bad_tags():
    (r,) = rule_text(pdn(["32-28"], fen="W:W" + "3" * 5000 + ":B1", result="*"))
    assert r.reason == "bad-tag" and "is not a square" in r.detail
    (r,) = rule_text(pdn(["32-28"], result="*", GameType="2" * 5000))
    assert r.reason == "bad-tag" and "unsupported GameType" in r.detail


def test_unicode_digits_in_a_fen_are_refused():
    (r,) = rule_text(pdn([], fen="W:W２１:B3", result="*", GameType="20"))
    assert r.reason == "bad-tag" and "'２' is not an ASCII digit" in r.detail


def test_an_over_long_tag_line_is_an_error_and_memory_stays_bounded():
    big = b'[Event "' + b"x" * (8 * MAX_LINE) + b'"]\n1. 32-28 *\n'
    after = b'\n[Event "next"]\n[GameType "20"]\n\n1. 32-28 *\n'
    source = io.BytesIO(big + after)
    tracemalloc.start()
    games = list(read_games(source, errors="collect"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "line longer than" in str(games[0].error)
    assert games[-1].tags == {"Event": "next", "GameType": "20"}
    assert peak < 4 * MAX_LINE, peak  # never the whole line


# --- the command line: --strict, file fields, exit codes -------------------------------------


def test_cli_file_field_per_file_game_numbers_and_strict(tmp_path):
    a = tmp_path / "a.pdn"
    b = tmp_path / "b.pdn"
    a.write_text(pdn(["30-39"], fen="B:W34:B30", result="0-2", GameType="20"))
    b.write_text(pdn(["32-28"], result="*", GameType="20") * 2)
    runner = CliRunner()
    out = runner.invoke(main, ["rule", "--json", str(a), str(b)])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.output.splitlines()]
    assert [(r["file"], r["game"]) for r in rows] == [(str(a), 1), (str(b), 1), (str(b), 2)]
    assert list(rows[0])[:2] == ["game", "file"]
    assert rows[0]["warnings"] and rows[1]["warnings"] == []
    strict = runner.invoke(main, ["rule", "--json", "--strict", str(a)])
    assert strict.exit_code == 1
    row = json.loads(strict.output)
    assert row["reason"] == "illegal-move" and "file" not in row


def test_cli_huge_number_is_one_line_not_a_traceback(tmp_path):
    f = tmp_path / "big.pdn"
    f.write_text("1. 3" + "2" * 5000 + "-28 *\n")
    out = CliRunner().invoke(main, ["rule", str(f)])
    assert out.exit_code == 1
    assert "Traceback" not in out.output and "number too long" in out.output
