"""Time control: what each engine is told, and the referee's clock that decides losses on time.

A :class:`TimeControl` is either a game clock (``minutes`` for ``moves`` moves, repeating,
``moves`` 0 meaning the whole game, plus ``inc`` seconds after each move: DXP's GAMEREQ
carries minutes and moves, Hub's ``level`` carries ``time``, ``moves`` and ``inc``) or a
fixed time per move (``move_time``, Hub's ``level move-time``). The referee measures each
move from the moment it hands the engine the move (or the game) to the moment the answer
arrives; an engine whose time runs out, ``grace`` seconds of transport allowance aside, has
lost on time. ``depth`` (Hub's ``level depth=``) also limits each search to that many plies:
with a game clock long enough, a deterministic engine then plays the same game however loaded
the machine is.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TimeControl:
    minutes: float = 5.0
    moves: int = 0
    inc: float = 0.0
    move_time: float | None = None
    grace: float = 0.5
    depth: int | None = None

    def __post_init__(self) -> None:
        if self.depth is not None and self.depth < 1:
            raise ValueError("the search depth must be at least 1")
        if self.move_time is None and self.minutes <= 0:
            raise ValueError("the game time must be positive")
        if self.move_time is not None and self.move_time <= 0:
            raise ValueError("the time per move must be positive")
        if self.moves < 0 or self.inc < 0 or self.grace < 0:
            raise ValueError("moves, increment and grace must not be negative")

    def describe(self) -> str:
        depth = f", depth {self.depth}" if self.depth is not None else ""
        if self.move_time is not None:
            return f"{self.move_time:g} s per move{depth}"
        per = f"/{self.moves} moves" if self.moves else ""
        inc = f" + {self.inc:g} s" if self.inc else ""
        return f"{self.minutes:g} min{per}{inc}{depth}"

    def dxp_fields(self) -> tuple[int, int]:
        """GAMEREQ's minutes and moves; ``ValueError`` when DXP cannot carry this control."""
        if self.move_time is not None:
            raise ValueError("DXP has no time per move: give a game time (--time) for DXP engines")
        if self.minutes != int(self.minutes) or not 1 <= self.minutes <= 999:
            raise ValueError("DXP carries whole minutes (1-999): give --time as a whole number")
        if self.inc:
            raise ValueError("DXP has no increment: leave --inc out for DXP engines")
        if self.moves > 999:
            raise ValueError("DXP carries at most 999 moves per time control")
        return int(self.minutes), self.moves


class Clock:
    """One engine's clock in one game."""

    def __init__(self, control: TimeControl) -> None:
        self.control = control
        self.left = control.minutes * 60.0
        self.made = 0  # moves made

    def budget(self) -> float:
        """Seconds this move may take before the engine loses on time."""
        c = self.control
        if c.move_time is not None:
            return c.move_time + c.grace
        return self.left + c.grace

    def moves_to_control(self) -> int:
        c = self.control
        return 0 if not c.moves else c.moves - self.made % c.moves

    def level(self, depth_limit: int | None = None) -> str:
        """The Hub ``level`` line for this engine's next move (``depth_limit``: the engine's
        own depth, instead of the control's)."""
        c = self.control
        limit = c.depth if depth_limit is None else depth_limit
        depth = "" if limit is None else f"depth={limit} "
        if c.move_time is not None:
            return f"level {depth}move-time={c.move_time:g}"
        parts = [f"{depth}time={max(self.left, 0.0):.3f}"]
        if c.moves:
            parts.insert(0, f"moves={self.moves_to_control()}")
        if c.inc:
            parts.append(f"inc={c.inc:g}")
        return "level " + " ".join(parts)

    def spend(self, seconds: float) -> bool:
        """Charge a move that took ``seconds``; False if the time ran out."""
        c = self.control
        self.made += 1
        if c.move_time is not None:
            return seconds <= c.move_time + c.grace
        self.left -= seconds
        if self.left < -c.grace:
            return False
        self.left += c.inc
        if c.moves and self.made % c.moves == 0:
            self.left += c.minutes * 60.0
        return True
