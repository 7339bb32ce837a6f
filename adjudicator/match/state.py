"""A match's saved state (``--resume FILE``): what a match interrupted needs to go on.

The file is JSON: ``format`` (``adjudicator-match-state``), ``version``, ``options`` (the
match's command-line options, so that ``--resume FILE`` alone continues the same match),
``order`` (the openings' order), ``games`` (per finished game, by number: its engines' names,
the white score, reason, plies and its PDN text) and ``sprt`` (the LLR, the pair counts and
the decision, when the match runs one; recomputed from the games on resume, saved for the
reader). It is written after every game to ``FILE.tmp``, flushed to disk and renamed over
``FILE``, so the file is always a complete state, the last game included or not, never half.

A game being played when the match stopped is not in the file: it is played again, whole,
when the match resumes, and the PDN is written again from the file's games (in game order),
so it never holds half a game nor one twice.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

FORMAT = "adjudicator-match-state"
VERSION = 1


class StateError(ValueError):
    """A state file that cannot be used."""


@dataclass
class SavedGame:
    number: int
    white: str
    black: str
    white_score: int | None  # 2, 1, 0; None unfinished
    reason: str
    plies: int
    pdn: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "white": self.white,
            "black": self.black,
            "white_score": self.white_score,
            "reason": self.reason,
            "plies": self.plies,
            "pdn": self.pdn,
        }


@dataclass
class MatchState:
    """The state in memory; :meth:`save` writes it when it has a path."""

    path: str | None
    options: dict[str, Any] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    games: dict[int, SavedGame] = field(default_factory=dict)
    sprt: dict[str, Any] | None = None

    def add(self, game: SavedGame) -> None:
        if game.number in self.games:
            raise StateError(f"game {game.number} is already in the state")
        self.games[game.number] = game

    def pdn_text(self) -> str:
        """Every game's PDN, in game order."""
        return "\n".join(self.games[k].pdn for k in sorted(self.games))

    def save(self) -> None:
        if self.path is None:
            return
        data = {
            "format": FORMAT,
            "version": VERSION,
            "options": self.options,
            "order": self.order,
            "games": {str(k): self.games[k].to_dict() for k in sorted(self.games)},
            "sprt": self.sprt,
        }
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def load(path: str) -> MatchState:
    """The state saved in ``path``; :class:`StateError` naming what is wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as error:
        raise StateError(f"{path}: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise StateError(f"{path}: not a match state (JSON error: {error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StateError(f"{path}: not a match state (no format {FORMAT!r})")
    if data.get("version") != VERSION:
        raise StateError(f"{path}: state version {data.get('version')!r}, expected {VERSION}")
    try:
        games = {
            int(k): SavedGame(
                int(k),
                str(g["white"]),
                str(g["black"]),
                None if g["white_score"] is None else int(g["white_score"]),
                str(g["reason"]),
                int(g["plies"]),
                str(g["pdn"]),
            )
            for k, g in data["games"].items()
        }
        state = MatchState(
            path, dict(data["options"]), [int(i) for i in data["order"]], games, data.get("sprt")
        )
    except (KeyError, TypeError, ValueError) as error:
        what = f"{type(error).__name__}: {error}"
        raise StateError(f"{path}: a damaged match state ({what})") from None
    return state
