"""The outcome of a position for the side to move: the win/draw/loss names, the order in which
moves are ranked by their outcome, and whether a side has pieces left.

One home for what the prober, the count search, the command line and the service all say
about a value: ``1`` win, ``0`` draw, ``-1`` loss for the side to move; a move's outcome is
its mover's.
"""

from __future__ import annotations

from tablebase.rules.position import Position

WIN, DRAW, LOSS = 1, 0, -1
RESULT_NAMES: dict[int, str] = {WIN: "win", DRAW: "draw", LOSS: "loss"}


def move_rank(result: str | None, dtw: int | None) -> tuple[int, int]:
    """Sort key of a move by its outcome for the mover, best first: wins by the shortest
    distance, then draws, then losses by the longest, then moves of unknown value."""
    d = dtw or 0
    if result == "win":
        return (0, d)
    if result == "draw":
        return (1, 0)
    if result == "loss":
        return (2, -d)
    return (3, 0)


def pieces(pos: Position) -> tuple[int, int]:
    """(pieces of the side to move, pieces of the other side). A side to move with none has
    lost; a position whose other side has none is past the end of the game."""
    wm, wk, bm, bk = pos.piece_count()
    white, black = wm + wk, bm + bk
    return (white, black) if pos.white_to_move else (black, white)
