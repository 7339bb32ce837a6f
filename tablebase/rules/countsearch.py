"""Values under the count: can a table win be forced before the running count runs out?

The tables give the theoretical value and distance-to-win (dtw, plies) of a position. Under
the draw rules (:mod:`tablebase.rules.drawrules`) a theoretical win is a win only if the
winner can force it before the count runs out; otherwise it is a draw. Counts can restart (a
man move or capture resets the general count; under the default reading the lone king's
capture turning a 16-move ending into a 5-move ending starts a fresh count), so
"dtw <= plies left" is sufficient but not necessary: the winner may reach a restart first,
for example by sacrificing into a won 5-move ending.

The exact answer is a bounded game search over (position, count), with the table as oracle:

- a table draw is a draw (counts only ever turn wins into draws);
- the shortcut: a table win or loss whose dtw fits the running count is that win or loss.
  It rests on one premise, checked against the database's own longest wins
  (:func:`shortcut_holds`): every win inside an ending takes at most that ending's count
  (International: 16-move wins need at most 31 plies, 5-move wins at most 9), so a fresh
  ending count met on the table's line never binds. Where the premise fails for some
  slices (:func:`failing_slices`; Frisian: two kings against one king has wins of 19 plies
  against its 14), the shortcut is still exact at a position from whose material none of
  those slices can be reached with a fresh count (pieces are never added, men may become
  kings; inside such a slice its own count is already running, unless the ending restarts
  on a capture or promotion), and the search runs without it elsewhere. It also trusts
  that the table's line avoids the positions the game has already seen twice (``banned``,
  a third occurrence draws): so it is used only at positions with fewer pieces than every
  banned one (pieces never come back);
- otherwise the winner needs a line through a restart: the search tries the winner's moves
  that keep the win (restarting ones first) and all of the defender's replies, with the
  counts advanced by :class:`tablebase.rules.drawrules.Counter`.

Whether the winner can force it with ``r`` plies left is monotone in ``r``, so the memo keeps,
per position, the largest ``r`` known to fail and the smallest known to succeed. A banned
position met by the search is a draw. The table values of a node's children are read
together, one batch a node expanded (the prober's ``probe_many`` where it has one:
:meth:`Search.prefetch`), so that a search over positions whose blocks are not cached reads
each block once per level rather than once per position. A node budget (and optionally a deadline)
bounds the work; past it :class:`SearchLimit` (:class:`TimeLimit`) is raised (callers answer
"unknown", never a guess).

:func:`result_under_count` and :func:`move_results_under_count` give the probe's
``result_under_count`` of a position and of each of its moves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from tablebase.rules.drawrules import Count, Counter, DrawRules
from tablebase.rules.moves import Move, MoveList, legal_moves, play
from tablebase.rules.outcome import RESULT_NAMES
from tablebase.rules.position import Position

INFINITY = 1 << 30

Value = tuple[int, int | None]  # (wdl, dtw) of a position for its side to move


class Prober(Protocol):
    """What the search needs of a tablebase (see :mod:`tablebase.probe.database`)."""

    variant: Any

    def probe_wdl(self, pos: Position) -> int: ...

    def probe_dtw(self, pos: Position) -> int | None: ...


class SearchLimit(RuntimeError):
    """The search needed more nodes than its budget."""


class TimeLimit(SearchLimit):
    """The search ran past its deadline."""


class NoDistances(LookupError):
    """The tables give a win or loss without its distance (a WDL-only database): whether the
    win fits the count cannot be decided."""


def position_key(pos: Position) -> tuple[int, int, int, int, bool]:
    """What makes two positions the same for repetition: pieces and side to move."""
    return (pos.white_men, pos.white_kings, pos.black_men, pos.black_kings, pos.white_to_move)


def state_key(pos: Position) -> tuple:
    """What the search remembers a position by: the pieces, the side to move and the
    king-move counter (Frisian; part of the position, as it changes the legal moves)."""
    return (*position_key(pos), pos.king_runs)


def lost(pos: Position) -> bool:
    """True when the side to move has no piece or no legal move (the moves are counted by the
    compiled generator; none is built)."""
    own = pos.white_men | pos.white_kings if pos.white_to_move else pos.black_men | pos.black_kings
    return not own or len(MoveList(pos)) == 0


def probe(tb: Prober, pos: Position) -> tuple[int, int | None]:
    """(wdl, dtw) of ``pos`` for the side to move."""
    both = getattr(tb, "probe", None)
    if callable(both):
        wdl, dtw = both(pos)
        wdl = int(wdl)
    else:
        wdl = tb.probe_wdl(pos)
        dtw = tb.probe_dtw(pos) if wdl else None
    if wdl and dtw is None:
        raise NoDistances(f"the tables hold no distance for {pos.fen()} (a WDL-only database)")
    return wdl, dtw


def shortcut_holds(
    rules: DrawRules, slice_names: Iterable[str], longest_win: Callable[[str], int]
) -> bool:
    """The premise of the shortcut for a database: every slice (named ``wmwkbmbk``, e.g.
    ``0301``) whose material puts an ending count in force has its longest win
    (``longest_win(name)``, plies, read only for those slices) within that count."""
    return not failing_slices(rules, slice_names, longest_win)


def failing_slices(
    rules: DrawRules,
    slice_names: Iterable[str],
    longest_win: Callable[[str], int],
    unreadable: dict[str, Exception] | None = None,
) -> frozenset[str]:
    """The slices (of ``slice_names``) whose material puts an ending count in force and whose
    longest win (``longest_win(name)``, plies) is longer than that count: where the premise
    of the shortcut fails. With ``unreadable`` (a dict), a slice whose ``longest_win``
    raises (a damaged file) is recorded there with its error instead of stopping the rest:
    the premise is unknown there (see :class:`Search`'s ``unreadable``)."""
    out = set()
    for name in slice_names:
        e = rules.ending_of(material_boards(*(int(c) for c in name)))
        if e is None:
            continue
        try:
            longest = longest_win(name)
        except Exception as error:
            if unreadable is None:
                raise
            unreadable[name] = error
            continue
        if longest > e.plies:
            out.add(name)
    return frozenset(out)


def _reachable(src: tuple[int, int, int, int], dst: tuple[int, int, int, int]) -> bool:
    """Can material ``dst`` (white men, kings, black men, kings) arise from ``src``? Pieces
    are only removed, men only become kings."""
    wm, wk, bm, bk = src
    dm, dk, em, ek = dst
    return dm <= wm and dm + dk <= wm + wk and em <= bm and em + ek <= bm + bk


class _Material:
    """Bitboards with the given piece counts, for asking which ending a material is in (the
    squares matter only for endings with ``weak_squares``, which then do not match)."""

    def __init__(self, wm: int, wk: int, bm: int, bk: int) -> None:
        bits = iter(range(64))
        self.white_men, self.white_kings, self.black_men, self.black_kings = (
            sum(1 << next(bits) for _ in range(n)) for n in (wm, wk, bm, bk)
        )


def material_boards(wm: int, wk: int, bm: int, bk: int) -> _Material:
    """Some bitboards with these piece counts (for :meth:`DrawRules.ending_of`)."""
    return _Material(wm, wk, bm, bk)


class Search:
    """Can the side the tables say wins force that win before the count runs out?"""

    def __init__(
        self,
        tb: Prober,
        counter: Counter,
        banned: frozenset = frozenset(),
        nodes: int = 100_000,
        shortcut: bool | frozenset[str] = True,
        deadline: float | None = None,
        unreadable: Mapping[str, Exception] | None = None,
    ) -> None:
        """``shortcut``: True (the premise holds everywhere), False (never use it), or the
        slice names where it fails (:func:`failing_slices`): then it is used only at
        positions that cannot reach them with a fresh count. ``unreadable``: slices whose
        longest win could not be read (a damaged file), with the error: a search that would
        need the premise where one of them can be reached raises that error, so only the
        answers that need the damaged slice fail."""
        self.tb = tb
        self.deadline = deadline  # time.monotonic() past which TimeLimit is raised
        self.counter = counter
        self.banned = banned
        self.budget = nodes
        self.nodes = 0
        self.shortcut = shortcut is not False
        self.failing: list[tuple[tuple[int, int, int, int], bool]] = []
        for name in shortcut if isinstance(shortcut, frozenset) else ():
            material = tuple(int(c) for c in name)
            e = counter.rules.ending_of(material_boards(*material))
            self.failing.append((material, e is not None and e.restart_on_change))  # type: ignore[arg-type]
        self.unknown: list[tuple[tuple[int, int, int, int], bool, Exception]] = []
        for name, error in (unreadable or {}).items():
            material = tuple(int(c) for c in name)
            e = counter.rules.ending_of(material_boards(*material))
            self.unknown.append((material, e is not None and e.restart_on_change, error))  # type: ignore[arg-type]
        self.trusted: dict[tuple[int, int, int, int], bool] = {}
        # pieces below which no banned position can be reached again
        self.fewer_than = min((_pieces(k) for k in banned), default=INFINITY)
        self.bounds: dict[tuple, tuple[int, int]] = {}  # key -> (largest failing r, smallest ok r)
        self.values: dict[tuple, Value] = {}
        self.ended: dict[tuple, bool] = {}  # key -> lost (no piece or no legal move)
        many = getattr(tb, "probe_many", None)
        self._many: Callable[[Sequence[Position]], list[Value | None]] | None = (
            many if callable(many) else None
        )

    def value(self, pos: Position) -> Value:
        key = state_key(pos)
        v = self.values.get(key)
        if v is None:
            v = self.values[key] = probe(self.tb, pos)
        return v

    def is_lost(self, pos: Position) -> bool:
        """:func:`lost`, remembered per position."""
        key = state_key(pos)
        v = self.ended.get(key)
        if v is None:
            v = self.ended[key] = lost(pos)
        return v

    def prefetch(self, positions: Iterable[Position]) -> None:
        """Read the table values of ``positions`` not known yet in one batch, where the
        prober has ``probe_many`` (a list of :func:`probe`'s values, None where a position
        cannot be answered in the batch); :meth:`value` then finds them. A position left
        unanswered, or won without a distance, is left to :meth:`value`, which probes it
        alone and raises its error (a missing slice, a damaged file, :class:`NoDistances`)
        if and when the search needs it."""
        if self._many is None:
            return
        todo: dict[tuple, Position] = {}
        for p in positions:
            key = state_key(p)
            if key not in self.values:
                todo.setdefault(key, p)
        if len(todo) < 2:
            return  # one position: value() reads it as fast
        self.seed(list(todo.values()), self._many(list(todo.values())))

    def seed(self, positions: Sequence[Position], values: Sequence[Value | None]) -> None:
        """Remember ``values[i]`` (:func:`probe`'s value, or None: unknown) as the table value
        of ``positions[i]``; a win or loss without its distance is left out (:meth:`value`
        probes it again and raises :class:`NoDistances`)."""
        for p, v in zip(positions, values, strict=True):
            if v is not None and (v[0] == 0 or v[1] is not None):
                self.values.setdefault(state_key(p), (int(v[0]), v[1]))

    def forced(self, pos: Position, count: Count) -> bool:
        """For a non-terminal ``pos`` the tables do not draw and a live ``count``: True if the
        table's winner (either side) wins under the count rules."""
        key = state_key(pos)
        fail, ok = self.bounds.get(key, (-1, INFINITY))
        r = count.remaining
        if r >= ok:
            return True
        if r <= fail:
            return False
        wdl, dtw = self.value(pos)
        if self.trusts(pos) and dtw is not None and dtw <= r:
            result = True
        else:
            result = self._expand(pos, count, wdl > 0)
        fail, ok = self.bounds.get(key, (-1, INFINITY))
        self.bounds[key] = (fail, min(ok, r)) if result else (max(fail, r), ok)
        return result

    def trusts(self, pos: Position) -> bool:
        """True if the shortcut "dtw fits the count" is exact at ``pos``."""
        if not self.shortcut or _pieces(position_key(pos)) >= self.fewer_than:
            return False
        if not self.failing and not self.unknown:
            return True
        material = pos.piece_count()
        for dst, restarts, error in self.unknown:
            if _reachable(material, dst) and (dst != material or restarts):
                raise error  # the premise is unknown here: the damaged slice's error
        ok = self.trusted.get(material)
        if ok is None:
            ok = self.trusted[material] = not any(
                _reachable(material, dst) and (dst != material or restarts)
                for dst, restarts in self.failing
            )
        return ok

    def _expand(self, pos: Position, count: Count, winner_moves: bool) -> bool:
        self.nodes += 1
        if self.nodes > self.budget:
            raise SearchLimit(f"the search needed more than {self.budget} nodes")
        if self.deadline is not None and self.nodes % 32 == 0 and time.monotonic() > self.deadline:
            raise TimeLimit("the time budget ran out")
        moves = legal_moves(pos)
        afters = [play(pos, m) for m in moves]
        # the children's values in one batch: those _child reads (not over, not banned)
        self.prefetch(
            a for a in afters if not self.is_lost(a) and position_key(a) not in self.banned
        )
        children = [
            self._child(pos, m, a, count, winner_moves) for m, a in zip(moves, afters, strict=True)
        ]
        if winner_moves:
            # Restarting moves first, then the quickest wins.
            children.sort(key=lambda c: (-c[1].remaining, c[3]))
            return any(self._child_ok(c, True) for c in children)
        # The defender's most stubborn replies first: no restart, longest loss.
        children.sort(key=lambda c: (c[1].remaining, -c[3]))
        return all(self._child_ok(c, False) for c in children)

    def _child(
        self, pos: Position, move: Move, after: Position, count: Count, winner_moves: bool
    ) -> tuple[Position, Count, str, int]:
        new = self.counter.after(count, pos, move, after)
        if self.is_lost(after):
            return after, new, "mate", 0
        if position_key(after) in self.banned:
            return after, new, "repeat", INFINITY
        wdl, dtw = self.value(after)
        if wdl != (-1 if winner_moves else 1):
            return after, new, "lost", INFINITY  # a draw, or the win thrown away
        assert dtw is not None  # a win or a loss: probe() raised where it has no distance
        return after, new, "", dtw

    def _child_ok(self, child: tuple[Position, Count, str, int], winner_moves: bool) -> bool:
        after, new, tag, _ = child
        if tag == "mate":
            return winner_moves
        if tag or new.expired:
            return False
        return self.forced(after, new)


def _pieces(key: tuple) -> int:
    return sum(int(b).bit_count() for b in key[:4])


def result_under_count(search: Search, pos: Position, count: Count) -> int:
    """The value (1 win, 0 draw, -1 loss, for the side to move) of ``pos`` under ``count``;
    raises :class:`SearchLimit` past the budget and ``LookupError`` outside the tables."""
    if search.is_lost(pos):
        return -1
    if count.expired:
        return 0
    wdl, _ = search.value(pos)
    if wdl == 0:
        return 0
    return wdl if search.forced(pos, count) else 0


def move_results_under_count(
    search: Search, pos: Position, count: Count, moves: list[Move] | None = None
) -> list[int]:
    """Each move's value under the count, from the mover's side (as
    :func:`result_under_count`): the count advanced by the move, then the reply's value."""
    return [
        move_result(search, pos, count, move, play(pos, move))
        for move in (moves if moves is not None else legal_moves(pos))
    ]


def move_result(search: Search, pos: Position, count: Count, move: Move, after: Position) -> int:
    """The value under the count of ``move`` (which takes ``pos`` to ``after``), from the
    mover's side (see :func:`move_results_under_count`)."""
    if search.is_lost(after):
        return 1  # winning takes precedence over a count expiring on the same ply
    new = search.counter.after(count, pos, move, after)
    return -result_under_count(search, after, new)


def under_count(
    tb: Prober,
    pos: Position,
    counter: Counter,
    elapsed: int = 0,
    moves: list[Move] | None = None,
    *,
    nodes: int = 100_000,
    shortcut: bool | frozenset[str] = True,
    deadline: float | None = None,
    unreadable: Mapping[str, Exception] | None = None,
    afters: Sequence[Position] | None = None,
    values: Sequence[Value | None] | None = None,
) -> tuple[Count, str, list[str]]:
    """The count running in ``pos`` with ``elapsed`` plies on it, and ``result_under_count``
    of the position and of each move (``"win"``, ``"draw"``, ``"loss"`` from the mover's
    side, or ``"unknown"`` past the node budget, past ``deadline`` (a ``time.monotonic()``
    value, shared by all the values) or without distances in the tables), the
    moves in the order given (default:
    :func:`legal_moves`). ``LookupError`` when a needed slice is not in the tables, the
    error of a damaged slice the search needs (``unreadable``: see :class:`Search`).

    ``afters``: the positions after the moves, if the caller has them; ``values``: their
    table values as :func:`probe` gives them (None where unknown), if the caller has read
    them (the values of the positions after the moves are otherwise read in one batch)."""
    count = counter.start(pos, elapsed)
    moves = legal_moves(pos) if moves is None else moves
    afters = [play(pos, m) for m in moves] if afters is None else afters
    search = Search(tb, counter, frozenset(), nodes, shortcut, deadline, unreadable)
    if values is not None:
        search.seed(afters, values)
    search.prefetch([pos, *(a for a in afters if not search.is_lost(a))])
    try:
        whole = RESULT_NAMES[result_under_count(search, pos, count)]
    except (SearchLimit, NoDistances):
        whole = "unknown"
    out = []
    for move, after in zip(moves, afters, strict=True):
        search.nodes = 0  # each value gets the whole budget
        try:
            out.append(RESULT_NAMES[move_result(search, pos, count, move, after)])
        except (SearchLimit, NoDistances):
            out.append("unknown")
    return count, whole, out
