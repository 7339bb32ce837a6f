"""Draw rules as a state machine: threefold repetition and the move-count rules.

Two layers:

- :class:`Counter` is pure: it knows which move-count rule is in force for a variant and a
  :class:`RuleOptions`, and maps a :class:`Count` (the running count) and a move to the next
  count. The tablebase search uses it on hypothetical lines.
- :class:`DrawState` follows one game: the running count plus the repetition history, and
  says after each ply which draw rule (if any) has just fired.

Counts are kept in plies. International (RULES.md, FMJD): the 25-move rule (50 plies of king
moves without capture; a man move or capture restarts it), and in the endings of a lone king
against three pieces with a king (16-move rule, 32 plies) or against one or two pieces with a
king (5-move rule, 10 plies) the ending's count replaces it. An ending count starts at the move
that creates the material (that move not counted); man moves and promotions inside do not
reset it. The disputed point, a capture turning one ending into another (the lone king taking
a piece of a 16-move ending): ``"restart"`` starts a fresh count; ``"cumulative"`` keeps the
running count and lets the new one apply on top, so whichever runs out first rules (we keep
just that one: it is the only one that can bind). A capture inside a 5-move ending that leaves
another 5-move material (the lone king taking one of two kings) is read the same way: new
material, so a fresh count under "restart", the running one under "cumulative". A move that
creates an ending's material from none (a capture, or any promotion, including the lone
side's last man becoming its king) starts the count. English: the 40-move rule (plies without a
man move or capture; the count, in moves each, is a setting) or the ``"casual"`` preset (50
moves each without a capture, man moves not resetting).

Winning takes precedence over every count: the caller checks "side to move has no legal move"
before asking :meth:`DrawState.push`'s answer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from tablebase.rules import Move
from tablebase.rules.position import Position

Disputed = Literal["restart", "cumulative"]
Preset = Literal["standard", "casual"]

THREEFOLD = "threefold"
RULE_25, RULE_16, RULE_5 = "25-move", "16-move", "5-move"
INTERNATIONAL_LIMITS = {RULE_25: 50, RULE_16: 32, RULE_5: 10}
ENGLISH_DEFAULT_MOVES = {"standard": 40, "casual": 50}


@dataclass(frozen=True)
class RuleOptions:
    """How the draw rules are read.

    ``disputed``: ``"restart"`` (default) or ``"cumulative"``, see the module docstring.
    ``english_preset``: ``"standard"`` (no man move and no capture) or ``"casual"`` (no
    capture). ``english_count``: the English count in *moves each* (plies = 2 x moves);
    None takes the preset's default, 40 for standard and 50 for casual; the draw reason is
    named after it (``"40-move"``). ``elapsed``: plies already elapsed, at the game's start
    position, on the count that is running there (the 16/5-move count in such an ending,
    otherwise the 25-move or English count). ``search_nodes``: node budget of the tablebase
    search that decides whether a theoretical win can be forced before a count runs out
    (a few thousand nodes a second; real endings have needed hundreds); past it the ruling
    is ``"unknown"`` with reason ``"search-limit"``.
    """

    disputed: Disputed = "restart"
    english_preset: Preset = "standard"
    english_count: int | None = None
    elapsed: int = 0
    search_nodes: int = 100_000

    def __post_init__(self) -> None:
        if self.disputed not in ("restart", "cumulative"):
            raise ValueError(f"disputed must be 'restart' or 'cumulative', not {self.disputed!r}")
        if self.english_preset not in ENGLISH_DEFAULT_MOVES:
            raise ValueError(
                f"english_preset must be 'standard' or 'casual', not {self.english_preset!r}"
            )
        if self.english_count is not None and self.english_count < 1:
            raise ValueError(f"english_count must be at least 1, not {self.english_count}")
        if self.elapsed < 0:
            raise ValueError(f"elapsed must not be negative, not {self.elapsed}")

    @property
    def english_moves(self) -> int:
        """The English count in moves each."""
        return self.english_count or ENGLISH_DEFAULT_MOVES[self.english_preset]


@dataclass(frozen=True, slots=True)
class Count:
    """A running move count: the rule's name, its length and the plies counted so far."""

    rule: str
    limit: int
    elapsed: int = 0

    @property
    def remaining(self) -> int:
        """Plies left before the rule fires (0: it has fired)."""
        return self.limit - self.elapsed

    @property
    def expired(self) -> bool:
        return self.elapsed >= self.limit

    def tick(self) -> Count:
        """The count one ply later."""
        return replace(self, elapsed=self.elapsed + 1)

    def describe(self) -> str:
        """``"12 of 32 plies on the 16-move count"``."""
        return f"{self.elapsed} of {self.limit} plies elapsed on the {self.rule} count"


def ending(pos: Position) -> str | None:
    """The International ending rule the material puts in force: ``"16-move"`` for a lone
    king against three pieces including a king, ``"5-move"`` against one or two pieces
    including a king, otherwise None."""
    wm, wk, bm, bk = pos.piece_count()
    for lone_m, lone_k, m, k in ((wm, wk, bm, bk), (bm, bk, wm, wk)):
        if lone_m == 0 and lone_k == 1 and k >= 1:
            if m + k == 3:
                return RULE_16
            if m + k <= 2:
                return RULE_5
    return None


def moved_man(pos: Position, move: Move) -> bool:
    """True if ``move`` (legal in ``pos``) moves a man."""
    men = pos.white_men if pos.white_to_move else pos.black_men
    return bool(men >> (move.frm - 1) & 1)


class Counter:
    """The move-count rule of a variant under some options, as pure transitions."""

    def __init__(self, variant_name: str, options: RuleOptions) -> None:
        self.options = options
        self.international = variant_name == "international"
        n = options.english_moves
        self.english = Count(f"{n}-move", 2 * n)
        self.english_casual = options.english_preset == "casual"

    def fresh(self, rule: str) -> Count:
        """A count of ``rule`` starting now."""
        if not self.international:
            return self.english
        return Count(rule, INTERNATIONAL_LIMITS[rule])

    def start(self, pos: Position, elapsed: int = 0) -> Count:
        """The count running at a game's start position, ``elapsed`` plies in."""
        rule = (ending(pos) or RULE_25) if self.international else self.english.rule
        return replace(self.fresh(rule), elapsed=elapsed)

    def after(self, count: Count, before: Position, move: Move, after: Position) -> Count:
        """The count after ``move`` took ``before`` to ``after``."""
        if not self.international:
            resets = move.is_capture or (not self.english_casual and moved_man(before, move))
            return self.english if resets else count.tick()
        new = ending(after)
        if new is None:
            if move.is_capture or moved_man(before, move) or count.rule != RULE_25:
                return self.fresh(RULE_25)
            return count.tick()
        old = ending(before)
        if old is None:
            return self.fresh(new)  # the move created the ending's material
        if new == old and not move.is_capture:
            return count.tick()  # man moves and promotions inside the ending
        # A capture inside an ending made new material of an ending (16 -> 5, or 5 -> 5).
        if self.options.disputed == "restart":
            return self.fresh(new)
        running, fresh = count.tick(), self.fresh(new)
        return running if running.remaining <= fresh.remaining else fresh


def position_key(pos: Position) -> tuple[int, int, int, int, bool]:
    """What makes two positions the same for repetition: pieces and side to move."""
    return (pos.white_men, pos.white_kings, pos.black_men, pos.black_kings, pos.white_to_move)


class DrawState:
    """The draw-rule state of one game: repetition history and the running count."""

    def __init__(self, start: Position, options: RuleOptions | None = None) -> None:
        self.options = options or RuleOptions()
        self.counter = Counter(start.variant.name, self.options)
        self.count = self.counter.start(start, self.options.elapsed)
        self.ply = 0
        self.seen: dict[tuple, int] = {position_key(start): 1}

    def initial(self) -> str | None:
        """The rule already in force at the start position (an ``elapsed`` past the limit)."""
        return self.count.rule if self.count.expired else None

    def push(self, before: Position, move: Move, after: Position) -> str | None:
        """Account for one ply; return the draw rule that fires after it, or None.

        Threefold repetition is named before a count expiring on the same ply.
        """
        self.ply += 1
        self.count = self.counter.after(self.count, before, move, after)
        if move.is_capture or moved_man(before, move):
            self.seen.clear()  # no earlier position can occur again
        key = position_key(after)
        self.seen[key] = self.seen.get(key, 0) + 1
        if self.seen[key] >= 3:
            return THREEFOLD
        if self.count.expired:
            return self.count.rule
        return None

    def occurrences(self, pos: Position) -> int:
        """How often ``pos`` has occurred since the last irreversible move."""
        return self.seen.get(position_key(pos), 0)

    def seen_twice(self) -> frozenset[tuple]:
        """Keys of positions that a third occurrence would draw."""
        return frozenset(k for k, n in self.seen.items() if n >= 2)
