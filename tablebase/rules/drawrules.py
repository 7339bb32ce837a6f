"""Draw rules as data: threefold repetition and the move-count rules of each variant.

A :class:`DrawRules` value is part of a :class:`tablebase.rules.variants.Variant`
(``variant.draw_rules``); nothing here switches on a variant's name, so a new variant gets
exactly the rules its data states. The adjudicator replays games with these rules and the
prober uses them for ``result_under_count`` (a table win that cannot be forced before the
count runs out is a draw).

The schema, in plies throughout:

- ``threefold``: whether the third occurrence of a position (same pieces, same side to move)
  draws.
- ``count``: the general count (:class:`MoveCount`): ``plies`` without a reset draws.
  ``man_move_resets`` / ``capture_resets`` say which moves start it afresh; any other move
  adds one ply. International: 25-move rule, 50 plies of king moves without capture (both
  reset). English: 40-move rule, 80 plies without a man move or a capture. ``plies`` 0
  (:data:`NO_COUNT`) means the rules have no general count (Frisian): it never runs out.
- ``count_is_setting``: the general count's length is a tournament setting (English: 40
  moves each by default; the adjudicator's ``--english-count``), not fixed by the rules.
- ``presets``: alternative general counts chosen by name (English ``"casual"``: 50 moves
  each without a capture, man moves not resetting). ``"standard"`` is always ``count``.
- ``endings``: material-specific counts (:class:`EndingCount`), in priority order. An ending
  is in force when one side's material matches ``weak`` and the other's ``strong`` (either
  colour may be the weak side), the pieces of both sides together fall in ``total``, and,
  when ``weak_squares`` is not 0, every king of the weak side stands on one of those squares
  (a bitboard: bit ``i`` is square ``i + 1``; Russian 7.2.7, the lone king on the long
  diagonal). International: a lone king against three pieces with at least one king, 16 moves
  (32 plies); against one or two pieces with a king, 5 moves (10).
- ``drawn_unless_capture`` on an ending: the position is drawn the moment the ending arises
  unless a capture is forced now or on the next move of either side, i.e. a side wins by
  force within three plies (:func:`capture_forced`; Frisian king against king). Compiled
  callers settle this with :func:`settle_start` when such a count starts; it then keeps its
  ``plies`` (3: the forced capture falls within them) or gets limit 0 (drawn at once). A
  table probe needs no search for it: a table win of at most 3 plies is exactly such a
  forced capture.

How an ending count runs (RULES.md): it starts at the move that creates the ending's
material (that move not counted) and then every ply counts, man moves and promotions
included; with ``restart_on_change`` (Russian 7.2.6) a capture or a promotion that leaves the
same ending's material starts it afresh instead. A capture inside an ending that leaves
ending material again (the lone king taking
a piece: 16-move into 5-move, or 5-move into 5-move) is the disputed point: under
``"restart"`` the new ending's count starts fresh; under ``"cumulative"`` the running count
goes on and the fresh one applies on top, so whichever has fewer plies left binds (the one
kept). A move leaving all endings' material starts the general count fresh.

Compiled code reads the rules as one int64 array, :meth:`DrawRules.table`, laid out as the
``T_*`` constants say; :func:`count_start` and :func:`count_after` are the compiled
transitions, and :class:`Counter` is their face for Python callers. A running count is the
triple (rule, limit, elapsed): rule ``-1`` is the general count, ``i >= 0`` ending ``i``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
from numba import njit

from tablebase.rules.bits import popcount
from tablebase.rules.captures import has_capture
from tablebase.rules.makemove import play_row
from tablebase.rules.movebuffer import (
    new_move_buffer,
    new_move_buffer_nb,
    new_workspace,
    new_workspace_nb,
)
from tablebase.rules.movegen import generate_moves

Disputed = str  # "restart" | "cumulative"
DISPUTED = ("restart", "cumulative")
GENERAL = -1
ANY = 99  # an upper bound no material reaches
NO_LIMIT = 1 << 62  # the limit of a general count the rules do not have (never reached)


@dataclass(frozen=True)
class SideMaterial:
    """Ranges (inclusive) a side's men, kings and pieces must fall in."""

    men: tuple[int, int] = (0, ANY)
    kings: tuple[int, int] = (0, ANY)
    pieces: tuple[int, int] = (0, ANY)

    def matches(self, men: int, kings: int) -> bool:
        return (
            self.men[0] <= men <= self.men[1]
            and self.kings[0] <= kings <= self.kings[1]
            and self.pieces[0] <= men + kings <= self.pieces[1]
        )

    def row(self) -> list[int]:
        return [*self.men, *self.kings, *self.pieces]


LONE_KING = SideMaterial(men=(0, 0), kings=(1, 1))


@dataclass(frozen=True)
class MoveCount:
    """The general count: ``plies`` without a reset draws."""

    name: str
    plies: int
    man_move_resets: bool = True
    capture_resets: bool = True


NO_COUNT = MoveCount("none", 0)  # rules without a general count (Frisian)


@dataclass(frozen=True)
class EndingCount:
    """A count that replaces the general one while the material matches ``weak`` against
    ``strong``."""

    name: str
    plies: int
    weak: SideMaterial
    strong: SideMaterial
    total: tuple[int, int] = (0, ANY)
    restart_on_change: bool = False
    weak_squares: int = 0
    drawn_unless_capture: bool = False

    def row(self) -> list[int]:
        return [
            self.plies,
            *self.weak.row(),
            *self.strong.row(),
            *self.total,
            int(self.restart_on_change),
            self.weak_squares,
            int(self.drawn_unless_capture),
        ]


@dataclass(frozen=True)
class DrawRules:
    """A variant's draw rules (see the module docstring for the meaning of each field)."""

    threefold: bool
    count: MoveCount
    endings: tuple[EndingCount, ...] = ()
    presets: tuple[tuple[str, MoveCount], ...] = field(default=())
    count_is_setting: bool = False

    def preset_names(self) -> tuple[str, ...]:
        return ("standard", *(name for name, _ in self.presets))

    def general(self, preset: str = "standard", moves: int | None = None) -> MoveCount:
        """The general count of ``preset``, with its length set to ``moves`` moves each
        (named ``"<moves>-move"``) when given."""
        count = self.count if preset == "standard" else dict(self.presets).get(preset)
        if count is None:
            known = ", ".join(self.preset_names())
            raise ValueError(f"unknown draw-rule preset {preset!r} (known: {known})")
        if moves is not None:
            count = replace(count, name=f"{moves}-move", plies=2 * moves)
        return count

    def ending_of(self, pos: Boards) -> EndingCount | None:
        """The ending count the pieces of ``pos`` (anything with the four bitboards
        ``white_men, white_kings, black_men, black_kings``) put in force, or None."""
        i = material_ending(
            self.table(),
            np.uint64(pos.white_men),
            np.uint64(pos.white_kings),
            np.uint64(pos.black_men),
            np.uint64(pos.black_kings),
        )
        return None if i < 0 else self.endings[i]

    def table(
        self, preset: str = "standard", moves: int | None = None, disputed: str = "restart"
    ) -> np.ndarray:
        """The int64 array compiled code reads (layout: the ``T_*`` constants)."""
        if disputed not in DISPUTED:
            raise ValueError(f"disputed must be 'restart' or 'cumulative', not {disputed!r}")
        g = self.general(preset, moves)
        head = [
            int(self.threefold),
            g.plies,
            int(g.man_move_resets),
            int(g.capture_resets),
            DISPUTED.index(disputed),
            len(self.endings),
        ]
        for e in self.endings:
            head += e.row()
        return np.array(head, dtype=np.int64)

    def rule_name(self, rule: int, preset: str = "standard", moves: int | None = None) -> str:
        """The name of count ``rule`` (-1 the general count, else an ending's index)."""
        return self.general(preset, moves).name if rule < 0 else self.endings[rule].name


# Layout of DrawRules.table().
T_THREEFOLD, T_PLIES, T_MAN_RESETS, T_CAPTURE_RESETS, T_DISPUTED, T_NENDINGS = range(6)
T_ENDINGS, T_ENDING_FIELDS = 6, 18
# Within an ending's fields: plies, weak side (6), strong side (6), total (2), restart flag,
# weak-king squares, drawn-unless-capture flag.
E_PLIES, E_WEAK, E_STRONG, E_TOTAL, E_RESTART, E_SQUARES, E_UNLESS_CAPTURE = (
    0,
    1,
    7,
    13,
    15,
    16,
    17,
)


INTERNATIONAL_RULES = DrawRules(
    threefold=True,
    count=MoveCount("25-move", 50),
    endings=(
        EndingCount("16-move", 32, LONE_KING, SideMaterial(kings=(1, ANY), pieces=(3, 3))),
        EndingCount("5-move", 10, LONE_KING, SideMaterial(kings=(1, ANY), pieces=(1, 2))),
    ),
)

ENGLISH_RULES = DrawRules(
    threefold=True,
    count=MoveCount("40-move", 80),
    presets=(("casual", MoveCount("50-move", 100, man_move_resets=False)),),
    count_is_setting=True,
)

# Russian draughts, FMJD-64 rules 7.2.3-7.2.8; docs/RULES-VARIANTS.md cites them and states
# each reading chosen. In priority order (the first ending that fits is in force):
# 7.2.7 three pieces (a king among them) against a lone king on the main road, 5 moves;
# 7.2.4 three or more kings (no men) against a lone king, 15 moves;
# 7.2.8 one or two pieces (a king among them) against a lone king, 5 moves;
# 7.2.6 both sides with kings, no capture or promotion: 4-5 pieces on the board (both sides
# together, lidraughts' reading) 30 moves, 6-7 pieces 60 moves;
# 7.2.5 the general count: 15 moves with no man moved and nothing captured; 7.2.3 threefold.
MAIN_ROAD_64 = sum(1 << (s - 1) for s in (29, 25, 22, 18, 15, 11, 8, 4))  # a1-h8 on 8x8
_WITH_KING = SideMaterial(kings=(1, ANY))

RUSSIAN_RULES = DrawRules(
    threefold=True,
    count=MoveCount("15-move", 30),
    endings=(
        EndingCount(
            "5-move-main-road",
            10,
            LONE_KING,
            SideMaterial(kings=(1, ANY), pieces=(3, 3)),
            weak_squares=MAIN_ROAD_64,
        ),
        EndingCount("15-move-kings", 30, LONE_KING, SideMaterial(men=(0, 0), kings=(3, ANY))),
        EndingCount("5-move", 10, LONE_KING, SideMaterial(kings=(1, ANY), pieces=(1, 2))),
        EndingCount("30-move", 60, _WITH_KING, _WITH_KING, total=(4, 5), restart_on_change=True),
        EndingCount("60-move", 120, _WITH_KING, _WITH_KING, total=(6, 7), restart_on_change=True),
    ),
)

# Brazilian draughts has no official draw text; the servers (lidraughts, pydraughts) apply
# the Russian rules to it, and so do we (docs/RULES-VARIANTS.md).
BRAZILIAN_RULES = RUSSIAN_RULES


# Frisian draughts (docs/RULES-VARIANTS.md "Frisian draw rules" cites the official rules and
# states each reading). No threefold rule and no general count. Two kings against one king:
# drawn after seven moves each (14 plies from the move that made the material, that move not
# counted; nothing inside the ending can restart it, as any capture or promotion leaves it).
# King against king: drawn at once unless a capture is forced now or on the next move of
# either side (a win by force within 3 plies).
_TWO_KINGS = SideMaterial(men=(0, 0), kings=(2, 2))

FRISIAN_RULES = DrawRules(
    threefold=False,
    count=NO_COUNT,
    endings=(
        EndingCount("7-move", 14, LONE_KING, _TWO_KINGS),
        EndingCount("king-against-king", 3, LONE_KING, LONE_KING, drawn_unless_capture=True),
    ),
)


# ------------------------------------------------------------------------ compiled core


@njit(cache=True)
def _side_matches(table, at, men, kings):
    pieces = men + kings
    return (
        table[at] <= men <= table[at + 1]
        and table[at + 2] <= kings <= table[at + 3]
        and table[at + 4] <= pieces <= table[at + 5]
    )


@njit(cache=True)
def _ending_fits(table, at, weak_men, weak_kings, strong_men, strong_kings, weak_king_board):
    total = weak_men + weak_kings + strong_men + strong_kings
    if not (table[at + E_TOTAL] <= total <= table[at + E_TOTAL + 1]):
        return False
    if not _side_matches(table, at + E_WEAK, weak_men, weak_kings):
        return False
    if not _side_matches(table, at + E_STRONG, strong_men, strong_kings):
        return False
    squares = np.uint64(table[at + E_SQUARES])
    return squares == 0 or (weak_king_board & ~squares) == 0


@njit(cache=True)
def material_ending(table, wm, wk, bm, bk):
    """Index of the ending count the pieces (bitboards) put in force, or -1."""
    nwm, nwk, nbm, nbk = popcount(wm), popcount(wk), popcount(bm), popcount(bk)
    for i in range(table[T_NENDINGS]):
        at = T_ENDINGS + i * T_ENDING_FIELDS
        if _ending_fits(table, at, nwm, nwk, nbm, nbk, wk):
            return i
        if _ending_fits(table, at, nbm, nbk, nwm, nwk, bk):
            return i
    return -1


@njit(cache=True)
def fresh_count(table, rule):
    """(rule, limit, 0): count ``rule`` starting now."""
    if rule < 0:
        return GENERAL, table[T_PLIES] if table[T_PLIES] > 0 else NO_LIMIT, 0
    return rule, table[T_ENDINGS + rule * T_ENDING_FIELDS], 0


@njit(cache=True)
def count_start(table, wm, wk, bm, bk, elapsed):
    """The count running in a position (bitboards) with ``elapsed`` plies already on it."""
    rule, limit, _ = fresh_count(table, material_ending(table, wm, wk, bm, bk))
    return rule, limit, elapsed


@njit(cache=True)
def count_after(table, count, endings, move):
    """The count ``(rule, limit, elapsed)`` after one ply that took ``count`` on.
    ``endings`` = ``(old_ending, new_ending)``: :func:`material_ending` before and after;
    ``move`` = ``(man_moved, captured, crowned)``: what the move did."""
    rule, limit, elapsed = count
    old_ending, new_ending = endings
    man_moved, captured, crowned = move
    if new_ending < 0:
        if rule >= 0:  # the move left the ending's material
            return fresh_count(table, GENERAL)
        if (captured and table[T_CAPTURE_RESETS]) or (man_moved and table[T_MAN_RESETS]):
            return fresh_count(table, GENERAL)
        return rule, limit, elapsed + 1
    if old_ending < 0 or rule < 0:  # the move created the ending's material
        return fresh_count(table, new_ending)
    restarts = table[T_ENDINGS + new_ending * T_ENDING_FIELDS + E_RESTART] != 0
    if new_ending == old_ending and (captured or crowned) and restarts:
        return fresh_count(table, new_ending)
    if new_ending == old_ending and not captured:
        return rule, limit, elapsed + 1  # man moves and promotions inside the ending
    # A capture inside an ending that leaves ending material again: the disputed point.
    f_rule, f_limit, f_elapsed = fresh_count(table, new_ending)
    if table[T_DISPUTED] == 0 or limit - (elapsed + 1) > f_limit:
        return f_rule, f_limit, f_elapsed
    return rule, limit, elapsed + 1


@njit(cache=True)
def _replies_all_lose(rules, white, own_m, own_k, opp_m, opp_k):
    """True when the side to move (``white``) has no move, or every move it has leaves the
    opponent a capture."""
    buf = new_move_buffer_nb()
    ws = new_workspace_nb()
    n = generate_moves(rules, white, own_m, own_k, opp_m, opp_k, buf, ws)
    for i in range(n):
        a, b, c, d = play_row(own_m, own_k, opp_m, opp_k, buf, i)
        if not has_capture(rules, not white, a, b, c, d):
            return False
    return True


@njit(cache=True)
def capture_forced(rules, white, wm, wk, bm, bk, buf, ws):
    """True when a capture is forced now or on the next move of either side in the position
    (bitboards, ``white`` to move), that is when a side wins by force within three plies:
    the side to move can capture now (ply 1); or every move it has leaves the opponent a
    capture (ply 2; no move at all: it has lost); or it has a move after which the opponent
    has no capture and every reply leaves it a capture (ply 3)."""
    own_m, own_k, opp_m, opp_k = (wm, wk, bm, bk) if white else (bm, bk, wm, wk)
    if has_capture(rules, white, own_m, own_k, opp_m, opp_k):
        return True
    n = generate_moves(rules, white, own_m, own_k, opp_m, opp_k, buf, ws)
    all_lose = True
    for i in range(n):
        a, b, c, d = play_row(own_m, own_k, opp_m, opp_k, buf, i)
        if has_capture(rules, not white, a, b, c, d):
            continue
        all_lose = False
        if _replies_all_lose(rules, not white, a, b, c, d):
            return True
    return all_lose


@njit(cache=True)
def settle_start(rules, table, count, board, white, buffers):
    """The count ``count`` = ``(rule, limit, elapsed)`` as it stands in the position
    ``board`` (white men, white kings, black men, black kings; ``white`` to move) where it
    may have just started: a ``drawn_unless_capture`` ending with no ply on it gets limit 0
    (drawn at once) unless :func:`capture_forced`; any other count is returned unchanged.
    ``buffers``: a move buffer and a workspace it may overwrite."""
    rule, limit, elapsed = count
    wm, wk, bm, bk = board
    buf, ws = buffers
    if rule < 0 or elapsed != 0 or limit == 0:
        return rule, limit, elapsed
    if table[T_ENDINGS + rule * T_ENDING_FIELDS + E_UNLESS_CAPTURE] == 0:
        return rule, limit, elapsed
    if capture_forced(rules, white, wm, wk, bm, bk, buf, ws):
        return rule, limit, elapsed
    return rule, 0, 0


# ------------------------------------------------------------------------ Python face


@dataclass(frozen=True, slots=True)
class Count:
    """A running move count: the rule's name, its length and the plies counted so far;
    ``index`` is -1 for the general count, else the ending's index in the rules."""

    rule: str
    limit: int
    elapsed: int = 0
    index: int = GENERAL

    @property
    def remaining(self) -> int:
        """Plies left before the rule fires (0: it has fired)."""
        return self.limit - self.elapsed

    @property
    def expired(self) -> bool:
        return self.elapsed >= self.limit

    @property
    def finite_limit(self) -> int | None:
        """``limit``, or None for the general count of rules that have none (JSON)."""
        return None if self.limit >= NO_LIMIT else self.limit

    def tick(self) -> Count:
        """The count one ply later."""
        return replace(self, elapsed=self.elapsed + 1)

    def describe(self) -> str:
        """``"12 of 32 plies elapsed on the 16-move count"`` (``"no count runs"`` under rules
        without a general count)."""
        if self.limit >= NO_LIMIT:
            return "no count runs"
        return f"{self.elapsed} of {self.limit} plies elapsed on the {self.rule} count"


class Boards(Protocol):
    """What the draw rules read of a position: its four bitboards (a
    :class:`tablebase.rules.position.Position`, which this module cannot import: the
    variants it holds import this module)."""

    @property
    def white_men(self) -> int: ...
    @property
    def white_kings(self) -> int: ...
    @property
    def black_men(self) -> int: ...
    @property
    def black_kings(self) -> int: ...


class Placed(Boards, Protocol):
    """:class:`Boards` with the side to move and the variant (its compiled ``rules``)."""

    @property
    def white_to_move(self) -> bool: ...
    @property
    def variant(self) -> Any: ...


class Played(Protocol):
    """What the draw rules read of a move (a :class:`tablebase.rules.moves.Move`)."""

    @property
    def frm(self) -> int: ...
    @property
    def to(self) -> int: ...
    @property
    def is_capture(self) -> bool: ...


def _u64(x: int) -> np.uint64:
    return np.uint64(x)


class Counter:
    """The count transitions of one variant's draw rules under a preset and a reading of the
    disputed point, for Python callers (positions are anything with the four bitboards
    ``white_men, white_kings, black_men, black_kings`` and ``white_to_move``)."""

    def __init__(
        self,
        rules: DrawRules,
        preset: str = "standard",
        moves: int | None = None,
        disputed: str = "restart",
    ) -> None:
        self.rules = rules
        self.preset = preset
        self.moves = moves
        self.disputed = disputed
        self.table = rules.table(preset, moves, disputed)

    def make(self, index: int, limit: int, elapsed: int) -> Count:
        return Count(self.rules.rule_name(index, self.preset, self.moves), limit, elapsed, index)

    def fresh(self, index: int) -> Count:
        """Count ``index`` (-1 general, else an ending) starting now."""
        return self.make(*fresh_count(self.table, index))

    def ending(self, pos: Boards) -> int:
        """:func:`material_ending` of ``pos``."""
        return int(
            material_ending(
                self.table,
                _u64(pos.white_men),
                _u64(pos.white_kings),
                _u64(pos.black_men),
                _u64(pos.black_kings),
            )
        )

    def start(self, pos: Placed, elapsed: int = 0) -> Count:
        """The count running in ``pos``, ``elapsed`` plies in (settled there when it starts
        with no ply on it, see :meth:`settle`)."""
        index = self.ending(pos)
        count = self.fresh(index)
        if elapsed:
            count = replace(count, elapsed=elapsed)
        return count if index < 0 else self.settle(count, pos)

    def settle(self, count: Count, pos: Placed) -> Count:
        """``count`` as :func:`settle_start` leaves it in ``pos`` (a :class:`Position`: its
        variant gives the move generator): a ``drawn_unless_capture`` ending that has just
        started gets limit 0 unless a capture is forced now or next move."""
        if count.index < 0 or count.elapsed != 0:
            return count
        v = pos.variant
        rule, limit, elapsed = settle_start(
            v.rules,
            self.table,
            (count.index, count.limit, count.elapsed),
            (
                _u64(pos.white_men),
                _u64(pos.white_kings),
                _u64(pos.black_men),
                _u64(pos.black_kings),
            ),
            bool(pos.white_to_move),
            (new_move_buffer(), new_workspace()),
        )
        return self.make(int(rule), int(limit), int(elapsed))

    def after(self, count: Count, before: Placed, move: Played, after: Placed) -> Count:
        """The count after ``move`` (with ``frm`` and ``is_capture``) took ``before`` to
        ``after`` (settled in ``after``)."""
        men = before.white_men if before.white_to_move else before.black_men
        man_moved = bool(men >> (move.frm - 1) & 1)
        kings_after = after.black_kings if after.white_to_move else after.white_kings
        crowned = man_moved and bool(kings_after >> (move.to - 1) & 1)
        rule, limit, elapsed = count_after(
            self.table,
            (count.index, count.limit, count.elapsed),
            (self.ending(before), self.ending(after)),
            (man_moved, bool(move.is_capture), crowned),
        )
        return self.settle(self.make(int(rule), int(limit), int(elapsed)), after)
