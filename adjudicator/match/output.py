"""A refereed game as PDN and as JSON.

The PDN game starts from the opening's start position (its ``FEN`` tag, none for the
initial position) and holds every move, the opening's included, so that ``adjudicator rule``
replays it with the same draw-rule history. Tags: ``Event``, ``Round`` (the game number),
``White``, ``Black`` (the engines' names), ``Result``, ``GameType``, ``FEN``, ``Opening``,
``TimeControl``, ``Termination`` (the reason, as in the JSON) and ``TerminationDetail``
(what the referee saw). The JSON object has ``game, white, black, result, reason, plies,
opening`` and ``detail``.
"""

from __future__ import annotations

from typing import Any

from adjudicator.match.referee import GameRecord
from adjudicator.pdn import PdnGame, PdnMove, write_game
from adjudicator.replay import move_number
from tablebase.rules.variants import Variant


def pdn_game(record: GameRecord, variant: Variant, event: str, control: str) -> PdnGame:
    start = record.opening.start
    first_mover = start.white_to_move == variant.white_moves_first
    moves = []
    for ply, text in enumerate(record.texts, 1):
        first = (ply % 2 == 1) == first_mover
        moves.append(
            PdnMove(
                move_number(ply, first_mover), "first" if first else "second", text, ply=ply - 1
            )
        )
    tags = {
        "Event": event,
        "Round": str(record.game),
        "White": record.white,
        "Black": record.black,
        "Result": record.result(variant),
        "GameType": str(variant.game_type),
    }
    if record.opening.fen is not None:
        tags["FEN"] = record.opening.fen
    tags["Opening"] = record.opening.label
    tags["TimeControl"] = control
    tags["Termination"] = record.reason
    tags["TerminationDetail"] = record.detail
    return PdnGame(index=record.game, tags=tags, moves=moves, result_token=record.result(variant))


def pdn_text(record: GameRecord, variant: Variant, event: str, control: str) -> str:
    return write_game(pdn_game(record, variant, event, control))


def json_object(record: GameRecord, variant: Variant) -> dict[str, Any]:
    return {
        "game": record.game,
        "white": record.white,
        "black": record.black,
        "result": record.result(variant),
        "reason": record.reason,
        "plies": record.plies,
        "opening": record.opening.label,
        "detail": record.detail,
    }
