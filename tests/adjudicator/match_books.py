"""Books for the rules-free fake Hub engine (``fake_engines/hub_book.py``): games played out
here with the project's rules, written as what the referee will send and what to answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from adjudicator.drawrules import DrawState
from adjudicator.replay import terminal
from tablebase.probe.hub import move_text, position_text
from tablebase.rules import Position, legal_moves, play

FAKES = Path(__file__).parent / "fake_engines"
PYTHON = sys.executable


def line_of(start: Position, max_plies: int = 200) -> list:
    """The game from ``start`` where each side plays its lowest move (from, to, captures),
    until a side has lost or a draw rule fires."""
    state = DrawState(start)
    pos, moves = start, []
    if state.initial() is not None:
        return moves
    while terminal(pos) is None and len(moves) < max_plies:
        move = min(legal_moves(pos), key=lambda m: (m.frm, m.to, m.captures))
        after = play(pos, move)
        fired = state.push(pos, move, after)
        moves.append(move)
        pos = after
        if fired is not None:
            break
    return moves


def entries(start: Position, moves: list, upto: int | None = None, score=None) -> dict:
    """Book entries for the plies of ``moves`` (the first ``upto`` of them); ``score(ply)``
    gives the score to report with the ply's move, or None."""
    out = {}
    texts = [move_text(m) for m in moves]
    for ply in range(len(moves) if upto is None else upto):
        value = texts[ply]
        s = None if score is None else score(ply)
        if s is not None:
            value += f" {s}"
        out[f"{position_text(start)}|{' '.join(texts[:ply])}"] = value
    return out


def book_engine(
    path: Path, book: dict, name: str, delay: float = 0.0, params: tuple[str, ...] = (),
    log: Path | None = None,
) -> str:  # fmt: skip
    """Write ``book`` to ``path``; the spec of the engine playing it."""
    path.write_text(json.dumps(book))
    spec = f"hub:{PYTHON} {FAKES / 'hub_book.py'} --book {path} --name {name}"
    if delay:
        spec += f" --delay {delay}"
    for p in params:
        spec += f" --param '{p}'"
    if log is not None:
        spec += f" --log {log}"
    return spec
