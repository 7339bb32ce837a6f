"""A match: the games in order, colours alternating, each opening played with both colours.

Game ``k`` (from 1) takes opening ``(k - 1) // 2`` (cycling through the list) and gives the
first engine white when ``k`` is odd. Each game is refereed by
:func:`adjudicator.match.referee.play_game`; a game lost to a fault does not stop the match.
The PDN is written game by game to ``OUT.partial`` and renamed to ``OUT`` when the match is
over, so that a file under the asked name is always complete.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from adjudicator.match.engines import Engine, Spec, make_engine
from adjudicator.match.openings import Opening
from adjudicator.match.output import pdn_text
from adjudicator.match.referee import GameRecord, Referee, play_game
from adjudicator.match.results import Score, tally
from tablebase.rules.variants import Variant


@dataclass
class Match:
    specs: tuple[Spec, Spec]
    games: int
    openings: list[Opening]
    referee: Referee
    variant: Variant
    event: str = "adjudicator match"


def run_match(
    match: Match,
    pdn_path: str | None = None,
    on_game: Callable[[GameRecord, Score], None] | None = None,
) -> tuple[list[GameRecord], Score]:
    """Play every game; returns the records and the first engine's score."""
    engines: list[Engine] = [make_engine(s, f"engine {i + 1}") for i, s in enumerate(match.specs)]
    records: list[GameRecord] = []
    scores: list[int | None] = []
    partial = None if pdn_path is None else pdn_path + ".partial"
    out = None if partial is None else open(partial, "w", encoding="utf-8")  # noqa: SIM115
    try:
        for k in range(1, match.games + 1):
            opening = match.openings[((k - 1) // 2) % len(match.openings)]
            first_white = k % 2 == 1
            white, black = (engines[0], engines[1]) if first_white else (engines[1], engines[0])
            record = play_game(k, white, black, opening, match.referee, last=k == match.games)
            records.append(record)
            s = record.white_score
            scores.append(None if s is None else (s if first_white else 2 - s))
            if out is not None:
                if k > 1:
                    out.write("\n")
                out.write(
                    pdn_text(record, match.variant, match.event, match.referee.control.describe())
                )
                out.flush()
            if on_game is not None:
                on_game(record, tally(_names(engines), scores))
    finally:
        for engine in engines:
            engine.close()
        if out is not None:
            out.close()
    if partial is not None and pdn_path is not None:
        os.replace(partial, pdn_path)
    return records, tally(_names(engines), scores)


def _names(engines: list[Engine]) -> tuple[str, str]:
    a, b = engines[0].name, engines[1].name
    if a == b:
        return f"{a} #1", f"{b} #2"
    return a, b
