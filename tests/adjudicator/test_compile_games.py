"""``adjudicator compile``: its games of random legal moves replay legally in every variant
(each move written as ``move_text`` writes it and read back by the replay), and the command
reports what it did."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from adjudicator.cli import main
from adjudicator.ruling import rule_game
from adjudicator.warmup import GAMES, random_game
from tablebase.rules import legal_moves, play
from tablebase.rules.notation import parse_move
from tablebase.rules.position import Position
from tablebase.rules.variants import VARIANTS


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_random_games_replay_legally(name: str) -> None:
    """Every game of the warm-up replays to its end or to a terminal event, never to an
    error: the texts the engine writes are the texts the replay reads (a Frisian king's
    route with straight legs once came back ambiguous from move 30 of the first game)."""
    for seed in range(GAMES):
        texts = random_game(name, seed)
        assert len(texts) > 40
        ruling = rule_game(texts, variant=name)
        assert not ruling.is_error, (seed, ruling.detail)
        assert ruling.ply == len(texts) or ruling.reason != "unfinished", ruling


def test_random_game_is_the_seeds_and_legal() -> None:
    texts = random_game("international", 3, plies=30)
    assert texts == random_game("international", 3, plies=30)
    assert texts != random_game("international", 4, plies=30)
    pos = Position.start("international")
    for text in texts:
        move = parse_move(pos, text)
        assert move in legal_moves(pos)
        pos = play(pos, move)


def test_the_command_replays_the_variants_asked_for() -> None:
    result = CliRunner().invoke(main, ["compile", "--variant", "english"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("replay and draw rules compiled in ")
    bad = CliRunner().invoke(main, ["compile", "--variant", "chess"])
    assert bad.exit_code == 2 and "chess" in bad.output
