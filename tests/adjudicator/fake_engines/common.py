"""What both fake engines share: a move chooser over the rules engine."""

from __future__ import annotations

from tablebase.rules import Position, legal_moves


def choose(pos: Position):
    """A legal move, deterministically: the one with the lowest (from, to, captures)."""
    moves = legal_moves(pos)
    if not moves:
        return None
    return min(moves, key=lambda m: (m.frm, m.to, m.captures))


class Fault:
    """``KIND[:ARG]@GAME.PLY``: misbehave in game GAME (1-based, counted by this engine) at
    its PLY-th own turn (default 1.1). KIND: illegal (ARG a move), garbage, die, stall,
    resign, claim-win, claim-draw, disconnect."""

    def __init__(self, text: str | None) -> None:
        self.kind = self.arg = None
        self.game, self.turn = 1, 1
        if text:
            what, _, when = text.partition("@")
            self.kind, _, self.arg = what.partition(":")
            if when:
                game, _, turn = when.partition(".")
                self.game, self.turn = int(game), int(turn or 1)

    def now(self, game: int, turn: int) -> str | None:
        return self.kind if (game, turn) == (self.game, self.turn) else None
