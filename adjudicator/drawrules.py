"""How the adjudicator reads the draw rules: the options, and the rule state of one game.

The rules themselves are data of each variant (:mod:`tablebase.rules.drawrules`: threefold
repetition, the general count, the material-specific ending counts, presets), with their
compiled count transitions; this module holds what is the adjudicator's own:

- :class:`RuleOptions`: the reading chosen by the user (the disputed point, the English
  preset and count length, plies already elapsed, the search budget), and
  :meth:`RuleOptions.counter`, the :class:`~tablebase.rules.drawrules.Counter` of a variant
  under that reading;
- :class:`DrawState`: the draw-rule state of one game followed move by move in Python
  (repetition history and running count), for callers that build lines move by move; the
  replay of recorded games runs the same rules compiled (:mod:`adjudicator.replaycore`).

Winning takes precedence over every count: the caller checks "side to move has no legal move"
before asking :meth:`DrawState.push`'s answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tablebase.rules.drawrules import Count, Counter, DrawRules
from tablebase.rules.moves import Move
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant

Disputed = Literal["restart", "cumulative"]
Preset = Literal["standard", "casual"]

THREEFOLD = "threefold"
ENGLISH_DEFAULT_MOVES = {"standard": 40, "casual": 50}

__all__ = [
    "THREEFOLD",
    "Count",
    "Counter",
    "DrawState",
    "RuleOptions",
    "ending",
    "moved_man",
    "position_key",
]


@dataclass(frozen=True)
class RuleOptions:
    """How the draw rules are read.

    ``disputed``: ``"restart"`` (default) or ``"cumulative"``, see
    :mod:`tablebase.rules.drawrules`. ``english_preset``: the general-count preset of the
    variants that have one (English: ``"standard"``, no man move and no capture, or
    ``"casual"``, no capture). ``english_count``: the count in *moves each* of the variants
    whose count length is a tournament setting (English; plies = 2 x moves); None takes the
    preset's default (40 standard, 50 casual); the draw reason is named after it
    (``"40-move"``). ``elapsed``: plies already elapsed, at the game's start position, on the
    count running there. ``search_nodes``: node budget of the tablebase search that decides
    whether a theoretical win can be forced before a count runs out; past it the ruling is
    ``"unknown"`` with reason ``"search-limit"``. ``strict``: every forgiveness of the
    reader and the replay (a wrong separator, a short capture resolved by the moves that
    follow, a missing result token) is an error instead of a warning. ``deadline``: a
    ``time.monotonic()`` instant past which the table search stops and the ruling is
    ``"unknown"`` with reason ``"time-limit"`` (the service's per-request budget).
    """

    disputed: Disputed = "restart"
    english_preset: Preset = "standard"
    english_count: int | None = None
    elapsed: int = 0
    search_nodes: int = 100_000
    strict: bool = False
    deadline: float | None = None

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
        if self.search_nodes < 0:
            raise ValueError(f"search_nodes must not be negative, not {self.search_nodes}")

    @property
    def english_moves(self) -> int:
        """The English count in moves each."""
        return self.english_count or ENGLISH_DEFAULT_MOVES[self.english_preset]

    def counter(self, variant: Variant) -> Counter:
        """The count transitions of ``variant``'s draw rules under these options."""
        rules = variant.draw_rules
        assert rules is not None
        preset = self.english_preset if self.english_preset in rules.preset_names() else "standard"
        moves = self.english_count if rules.count_is_setting else None
        return _counter(rules, preset, moves, self.disputed)


_COUNTERS: dict[tuple, tuple[DrawRules, Counter]] = {}


def _counter(rules: DrawRules, preset: str, moves: int | None, disputed: str) -> Counter:
    """One :class:`Counter` per rules and reading (keyed by the rules' identity: hashing the
    nested rules data on every game would cost more than the lookup saves)."""
    key = (id(rules), preset, moves, disputed)
    hit = _COUNTERS.get(key)
    if hit is not None and hit[0] is rules:
        return hit[1]
    counter = Counter(rules, preset, moves, disputed)
    if len(_COUNTERS) < 256:
        _COUNTERS[key] = (rules, counter)
    return counter


def ending(pos: Position) -> str | None:
    """The name of the ending count the material of ``pos`` puts in force, or None."""
    rules = pos.variant.draw_rules
    assert rules is not None
    e = rules.ending_of(pos)
    return None if e is None else e.name


def moved_man(pos: Position, move: Move) -> bool:
    """True if ``move`` (legal in ``pos``) moves a man."""
    men = pos.white_men if pos.white_to_move else pos.black_men
    return bool(men >> (move.frm - 1) & 1)


def position_key(pos: Position) -> tuple[int, int, int, int, bool]:
    """What makes two positions the same for repetition: pieces and side to move."""
    return (pos.white_men, pos.white_kings, pos.black_men, pos.black_kings, pos.white_to_move)


class DrawState:
    """The draw-rule state of one game: repetition history and the running count."""

    def __init__(self, start: Position, options: RuleOptions | None = None) -> None:
        self.options = options or RuleOptions()
        self.counter = self.options.counter(start.variant)
        self.threefold = bool(self.counter.rules.threefold)
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
        if self.threefold and self.seen[key] >= 3:
            return THREEFOLD
        if self.count.expired:
            return self.count.rule
        return None

    def occurrences(self, pos: Position) -> int:
        """How often ``pos`` has occurred since the last irreversible move."""
        return self.seen.get(position_key(pos), 0)

    def seen_twice(self) -> frozenset[tuple]:
        """Keys of positions that a third occurrence would draw."""
        if not self.threefold:
            return frozenset()
        return frozenset(k for k, n in self.seen.items() if n >= 2)
