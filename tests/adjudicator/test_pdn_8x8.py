"""Russian and Brazilian games in PDN: alphanumeric moves (`c3-d4`, `c3:e5`, `C3xE5`, routes
`c3:e5:g3`) read, replayed and ruled; the variant from GameType 25/26 or, without the tag,
from the moves."""

from __future__ import annotations

import io
import random

import pytest

from adjudicator import RuleOptions, rule_game
from adjudicator.pdn import read_games
from tablebase.rules import legal_moves, play
from tablebase.rules.notation import move_text
from tablebase.rules.position import Position
from tablebase.rules.variants import BRAZILIAN, RUSSIAN

OPENING = "1. c3-d4 f6-e5 2. D4:F6 g7:e5 3. b2-c3 h8-g7 4. g3-f4 e5:g3 5. h2:f4 *"


def games_of(text: str):
    return list(read_games(io.StringIO(text), name="t.pdn"))


def pdn_text(moves: list[str], game_type: int | None, result: str = "*") -> str:
    tags = '[Event "t"]\n' + (f'[GameType "{game_type}"]\n' if game_type else "")
    numbered = []
    for i, m in enumerate(moves):
        numbered.append(f"{i // 2 + 1}. {m}" if i % 2 == 0 else m)
    return tags + "\n" + " ".join(numbered) + f" {result}\n"


def test_alphanumeric_moves_are_read_as_written():
    (game,) = games_of('[GameType "25"]\n\n' + OPENING)
    assert game.error is None
    assert [m.text for m in game.moves] == [
        "c3-d4",
        "f6-e5",
        "d4xf6",
        "g7xe5",
        "b2-c3",
        "h8-g7",
        "g3-f4",
        "e5xg3",
        "h2xf4",
    ]
    with pytest.raises(ValueError, match="need the variant"):
        _ = game.moves[0].squares


@pytest.mark.parametrize("game_type", [25, 26])
def test_opening_replays_in_both(game_type):
    (game,) = games_of(f'[GameType "{game_type}"]\n\n' + OPENING)
    r = rule_game(game, options=RuleOptions())
    assert r.variant == ("russian" if game_type == 25 else "brazilian")
    assert (r.reason, r.ply) == ("unfinished", 9), r.detail


def test_route_of_a_multiple_capture_and_mid_capture_crowning():
    # d6 takes e7, is crowned on f8 and (Russian) goes on over g7 to h6: written as a route
    for text in ("d6:f8:h6", "d6:h6", "10x3x12", "D6xH6"):
        r = rule_game([text], fen="W:W10:B7,8", variant="russian", options=RuleOptions())
        assert (r.reason, r.result, r.ply) == ("no-pieces", "1-0", 1), (text, r.detail)


def test_illegal_alphanumeric_move_names_the_legal_ones():
    (game,) = games_of('[GameType "25"]\n\n1. c3-e5 *')
    r = rule_game(game, options=RuleOptions())
    assert r.reason == "illegal-move"
    assert "c3-e5" in r.detail and "c3-d4" in r.detail  # legal moves listed in the notation


def test_variant_inferred_from_alphanumeric_moves():
    (game,) = games_of(pdn_text(["c3-d4", "f6-e5", "d4:f6", "g7:e5"], None))
    r = rule_game(game, options=RuleOptions())
    assert r.variant == "russian"  # the first of the 8x8 flying variants that replays it
    assert any("inferred" in w for w in r.warnings)


@pytest.mark.parametrize("variant", [RUSSIAN, BRAZILIAN], ids=lambda v: v.name)
def test_random_games_written_alphanumerically_replay(variant):
    """Random legal games, written the way Russian files write them (and with the result the
    game reached), are read and replayed to the same end."""
    rng = random.Random(17)
    texts = []
    ends = []
    for _ in range(20):
        pos = Position.start(variant)
        moves = []
        for _ply in range(rng.randint(10, 120)):
            legal = legal_moves(pos)
            if not legal:
                break
            move = rng.choice(legal)
            moves.append(move_text(pos, move, legal))
            pos = play(pos, move)
        texts.append(pdn_text(moves, variant.game_type))
        ends.append((len(moves), pos))
    games = games_of("\n".join(texts))
    assert len(games) == 20
    for game, (plies, final) in zip(games, ends, strict=True):
        assert game.error is None
        r = rule_game(game, options=RuleOptions())
        assert r.variant == variant.name
        assert r.ply <= plies and r.reason not in ("illegal-move", "pdn-error"), r.detail
        if r.reason == "unfinished":
            assert r.ply == plies and final.fen() in r.detail
