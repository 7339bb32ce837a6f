"""A tournament's tables: the standings, the crosstable and every pair's score.

Points count 1 a win and 1/2 a draw; unfinished games (``*``) count in no score. The
crosstable's cell (row ``i``, column ``j``) is engine ``i``'s points against engine ``j``
out of their finished games; each pair's line has the first engine's wins, draws and losses
and its Elo difference with the 95 % interval (:mod:`adjudicator.match.results`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from adjudicator.match.results import Score, tally
from adjudicator.match.schedule import Pairing


@dataclass
class Crosstable:
    names: list[str]
    # (i, j) -> engine i's game scores against j (2 win, 1 draw, 0 loss, None unfinished)
    scores: dict[tuple[int, int], list[int | None]] = field(default_factory=dict)

    def add(self, pairing: Pairing, white_score: int | None) -> None:
        w, b = pairing.white, pairing.black
        self.scores.setdefault((w, b), []).append(white_score)
        self.scores.setdefault((b, w), []).append(None if white_score is None else 2 - white_score)

    def pair(self, i: int, j: int) -> Score:
        """Engine ``i``'s score against ``j``."""
        return tally((self.names[i], self.names[j]), self.scores.get((i, j), []))

    def points(self, i: int) -> tuple[float, int]:
        """(points, finished games) of engine ``i``."""
        got = [s for (a, _), ss in self.scores.items() if a == i for s in ss if s is not None]
        return sum(got) / 2, len(got)

    def standings(self) -> list[int]:
        """Engine indices, most points first (then by fewer games, then by index)."""
        return sorted(
            range(len(self.names)),
            key=lambda i: (-self.points(i)[0], self.points(i)[1], i),
        )

    def text(self) -> str:
        order = self.standings()
        width = max(len(n) for n in self.names)
        head = f"{'':>3} {'engine':<{width}} {'points':>8} {'games':>5}"
        head += "".join(f" {k + 1:>7}" for k in range(len(order)))
        lines = ["crosstable:", head]
        for rank, i in enumerate(order, 1):
            pts, n = self.points(i)
            row = f"{rank:>3} {self.names[i]:<{width}} {pts:>8g} {n:>5}"
            for j in order:
                if i == j:
                    row += f" {'-':>7}"
                    continue
                games = [s for s in self.scores.get((i, j), []) if s is not None]
                cell = f"{sum(games) / 2:g}/{len(games)}" if games else "."
                row += f" {cell:>7}"
            lines.append(row)
        lines.append("pairs:")
        seen = set()
        for i, j in sorted(self.scores):
            if (j, i) in seen or i > j:
                continue
            seen.add((i, j))
            lines.append("  " + self.pair(i, j).summary().replace("\n", "\n  "))
        return "\n".join(lines)
