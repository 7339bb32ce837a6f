"""Start positions of a match: the initial position, or a file of openings.

A file of openings holds FENs, one a line (blank lines and lines starting with ``#`` are
skipped), or PDN games (2-move or 3-move ballots): each game's moves are played first from
its FEN tag or the initial position, and the engines take over where they end. Every move
of an opening is checked with the rules engine and the draw rules; an opening that is not
legal, or that ends the game, is an error naming it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from adjudicator.drawrules import DrawState, RuleOptions
from adjudicator.pdn import read_games
from adjudicator.replay import start_position, terminal
from tablebase.rules.moves import Move, play
from tablebase.rules.notation import MoveError, move_text, parse_move
from tablebase.rules.position import FenError, Position
from tablebase.rules.variants import Variant


class OpeningError(ValueError):
    """An openings file that cannot be used."""


@dataclass(frozen=True)
class Opening:
    label: str  # what the JSON and the PDN's Opening tag show
    fen: str | None  # the FEN tag of the games (None: the initial position)
    start: Position
    moves: tuple[Move, ...]
    texts: tuple[str, ...]  # the moves in PDN notation

    @property
    def position(self) -> Position:
        pos = self.start
        for m in self.moves:
            pos = play(pos, m)
        return pos


def initial(variant: Variant) -> Opening:
    return Opening("start", None, Position.start(variant), (), ())


def load(path: str, variant: Variant, options: RuleOptions | None = None) -> list[Opening]:
    """The openings of ``path``; :class:`OpeningError` names the first bad one."""
    if not os.path.isfile(path):
        raise OpeningError(f"{path}: no such file")
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = [ln.strip() for ln in text.splitlines()]
    is_pdn = any(ln.startswith("[") or ln[:2] == "1." for ln in lines)
    out = _pdn(path, variant, options) if is_pdn else _fens(path, lines, variant, options)
    if not out:
        raise OpeningError(f"{path}: no openings found")
    return out


def _fens(
    path: str, lines: list[str], variant: Variant, options: RuleOptions | None
) -> list[Opening]:
    out = []
    for number, line in enumerate(lines, 1):
        if not line or line.startswith("#"):
            continue
        try:
            start = Position.from_fen(line, variant)
        except (FenError, ValueError) as error:
            raise OpeningError(f"{path}, line {number}: {error}") from None
        opening = Opening(start.fen(), start.fen(), start, (), ())
        _check(opening, f"{path}, line {number}", options)
        out.append(opening)
    return out


def _pdn(path: str, variant: Variant, options: RuleOptions | None) -> list[Opening]:
    out = []
    for game in read_games(path, errors="collect"):
        where = f"{path}, game {game.index}"
        if game.error is not None:
            raise OpeningError(f"{where}: {game.error}")
        try:
            start = start_position(variant, game.fen)
        except (FenError, ValueError) as error:
            raise OpeningError(f"{where}: {error}") from None
        pos, moves, texts = start, [], []
        for m in game.moves:
            try:
                move = parse_move(pos, m.text)
            except MoveError as error:
                raise OpeningError(f"{where}, move {m.number}: {error}") from None
            moves.append(move)
            texts.append(move_text(pos, move))
            pos = play(pos, move)
        label = " ".join(texts) if texts else start.fen()
        if game.fen:
            label = f"{start.fen()} {label}" if texts else label
        opening = Opening(
            label, start.fen() if game.fen else None, start, tuple(moves), tuple(texts)
        )
        _check(opening, where, options)
        out.append(opening)
    return out


def _check(opening: Opening, where: str, options: RuleOptions | None) -> None:
    """The opening must leave a game to play: no side lost, no draw rule fired."""
    state = DrawState(opening.start, options)
    pos = opening.start
    fired = state.initial()
    for move in opening.moves:
        after = play(pos, move)
        fired = state.push(pos, move, after) or fired
        pos = after
    if terminal(pos) is not None:
        raise OpeningError(f"{where}: the side to move has already lost ({pos.fen()})")
    if fired is not None:
        raise OpeningError(f"{where}: the {fired} rule ends the game within the opening")
