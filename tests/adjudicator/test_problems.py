"""Games without moves (composed problems: a FEN and a result) in files without a GameType
tag: the variant the file's other games settle, else the board the positions fit."""

from __future__ import annotations

import io

from adjudicator.pdn import read_games
from adjudicator.ruling import rule_games

ENGLISH_GAME = "1. 11-15 23-19 2. 8-11 22-17 *"  # black moves first: legal only in English
INTERNATIONAL_GAME = "1. 32-28 19-23 2. 28x19 14x23 *"  # legal only in International
PROBLEM_8X8 = '[FEN "W:W21,K30:B5,9"]\n1-0'  # squares up to 30: fits 8x8 and 10x10
PROBLEM_10X10 = '[FEN "W:W46,K33:B5,9"]\n1-0'  # square 46: 10x10 only


def ruled(*games: str) -> list[tuple[str, list[str]]]:
    text = "\n\n".join(games) + "\n"
    games_read = read_games(io.StringIO(text), name="t.pdn", errors="collect")
    return [(r.variant, r.warnings) for _, r in rule_games(games_read)]


def test_a_problem_takes_the_variant_of_the_game_after_it():
    (v1, w1), (v2, w2) = ruled(PROBLEM_8X8, ENGLISH_GAME)
    assert (v1, v2) == ("english", "english")
    assert "variant english taken from game 2 of the file" in w1[-1]


def test_a_problem_takes_the_variant_of_the_nearest_game_before_it():
    rulings = ruled(ENGLISH_GAME, INTERNATIONAL_GAME, PROBLEM_8X8, ENGLISH_GAME, PROBLEM_8X8)
    assert [v for v, _ in rulings] == [
        "english",
        "international",
        "international",
        "english",
        "english",
    ]
    assert "variant international taken from game 2 of the file" in rulings[2][1][-1]
    assert "variant english taken from game 4 of the file" in rulings[4][1][-1]


def test_a_gametype_tag_settles_the_problems_after_it():
    tagged = '[GameType "25"]\n[FEN "W:Wa1:Bh8"]\n*'
    rulings = ruled(tagged, PROBLEM_8X8)
    assert [v for v, _ in rulings] == ["russian", "russian"]


def test_a_file_of_problems_on_squares_up_to_32_is_english():
    rulings = ruled(PROBLEM_8X8, PROBLEM_8X8, '[FEN "B:W32:B1"]\n0-1')
    assert [v for v, _ in rulings] == ["english"] * 3
    assert "fit the 8x8 board" in rulings[0][1][-1]


def test_one_problem_beyond_square_32_makes_the_file_international():
    rulings = ruled(PROBLEM_8X8, PROBLEM_10X10)
    assert [v for v, _ in rulings] == ["international"] * 2
    assert "fit the 10x10 board" in rulings[0][1][-1]


def test_an_explicit_variant_wins_and_adds_no_warning():
    text = PROBLEM_8X8 + "\n\n" + ENGLISH_GAME + "\n"
    games = read_games(io.StringIO(text), name="t.pdn", errors="collect")
    rulings = [r for _, r in rule_games(games, variant="russian")]
    assert [r.variant for r in rulings] == ["russian", "russian"]
    assert not any("no GameType tag and no moves" in w for r in rulings for w in r.warnings)
