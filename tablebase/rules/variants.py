"""Rule sets as data: board geometry and the capture/crowning rules of each variant.

A :class:`Variant` names everything the rules engine needs to know about a rule set; its
:attr:`Variant.rules` is the :class:`Rules` record compiled code works on (the neighbour
table and the rule fields by name). A new variant is a few lines in :data:`VARIANTS`:
Brazilian is the International rules on the 8x8 board, Russian differs from it in two
fields (free choice among captures, a man crowned mid-capture going on as a king), Frisian
in three (captures also straight along rows and columns, the capture of greatest value, at
most three quiet moves in a row with one king). The rules each one follows and their
sources are in ``docs/RULES-VARIANTS.md``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
from numba import njit

from tablebase.rules import board
from tablebase.rules.drawrules import (
    BRAZILIAN_RULES,
    ENGLISH_RULES,
    FRISIAN_RULES,
    INTERNATIONAL_RULES,
    RUSSIAN_RULES,
    DrawRules,
)

# Directions: 0 = up-left, 1 = up-right (towards row 0, white's forward), 2 = down-left,
# 3 = down-right (towards the last row, black's forward). Straight captures (Frisian) go to
# the nearest square of the same colour along a column or a row, two squares away:
# 4 = up (row - 2), 5 = left (column - 2), 6 = right (column + 2), 7 = down (row + 2).
# The opposite of direction d is 3 - d for the diagonals and 11 - d for the straight ones.
UP_LEFT, UP_RIGHT, DOWN_LEFT, DOWN_RIGHT = 0, 1, 2, 3
UP, LEFT, RIGHT, DOWN = 4, 5, 6, 7

# What a man reaching its promotion row in the middle of a capture does (``Rules.crowning``,
# the index in this tuple):
# "passes" - stays a man and goes on capturing; crowned only if the move ends there
#            (International, Brazilian);
# "stops" - is crowned and the move ends (English);
# "continues" - is crowned and goes on capturing as a king (Russian).
CROWNING = ("passes", "stops", "continues")

FILES = "abcdefghijklmnop"  # file letters of alphanumeric square names, left to right


class Rules(NamedTuple):
    """A variant's rules as compiled code reads them: one record built once per variant
    (:attr:`Variant.rules`), passed to every compiled function of the rules engine, the
    solver and the prober, its fields read by name (numba types it as a named tuple: the
    scalars are constants of the record, the array is borrowed by ``_nrt=False`` kernels)."""

    nbr: np.ndarray  # int64[squares, 4] (8 with straight captures), see Variant.neighbours
    nsq: int  # playable squares
    width: int  # squares per row
    flying: bool  # kings move and capture any distance
    men_back: bool  # men capture backwards
    majority: bool  # the capture taking the most pieces (``value``: of most value) is due
    crowning: int  # index in CROWNING: a man reaching its promotion row mid-capture
    # most quiet moves in a row with one king for a side with men (0: no limit; Frisian 3)
    king_limit: int
    straight: bool  # men and kings also capture straight (directions 4-7; Frisian)
    # the capture of greatest value is compulsory (a king worth less than two men and more
    # than one, see ``captures.capture_key``) and at equal value a king's capture takes
    # precedence; ``majority`` is then true too
    value: bool


@njit(cache=True)
def rules_of(nbr, fields):
    """The :class:`Rules` record from the neighbour table and :attr:`Variant.rule_fields`,
    built in compiled code (see there)."""
    return Rules(
        nbr, fields[0], fields[1], fields[2] != 0, fields[3] != 0, fields[4] != 0, fields[5],
        fields[6], fields[7] != 0, fields[8] != 0,
    )  # fmt: skip


@dataclass(frozen=True)
class Variant:
    """One rule set. Squares are numbered 1..n in PDN order; bit ``i`` is square ``i+1``."""

    name: str
    size: int  # board is size x size
    flying_kings: bool
    men_capture_backwards: bool
    majority_capture: bool
    mid_capture_crowning: str  # one of CROWNING
    white_moves_first: bool
    game_type: int  # PDN GameType tag value
    results: tuple[str, str, str] = field(
        default=("2-0", "1-1", "0-2")
    )  # first-mover win, draw, loss
    # threefold repetition and the move counts (tablebase.rules.drawrules); required
    draw_rules: DrawRules | None = None
    # squares in move text and FEN as written by default: "numeric" (PDN numbers) or
    # "alphanumeric" (a1-h8, a1 dark, white at the bottom); both are always read
    notation: str = "numeric"
    # Frisian rules (see :class:`Rules`): most quiet moves in a row with one king while
    # the side has men (0: no limit), straight captures, capture of greatest value
    king_move_limit: int = 0
    straight_captures: bool = False
    value_majority: bool = False

    def __post_init__(self) -> None:
        if self.draw_rules is None:
            raise ValueError(f"variant {self.name!r} has no draw_rules")
        if self.mid_capture_crowning not in CROWNING:
            raise ValueError(f"variant {self.name!r}: mid_capture_crowning not in {CROWNING}")
        if self.notation not in ("numeric", "alphanumeric"):
            raise ValueError(f"variant {self.name!r}: notation must be numeric or alphanumeric")
        if self.value_majority and not self.majority_capture:
            raise ValueError(f"variant {self.name!r}: value_majority needs majority_capture")
        if self.straight_captures and not self.men_capture_backwards:
            # the compiled generator lets men capture straight in all four ways
            raise ValueError(
                f"variant {self.name!r}: straight_captures needs men_capture_backwards"
            )

    @property
    def squares(self) -> int:
        """Number of playable (dark) squares."""
        return self.size * self.size // 2

    @property
    def per_row(self) -> int:
        return self.size // 2

    def coords(self, square: int) -> tuple[int, int]:
        """(row, column) of a 1-based PDN square; row 0 is black's back row (top)."""
        return board.coords(self.size, square)

    def square_at(self, row: int, col: int) -> int:
        """1-based PDN square at (row, col), or 0 for a light or off-board square."""
        return board.square_at(self.size, row, col)

    def square_name(self, square: int) -> str:
        """Alphanumeric name of a 1-based PDN square: file letter from ``a`` at the left,
        rank from 1 at the bottom (white's side), so ``a1`` is dark (square 29 on 8x8)."""
        row, col = self.coords(square)
        return f"{FILES[col]}{self.size - row}"

    def square_named(self, name: str) -> int:
        """1-based PDN square of an alphanumeric name (``c3``, case-insensitive); 0 when the
        name is malformed, off the board or a light square."""
        text = name.strip().lower()
        rank = text[1:]
        if len(text) < 2 or text[0] not in FILES or not (rank.isascii() and rank.isdigit()):
            return 0  # only ASCII digits are a rank ("a²" is no square)
        if len(rank) > 2:
            return 0
        return self.square_at(self.size - int(text[1:]), FILES.index(text[0]))

    @cached_property
    def neighbours(self) -> np.ndarray:
        """int64[squares, 4]: 0-based neighbour index in each direction, -1 off board; with
        straight captures int64[squares, 8], the straight directions 4-7 in columns 4-7."""
        return board.neighbours(self.size, self.straight_captures)

    @cached_property
    def rules(self) -> Rules:
        """The record of this variant's rules for compiled code (:class:`Rules`)."""
        return Rules(
            nbr=self.neighbours,
            nsq=self.squares,
            width=self.per_row,
            flying=self.flying_kings,
            men_back=self.men_capture_backwards,
            majority=self.majority_capture,
            crowning=CROWNING.index(self.mid_capture_crowning),
            king_limit=self.king_move_limit,
            straight=self.straight_captures,
            value=self.value_majority,
        )

    @cached_property
    def rule_fields(self) -> np.ndarray:
        """The scalar fields of :attr:`rules` in their order, as one int64 array: a Python
        caller of a compiled function called once per position passes these and the
        neighbour table, and the function builds the record (:func:`rules_of`), because
        numba types a named tuple passed from Python at every call (about 6 us, against
        about 1 us for two arrays)."""
        r = self.rules
        return np.array(
            [r.nsq, r.width, r.flying, r.men_back, r.majority, r.crowning, r.king_limit,
             r.straight, r.value],
            dtype=np.int64,
        )  # fmt: skip

    @property
    def white_promotion_row(self) -> int:
        """Bitboard of row 0, where white men are crowned."""
        return (1 << self.per_row) - 1

    @property
    def black_promotion_row(self) -> int:
        """Bitboard of the last row, where black men are crowned."""
        return ((1 << self.per_row) - 1) << (self.squares - self.per_row)

    @property
    def full_mask(self) -> int:
        return (1 << self.squares) - 1

    def start_fen(self) -> str:
        men_rows = (self.size - 2) // 2
        n = men_rows * self.per_row
        side = "W" if self.white_moves_first else "B"
        return f"{side}:W{self.squares - n + 1}-{self.squares}:B1-{n}"

    def result_for(self, white_score: int) -> str:
        """PDN result token for a game white won (2), drew (1) or lost (0).

        English results are written from the first mover's (black's) side.
        """
        win, draw, loss = self.results
        if self.white_moves_first:
            return (loss, draw, win)[white_score]
        return (win, draw, loss)[white_score]


INTERNATIONAL = Variant(
    name="international",
    size=10,
    flying_kings=True,
    men_capture_backwards=True,
    majority_capture=True,
    mid_capture_crowning="passes",
    white_moves_first=True,
    game_type=20,
    results=("2-0", "1-1", "0-2"),
    draw_rules=INTERNATIONAL_RULES,
)

ENGLISH = Variant(
    name="english",
    size=8,
    flying_kings=False,
    men_capture_backwards=False,
    majority_capture=False,
    mid_capture_crowning="stops",
    white_moves_first=False,
    game_type=21,
    results=("1-0", "1/2-1/2", "0-1"),
    draw_rules=ENGLISH_RULES,
)

RUSSIAN = Variant(
    name="russian",
    size=8,
    flying_kings=True,
    men_capture_backwards=True,
    majority_capture=False,
    mid_capture_crowning="continues",
    white_moves_first=True,
    game_type=25,
    results=("1-0", "1/2-1/2", "0-1"),
    draw_rules=RUSSIAN_RULES,
    notation="alphanumeric",
)

BRAZILIAN = dataclasses.replace(
    INTERNATIONAL,
    name="brazilian",
    size=8,
    game_type=26,
    results=("1-0", "1/2-1/2", "0-1"),
    draw_rules=BRAZILIAN_RULES,
    notation="alphanumeric",
)

FRISIAN = dataclasses.replace(
    INTERNATIONAL,
    name="frisian",
    game_type=40,
    draw_rules=FRISIAN_RULES,
    king_move_limit=3,
    straight_captures=True,
    value_majority=True,
)

VARIANTS: dict[str, Variant] = {
    v.name: v for v in (INTERNATIONAL, ENGLISH, RUSSIAN, BRAZILIAN, FRISIAN)
}


def get_variant(name: str | Variant) -> Variant:
    """Look a variant up by name; raises ``ValueError`` naming the known ones."""
    if isinstance(name, Variant):
        return name
    try:
        return VARIANTS[name.lower()]
    except KeyError:
        known = ", ".join(sorted(VARIANTS))
        raise ValueError(f"unknown variant {name!r} (known: {known})") from None


def variant_for_game_type(game_type: int) -> Variant | None:
    """The variant a PDN GameType number names, or None if not supported."""
    for v in VARIANTS.values():
        if v.game_type == game_type:
            return v
    return None
