"""The tables as a Hub engine (``tablebase hub``): Scan's Hub protocol, version 2, on stdin
and stdout.

The exchange: ``hub`` -> ``id``, ``param``, ``wait``; ``init`` -> ``ready``; ``pos`` (``start``
or ``pos=`` W/B and 50 squares ``e w b W B``, and ``moves="..."`` played from it) sets the
position; ``level``, ``new-game``, ``stop``, ``ponder-hit`` and ``set-param`` are accepted
(the tables answer at once; a ``variant`` other than the tables' own gets an ``error``);
``ping`` -> ``pong``; ``go`` -> ``info`` and ``done move=...``;
``quit`` ends.

``go`` plays the tables' best move: a win by the shortest line, a loss by the longest, a
draw when there is no win. When ``pos`` gives the moves that led to the position, the move is
chosen under the draw rules (count-aware): the running count and the positions already seen
twice (a third occurrence draws) come from those moves, and a table win that the count
would stop is a draw (:mod:`tablebase.rules.countsearch`). Without moves, the position is
taken as the start of its count. ``info score=`` follows Scan's convention: a win in ``n``
plies is ``(10000 - n) / 100``, a loss in ``n`` plies its negative, a draw 0. A position
outside the tables gets ``error message="..."`` naming the missing slice and a ``done``
without a move; so does a position with no legal move (the game is over).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tablebase.identity import __version__
from tablebase.rules.countsearch import (
    NoDistances,
    Search,
    SearchLimit,
    failing_slices,
    lost,
    position_key,
    result_under_count,
)
from tablebase.rules.drawrules import Count, Counter
from tablebase.rules.moves import Move, legal_moves, play
from tablebase.rules.notation import MoveError, parse_move
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant
from tablebase.storage.reader import read_attrs
from tablebase.storage.slicefile import TableFileError

if TYPE_CHECKING:
    from tablebase.probe.database import Tablebase

ENGINE_NAME = "draughts-tablebase"
HUB_VARIANTS = {"international": "normal", "frisian": "frisian"}  # Hub's names


def position_text(pos: Position) -> str:
    """``W``/``B`` and the squares (``e`` empty, ``w b`` men, ``W B`` kings)."""
    return ("W" if pos.white_to_move else "B") + pos.square_chars("wWbBe")


def parse_position(text: str, variant: Variant) -> Position:
    """The inverse of :func:`position_text`; ``ValueError`` naming what is wrong."""
    n = variant.squares
    if len(text) != n + 1 or text[0] not in "WB":
        raise ValueError(f"a position is W or B and {n} squares, not {text[:80]!r}")
    boards = {"w": 0, "W": 0, "b": 0, "B": 0}
    for i, c in enumerate(text[1:]):
        if c in boards:
            boards[c] |= 1 << i
        elif c != "e":
            raise ValueError(f"square {i + 1}: {c!r} is not e, w, b, W or B")
    return Position(boards["w"], boards["W"], boards["b"], boards["B"], text[0] == "W", variant)


def move_text(move: Move) -> str:
    """A move as Hub writes it: ``32-28``, or from x to x each captured square."""
    if not move.is_capture:
        return f"{move.frm}-{move.to}"
    return "x".join(str(s) for s in (move.frm, move.to, *sorted(move.captures)))


def score_text(value: int, plies: int | None) -> str:
    """Scan's score: a win in ``n`` plies ``(10000 - n) / 100``, a loss its negative."""
    if value == 0 or plies is None:
        return "0.00"
    return f"{(1 if value > 0 else -1) * (10000 - plies) / 100:.2f}"


@dataclass(frozen=True)
class Choice:
    move: Move
    value: int  # 1 win, 0 draw, -1 loss for the mover, under the count when one is known
    plies: int | None  # plies to the end along the tables' line, None for a draw
    exact: bool  # False: the count-aware search ran out of budget; the table value is given


class TablesEngine:
    """The protocol state: the tables, the position and the moves that led to it."""

    def __init__(
        self,
        tb: Tablebase,
        write: Callable[[str], None],
        nodes: int = 100_000,
        name: str = ENGINE_NAME,
    ) -> None:
        self.tb = tb
        self.variant: Variant = tb.variant
        self.write = write
        self.nodes = nodes
        self.name = name
        self.start = Position.start(self.variant)
        self.moves: list[Move] = []
        rules = self.variant.draw_rules
        assert rules is not None  # every variant has them (Variant.__post_init__)
        self.counter = Counter(rules)
        self._failing: frozenset[str] | None = None
        # slices whose longest win cannot be read (damaged files): only a search that
        # needs them fails (tablebase.rules.countsearch.Search)
        self._unreadable: dict[str, Exception] = {}

    # ---- protocol

    def handle(self, line: str) -> bool:
        """Answer one line; False after ``quit``."""
        try:
            tokens = shlex.split(line)
        except ValueError as error:
            self._error(f"cannot read the line: {error}")
            return True
        if not tokens:
            return True
        command, args = tokens[0], dict(_pair(t) for t in tokens[1:])
        if command == "hub":
            self.write(f'id name={ENGINE_NAME} version={_version()} author="draughts-tablebase"')
            hub_name = HUB_VARIANTS.get(self.variant.name, self.variant.name)
            self.write(f"param name=variant value={hub_name} type=enum values={hub_name}")
            self.write("wait")
        elif command == "init":
            self.write("ready")
        elif command == "ping":
            self.write("pong")
        elif command == "pos":
            self._pos(args)
        elif command == "go":
            self._go()
        elif command == "quit":
            return False
        elif command == "set-param":
            self._set_param(args)
        elif command not in ("level", "new-game", "stop", "ponder-hit"):
            self._error(f"unknown command {command}")
        return True

    def _set_param(self, args: dict[str, str]) -> None:
        """``variant`` must be the tables' own (the engine plays only that game)."""
        hub_name = HUB_VARIANTS.get(self.variant.name, self.variant.name)
        if args.get("name") == "variant" and args.get("value") != hub_name:
            self._error(f"these tables are {hub_name}, not {args.get('value')}")

    def _error(self, message: str) -> None:
        self.write(f'error message="{message.replace(chr(34), chr(39))}"')

    def _pos(self, args: dict[str, str]) -> None:
        try:
            start = (
                parse_position(args["pos"], self.variant)
                if "pos" in args
                else Position.start(self.variant)
            )
        except ValueError as error:
            self._error(f"bad position: {error}")
            return
        pos, moves = start, []
        for text in args.get("moves", "").split():
            try:
                move = parse_move(pos, text)
            except MoveError as error:
                self._error(f"illegal move {text} in {pos.fen()}: {error.reason}")
                return
            moves.append(move)
            pos = play(pos, move)
        self.start, self.moves = start, moves

    def _go(self) -> None:
        pos = self.position()
        if not legal_moves(pos):
            self._error(f"no legal move in {pos.fen()}: the game is over")
            self.write("done")
            return
        try:
            choices = self.choices()
        except LookupError as error:
            self._error(f"position outside the tables: {pos.fen()}: {_what(error)}")
            self.write("done")
            return
        except TableFileError as error:  # a damaged slice file: this answer only
            self._error(f"a table file is damaged: {error}")
            self.write("done")
            return
        best = choices[0]
        note = "" if best.exact else " (table value: the count search ran out of budget)"
        self.write(
            f"info depth=0 score={score_text(best.value, best.plies)} "
            f"pv={move_text(best.move)}{' nodes=0' if note else ''}"
        )
        if note:
            self._error(note.strip(" ()"))
        self.write(f"done move={move_text(best.move)}")

    # ---- the choice

    def position(self) -> Position:
        pos = self.start
        for m in self.moves:
            pos = play(pos, m)
        return pos

    def count_state(self) -> tuple[Count, frozenset]:
        """The running count and the positions seen twice, from the moves given."""
        counter, pos = self.counter, self.start
        count = counter.start(pos)
        seen = {position_key(pos): 1}
        for move in self.moves:
            after = play(pos, move)
            count = counter.after(count, pos, move, after)
            men = pos.white_men if pos.white_to_move else pos.black_men
            if move.is_capture or men >> (move.frm - 1) & 1:
                seen.clear()
            key = position_key(after)
            seen[key] = seen.get(key, 0) + 1
            pos = after
        twice = frozenset(k for k, n in seen.items() if n >= 2)
        return count, twice if self.counter.rules.threefold else frozenset()

    def choices(self) -> list[Choice]:
        """Every legal move with its value, best first; ``LookupError`` outside the tables."""
        pos = self.position()
        count, twice = self.count_state()
        failing = self.failing()
        search = Search(
            self.tb, self.counter, twice, self.nodes, failing, unreadable=self._unreadable
        )
        out = []
        for move in legal_moves(pos):
            after = play(pos, move)
            if lost(after):
                out.append(Choice(move, 1, 1, True))
                continue
            wdl, dtw = self.tb.probe(after)
            plies = None if dtw is None else dtw + 1
            if position_key(after) in twice:  # a third occurrence: drawn at once
                out.append(Choice(move, 0, None, True))
                continue
            new = self.counter.after(count, pos, move, after)
            search.nodes = 0
            try:
                value = -result_under_count(search, after, new)
                exact = True
            except (SearchLimit, NoDistances):
                value, exact = -wdl, False
            out.append(Choice(move, value, plies if value else None, exact))
        out.sort(key=_rank)
        return out

    def failing(self) -> frozenset[str]:
        if self._failing is None:
            path = self.tb.path

            def longest(name: str) -> int:
                return int(read_attrs(os.path.join(path, f"{name}.h5")).get("longest_win", -1))

            names = [s.name for s in self.tb.slices()]
            self._failing = failing_slices(self.counter.rules, names, longest, self._unreadable)
        return self._failing


def _rank(c: Choice) -> tuple[int, int]:
    if c.value > 0:
        return (0, c.plies or 0)
    if c.value == 0:
        return (1, 0)
    return (2, -(c.plies or 0))


def _pair(token: str) -> tuple[str, str]:
    name, _, value = token.partition("=")
    return name, value


def _what(error: LookupError) -> str:
    name = getattr(error, "slice", None)
    return f"slice {name} is not in the database" if name else str(error).strip("'\"")


def _version() -> str:
    return str(__version__)


def serve(
    tb: Tablebase, lines: Iterable[str], write: Callable[[str], None], nodes: int = 100_000
) -> None:
    """Answer ``lines`` (stdin) until ``quit`` or their end."""
    engine = TablesEngine(tb, write, nodes)
    for line in lines:
        if not engine.handle(line):
            return
