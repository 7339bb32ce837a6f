"""Ruling an unfinished game's final position with the tables *and* the running count.

The tables give the theoretical value and distance-to-win (dtw, plies) of a position. Under
the draw rules a theoretical win is a win only if the winner can force it before the count
runs out. Counts can restart (a man move or capture resets the 25-move and English counts;
under the default reading the lone king's capture turning a 16-move ending into a 5-move
ending starts a fresh count), so "dtw <= plies left" is sufficient but not necessary: the
winner may reach a restart first, for example by sacrificing into a won 5-move ending.

The exact answer is a bounded game search over (position, count), with the table as oracle:

- a table draw is a draw (counts only ever turn wins into draws);
- a table win or loss whose dtw fits the count is that win or loss. This is exact for the
  English counts (a restart gives back the full count, never less), and for International
  because every win inside a 16-move ending takes at most 31 plies and inside a 5-move ending
  at most 9 (the published longest wins, ``shared/reference/longest_wins.json``), so a fresh
  16- or 5-move count met on the way never binds;
- otherwise the winner needs a line through a restart: the search tries the winner's moves
  that keep the win (restarting ones first) and all of the defender's replies, with the counts
  advanced by :class:`adjudicator.drawrules.Counter`.

Whether the winner can force it with ``r`` plies left is monotone in ``r``, so the memo keeps,
per position, the largest ``r`` known to fail and the smallest known to succeed. A position
the game has already seen twice is a draw when the search meets it again (threefold); where a
win fits the count the table's line is trusted without checking that it avoids such a
position (a shortest forced win never repeats a position of its own, but could pass one the
game repeated before). A node budget bounds the work; past it the ruling is "unknown" rather
than a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from adjudicator.drawrules import Count, Counter, position_key
from adjudicator.replay import terminal
from tablebase.rules import Move, legal_moves, play
from tablebase.rules.position import Position

INFINITY = 1 << 30


class Prober(Protocol):
    """What the search needs of a tablebase (see :mod:`tablebase.probe`)."""

    variant: Any

    def probe_wdl(self, pos: Position) -> int: ...

    def probe_dtw(self, pos: Position) -> int | None: ...


class SearchLimit(RuntimeError):
    """The search needed more nodes than its budget."""


@dataclass(frozen=True)
class Verdict:
    """A table ruling: ``white_score`` 2/1/0, or None with ``reason`` saying why not."""

    white_score: int | None
    reason: str  # "tablebase" | "outside-tables" | "search-limit"
    detail: str


def probe(tb: Prober, pos: Position) -> tuple[int, int | None]:
    """(wdl, dtw) of ``pos`` for the side to move."""
    both = getattr(tb, "probe", None)
    if callable(both):
        wdl, dtw = both(pos)
        return int(wdl), dtw
    wdl = tb.probe_wdl(pos)
    return wdl, (tb.probe_dtw(pos) if wdl else None)


class Search:
    """Can the side the tables say wins force that win before the count runs out?"""

    def __init__(
        self, tb: Prober, counter: Counter, banned: frozenset = frozenset(), nodes: int = 100_000
    ) -> None:
        self.tb = tb
        self.counter = counter
        self.banned = banned
        self.budget = nodes
        self.nodes = 0
        self.bounds: dict[tuple, tuple[int, int]] = {}  # key -> (largest failing r, smallest ok r)
        self.values: dict[tuple, tuple[int, int | None]] = {}

    def value(self, pos: Position) -> tuple[int, int | None]:
        key = position_key(pos)
        v = self.values.get(key)
        if v is None:
            v = self.values[key] = probe(self.tb, pos)
        return v

    def forced(self, pos: Position, count: Count) -> bool:
        """For a non-terminal ``pos`` the tables do not draw and a live ``count``: True if the
        table's winner (either side) wins under the count rules."""
        key = position_key(pos)
        fail, ok = self.bounds.get(key, (-1, INFINITY))
        r = count.remaining
        if r >= ok:
            return True
        if r <= fail:
            return False
        wdl, dtw = self.value(pos)
        if dtw is not None and dtw <= r:
            result = True
        else:
            result = self._expand(pos, count, wdl > 0)
        fail, ok = self.bounds.get(key, (-1, INFINITY))
        self.bounds[key] = (fail, min(ok, r)) if result else (max(fail, r), ok)
        return result

    def _expand(self, pos: Position, count: Count, winner_moves: bool) -> bool:
        self.nodes += 1
        if self.nodes > self.budget:
            raise SearchLimit(f"the search needed more than {self.budget} nodes")
        children = [self._child(pos, m, count, winner_moves) for m in legal_moves(pos)]
        if winner_moves:
            # Restarting moves first, then the quickest wins.
            children.sort(key=lambda c: (-c[1].remaining, c[3]))
            return any(self._child_ok(c, True) for c in children)
        # The defender's most stubborn replies first: no restart, longest loss.
        children.sort(key=lambda c: (c[1].remaining, -c[3]))
        return all(self._child_ok(c, False) for c in children)

    def _child(self, pos: Position, move: Move, count: Count, winner_moves: bool):
        after = play(pos, move)
        new = self.counter.after(count, pos, move, after)
        if terminal(after) is not None:
            return after, new, "mate", 0
        if position_key(after) in self.banned:
            return after, new, "repeat", INFINITY
        wdl, dtw = self.value(after)
        if wdl != (-1 if winner_moves else 1):
            return after, new, "lost", INFINITY  # a draw, or the win thrown away
        return after, new, "", dtw

    def _child_ok(self, child, winner_moves: bool) -> bool:
        after, new, tag, _ = child
        if tag == "mate":
            return winner_moves
        if tag or new.expired:
            return False
        return self.forced(after, new)


def rule_position(
    tb: Prober,
    pos: Position,
    count: Count,
    counter: Counter,
    banned: frozenset = frozenset(),
    nodes: int = 100_000,
) -> Verdict:
    """The ruling for a game that stopped (no terminal event) in ``pos`` with ``count``."""
    tb_variant = getattr(tb, "variant", None)
    if tb_variant is not None and getattr(tb_variant, "name", tb_variant) != pos.variant.name:
        name = getattr(tb_variant, "name", tb_variant)
        return Verdict(
            None, "outside-tables", f"the database is {name}, the game is {pos.variant.name}"
        )
    search = Search(tb, counter, banned, nodes)
    try:
        wdl, dtw = search.value(pos)
        if wdl == 0:
            return Verdict(1, "tablebase", f"the tables say draw (final position {pos.fen()})")
        ok = search.forced(pos, count)
    except LookupError as error:
        return Verdict(None, "outside-tables", _missing(error))
    except SearchLimit as error:
        return Verdict(
            None,
            "search-limit",
            f"{error} to decide whether the theoretical win "
            f"in {plies(dtw)} can be forced within {count.describe()}",
        )
    mover = "white" if pos.white_to_move else "black"
    winner = mover if wdl > 0 else _other(mover)
    what = f"{winner}'s theoretical win in {plies(dtw)}"
    verb = "remains" if count.remaining == 1 else "remain"
    left = f"{plies(count.remaining)} {verb} on the {count.rule} count"
    if not ok:
        return Verdict(1, "tablebase", f"{what} but only {left}: draw")
    score = 2 if winner == "white" else 0
    if dtw is not None and dtw <= count.remaining:
        return Verdict(score, "tablebase", f"{what}; {left}: {winner} wins")
    return Verdict(
        score,
        "tablebase",
        f"{what} but only {left}; {winner} forces the win in "
        f"time through a line that restarts the count: {winner} wins",
    )


def plies(n: int | None) -> str:
    """``"1 ply"``, ``"7 plies"``."""
    return f"{n} ply" if n == 1 else f"{n} plies"


def _other(colour: str) -> str:
    return "black" if colour == "white" else "white"


def _missing(error: LookupError) -> str:
    name = getattr(error, "slice", None)
    text = str(error).strip("'\"")
    if name and str(name) not in text:
        return f"slice {name} is not in the database ({text})"
    return text
