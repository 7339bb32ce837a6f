"""A match's score: wins, draws and losses per engine, and the Elo difference with its 95 %
interval.

The Elo difference of a score fraction ``s`` is ``-400 log10(1/s - 1)``. Its interval comes
from the games' own spread: each game scores 1, 1/2 or 0 for the first engine; the standard
error of their mean is their standard deviation over ``sqrt(n)``, and the interval is
``s +- 1.96`` standard errors mapped through the same formula (a fraction at 0 or 1 maps to
minus or plus infinity). Unfinished games (``*``) count in no score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959964


@dataclass(frozen=True)
class Score:
    names: tuple[str, str]
    wins: int  # of the first engine
    draws: int
    losses: int
    unfinished: int

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def points(self) -> float:
        return self.wins + self.draws / 2

    def fraction(self) -> float | None:
        return None if not self.games else self.points / self.games

    def elo(self) -> tuple[float, float, float] | None:
        """(difference, low, high) of the first engine over the second, or None."""
        s = self.fraction()
        if s is None:
            return None
        n = self.games
        mean_sq = (self.wins + self.draws / 4) / n
        sd = math.sqrt(max(mean_sq - s * s, 0.0))
        se = sd / math.sqrt(n)
        return elo_of(s), elo_of(s - Z95 * se), elo_of(s + Z95 * se)

    def summary(self) -> str:
        a, b = self.names
        n = self.games
        lines = [
            f"score: {a} {_pts(self.points)} - {_pts(n - self.points)} {b} "
            f"({n} games{f', {self.unfinished} unfinished' if self.unfinished else ''})",
            f"  {a}: {self.wins} wins, {self.draws} draws, {self.losses} losses",
            f"  {b}: {self.losses} wins, {self.draws} draws, {self.wins} losses",
        ]
        e = self.elo()
        if e is not None:
            lines.append(
                f"Elo difference ({a} - {b}): {_elo(e[0])}, "
                f"95 % interval [{_elo(e[1])}, {_elo(e[2])}]"
            )
        return "\n".join(lines)


def elo_of(s: float) -> float:
    """Elo difference of a score fraction (+-inf at 1 and 0)."""
    if s >= 1:
        return math.inf
    if s <= 0:
        return -math.inf
    return -400 * math.log10(1 / s - 1)


def tally(names: tuple[str, str], scores: list[int | None]) -> Score:
    """``scores``: the first engine's score per game (2 win, 1 draw, 0 loss, None)."""
    return Score(
        names,
        sum(1 for s in scores if s == 2),
        sum(1 for s in scores if s == 1),
        sum(1 for s in scores if s == 0),
        sum(1 for s in scores if s is None),
    )


def _pts(x: float) -> str:
    return f"{x:g}"


def _elo(x: float) -> str:
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return f"{int(round(x)):+d}"
