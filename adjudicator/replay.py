"""Replaying one game with the rules engine and the draw rules, up to its first terminal event.

Every move is parsed against the position (:func:`tablebase.notation.parse_move`); an illegal
or ambiguous move stops the replay with a :class:`ReplayError` that names the game, the move
number and side, the move as written and the legal moves. After each ply, in this order: the
side to move has no pieces or no legal move (it has lost: winning takes precedence over any
count expiring on the same ply), then threefold repetition, then the move counts. A move,
multi-capture included, is one ply, so no rule is ever applied in the middle of a capture. The
start position is checked the same way (a game given from a finished position, or an
``elapsed`` count already run out).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from adjudicator.drawrules import DrawState, RuleOptions
from adjudicator.movelist import MoveList
from adjudicator.pdn import PdnGame, PdnMove
from tablebase.rules import play
from tablebase.rules.notation import MoveError
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant

NO_PIECES, NO_MOVES = "no-pieces", "no-moves"
LOSSES = frozenset({NO_PIECES, NO_MOVES})


class ReplayError(ValueError):
    """An illegal or ambiguous move: where it is, what was written, what was legal."""

    def __init__(
        self, game: int, ply: int, number: int, colour: str, text: str, error: MoveError
    ) -> None:
        self.game = game
        self.ply = ply
        self.number = number
        self.colour = colour
        self.text = text
        self.reason = error.reason
        self.legal = list(error.candidates)
        self.kind = "ambiguous-move" if error.reason == "ambiguous" else "illegal-move"
        label = "matches" if self.kind == "ambiguous-move" else "legal"
        listed = ", ".join(self.legal) if self.legal else "none"
        super().__init__(
            f"game {game}, move {number} ({colour}) {text}: {error.reason} ({label}: {listed})"
        )


@dataclass
class Replay:
    """What a replay found: the final position, how many plies were played, the event."""

    start: Position
    position: Position
    state: DrawState
    ply: int = 0
    event: str | None = None  # "no-pieces", "no-moves", "threefold", "25-move", ...
    error: ReplayError | None = None

    @property
    def variant(self) -> Variant:
        return self.start.variant

    def white_score(self) -> int | None:
        """2 white won, 1 draw, 0 white lost, None when no event ended the game."""
        if self.event is None:
            return None
        if self.event in LOSSES:
            return 0 if self.position.white_to_move else 2
        return 1


def terminal(pos: Position, moves: MoveList | None = None) -> str | None:
    """``"no-pieces"`` or ``"no-moves"`` when the side to move has lost, else None."""
    own = pos.white_men | pos.white_kings if pos.white_to_move else pos.black_men | pos.black_kings
    if not own:
        return NO_PIECES
    if (moves or MoveList(pos)).count == 0:
        return NO_MOVES
    return None


def colour_name(pos: Position) -> str:
    return "white" if pos.white_to_move else "black"


def replay(
    moves: PdnGame | Iterable[PdnMove | str],
    start: Position,
    options: RuleOptions | None = None,
    *,
    game: int = 1,
    stop: bool = True,
) -> Replay:
    """Replay ``moves`` from ``start`` with full legality checks and the draw rules.

    With ``stop`` (the default) the replay ends at the first terminal event; without, it goes
    on through the whole move list (an illegal move still stops it) and ``event`` is the first
    one found. Move numbers in errors are the ones written in the PDN, or counted from the
    start for plain move texts.
    """
    if isinstance(moves, PdnGame):
        game, moves = moves.index, moves.moves
    state = DrawState(start, options)
    result = Replay(start, start, state)
    legal = MoveList(start)
    result.event = terminal(start, legal) or state.initial()
    if result.event is not None and stop:
        return result
    pos = start
    first_mover = start.white_to_move == start.variant.white_moves_first
    for ply, item in enumerate(moves, 1):
        text = item.text if isinstance(item, PdnMove) else item
        try:
            move = legal.parse(text)
        except MoveError as error:
            number = item.number if isinstance(item, PdnMove) else move_number(ply, first_mover)
            result.error = ReplayError(game, ply, number, colour_name(pos), text, error)
            return result
        after = play(pos, move)
        draw = state.push(pos, move, after)
        pos = after
        legal = MoveList(pos)
        result.position, result.ply = pos, ply
        if result.event is None:
            result.event = terminal(pos, legal) or draw
            if result.event is not None and stop:
                return result
    return result


def move_number(ply: int, first_mover: bool) -> int:
    """Move number of a ply when only move texts were given, counted from 1 as PDN does
    (``1... 17-22 2. 32-28`` when the start position has the second player to move)."""
    return (ply + 1) // 2 if first_mover else ply // 2 + 1


def start_position(variant: Variant, fen: str | None) -> Position:
    """The game's start position: the FEN tag's, or the variant's initial one."""
    if fen is None or not fen.strip():
        return Position.start(variant)
    return Position.from_fen(fen, variant)
