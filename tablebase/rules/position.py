"""Positions and FEN: the user-facing board type around the compiled bitboards.

A :class:`Position` holds four bitboards (white men, white kings, black men, black kings),
the side to move and the variant. FEN follows ``RULES.md``: ``W:W31,32,K45:B1-5,K10``, side
to move first, ranges ``a-b``, ``K`` for kings, either colour list may be empty, an optional
trailing dot. Squares are PDN numbers or alphanumeric names (``W:Wa1,c3,Kh8:Bb6``, as
pydraughts writes Russian and Brazilian positions); lidraughts' trailing ``:H0:F1`` fields
(half-move clock, move number) are accepted and ignored. :meth:`Position.fen` writes numbers
(lidraughts' form) or, on request, names.

Frisian positions also carry each side's king run (:attr:`Position.king_runs`: the king that
made the side's last quiet moves, and how many), written as lidraughts writes it: a last
field ``+<black n><black square>+<white n><white square>`` after ``:H0:F1`` (``+0+0`` when
neither side has a run; ``:H0:F1:+0+233`` - white's king on 33 made the last two white
moves). :meth:`Position.fen` writes the field only when a run is set, so a FEN without runs
reads the same everywhere; readers that stop after the colour fields ignore it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from tablebase.rules.variants import FILES, INTERNATIONAL, Variant, get_variant


def _short(text: str, width: int = 20) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class FenError(ValueError):
    """A FEN string that does not describe a legal position; names the offending token."""

    def __init__(self, fen: str, token: str, reason: str) -> None:
        self.fen = fen
        self.token = token
        self.reason = reason
        super().__init__(f"invalid FEN {_short(fen, 80)!r}: {reason} (at {_short(token)!r})")


def squares_of(board: int) -> list[int]:
    """1-based squares set in a bitboard, ascending."""
    out = []
    while board:
        low = board & -board
        out.append(low.bit_length())
        board ^= low
    return out


def board_of(squares: list[int] | tuple[int, ...]) -> int:
    """Bitboard with the given 1-based squares set."""
    b = 0
    for s in squares:
        b |= 1 << (s - 1)
    return b


_RUNS_FIELD = re.compile(r"\+([0-9])([0-9]{0,4})\+([0-9])([0-9]{0,4})")  # ASCII digits only
NO_RUNS = ((0, 0), (0, 0))


def reverse_bits(board: int, nsq: int) -> int:
    """Square ``s`` goes to ``nsq + 1 - s``: the 180 degree rotation of the board."""
    return int(f"{board:0{nsq}b}"[::-1], 2) if board else 0


@dataclass(frozen=True)
class Position:
    """A position of a variant: bitboards (bit i = square i+1) and the side to move.

    ``king_runs`` is ``((white_square, white_n), (black_square, black_n))``: the 1-based
    square of the king that made its side's last ``n`` consecutive quiet moves (square 0
    when ``n`` is 0). It matters only under a king-move limit (Frisian: a king with ``n ==
    3`` makes no quiet move while its side has men) and is always ``NO_RUNS`` otherwise; a
    side without men has no run. Use :meth:`with_runs` to set it (it checks and normalises).
    """

    white_men: int
    white_kings: int
    black_men: int
    black_kings: int
    white_to_move: bool
    variant: Variant = INTERNATIONAL
    king_runs: tuple[tuple[int, int], tuple[int, int]] = NO_RUNS

    # --- construction -----------------------------------------------------------------
    @classmethod
    def start(cls, variant: Variant | str = INTERNATIONAL) -> Position:
        """The initial position of the variant."""
        v = get_variant(variant)
        return cls.from_fen(v.start_fen(), v)

    @classmethod
    def from_fen(cls, fen: str, variant: Variant | str = INTERNATIONAL) -> Position:
        """Parse a FEN; raises :class:`FenError` naming the offending token."""
        v = get_variant(variant)
        text = fen.strip()
        if text.endswith("."):
            text = text[:-1]
        if not text:
            raise FenError(fen, fen, "empty FEN")
        parts = text.split(":")
        side = parts[0].strip().upper()
        if side not in ("W", "B"):
            raise FenError(fen, parts[0], "side to move must be W or B")
        boards = {"W": [0, 0], "B": [0, 0]}
        runs_text: str | None = None
        seen: set[int] = set()
        colours_seen: set[str] = set()
        for part in parts[1:]:
            part = part.strip()
            if not part:
                raise FenError(fen, part, "empty colour field")
            colour = part[0].upper()
            if colour in ("H", "F") and len(parts) > 3 and _ascii_number(part[1:].strip()):
                continue  # lidraughts' half-move clock and move number
            if colour == "+" and runs_text is None:
                runs_text = part
                continue
            if colour not in ("W", "B"):
                raise FenError(fen, part[0], "unknown side letter, expected W or B")
            if colour in colours_seen:
                raise FenError(fen, part, f"colour {colour} given twice")
            colours_seen.add(colour)
            body = part[1:].strip()
            if not body:
                continue
            for token in body.split(","):
                cls._add_token(fen, v, token.strip(), colour, boards, seen)
        pos = cls(boards["W"][0], boards["W"][1], boards["B"][0], boards["B"][1], side == "W", v)
        pos._check_promotion_rows(fen)
        if runs_text is not None:
            pos = pos._read_runs(fen, runs_text)
        return pos

    def _read_runs(self, fen: str, text: str) -> Position:
        """The position with the king runs of lidraughts' ``+<n><sq>+<n><sq>`` field (black
        first)."""
        m = _RUNS_FIELD.fullmatch(text.strip())
        if not m:
            raise FenError(fen, text, "king-move field must read +<n><square>+<n><square>")
        limit = self.variant.king_move_limit
        runs = []
        for n_s, sq_s in ((m[3], m[4]), (m[1], m[2])):  # white, black
            n, sq = int(n_s), int(sq_s or 0)
            if n and not limit:
                raise FenError(fen, text, f"{self.variant.name} has no king-move limit")
            if n > limit:
                raise FenError(fen, text, f"at most {limit} king moves in a row, not {n}")
            if (n == 0) != (sq == 0):
                raise FenError(fen, text, "a king-move count needs its king's square")
            runs.append((sq, n))
        try:
            return self.with_runs((runs[0], runs[1]))
        except ValueError as e:
            raise FenError(fen, text, str(e)) from None

    def with_runs(self, runs: tuple[tuple[int, int], tuple[int, int]]) -> Position:
        """This position with ``king_runs`` set (``((white_sq, n), (black_sq, n))``, 1-based).

        A run on a square without a king of that side is an error (``ValueError``); a side
        without men (the limit does not bind it) keeps no run. The constructor applies the
        same check, so ``Position(..., king_runs=runs)`` is equivalent.
        """
        return dataclasses.replace(self, king_runs=runs)

    def __post_init__(self) -> None:
        if self.king_runs != NO_RUNS:
            object.__setattr__(self, "king_runs", self._checked_runs(self.king_runs))

    def _checked_runs(
        self, runs: tuple[tuple[int, int], tuple[int, int]]
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        v = self.variant
        out = []
        for (sq, n), men, kings, name in (
            (runs[0], self.white_men, self.white_kings, "white"),
            (runs[1], self.black_men, self.black_kings, "black"),
        ):
            if n < 0 or n > max(v.king_move_limit, 0) or (n == 0) != (sq == 0):
                raise ValueError(f"bad {name} king run {(sq, n)} for {v.name}")
            if n and not (1 <= sq <= v.squares and kings >> (sq - 1) & 1):
                raise ValueError(f"{name} king-move count on square {sq}: no {name} king there")
            out.append((int(sq), int(n)) if n and men else (0, 0))
        return (out[0], out[1])

    @staticmethod
    def _add_token(
        fen: str, v: Variant, token: str, colour: str, boards: dict[str, list[int]], seen: set[int]
    ) -> None:
        if not token:
            raise FenError(fen, token, "empty square token")
        king = token[0].upper() == "K"
        body = token[1:] if king else token
        if "-" in body:
            lo_s, _, hi_s = body.partition("-")
            if lo_s[:1].isalpha() or hi_s[:1].isalpha():
                raise FenError(fen, token, "a range is written with square numbers (31-35)")
            lo, hi = _square_number(fen, v, lo_s, token), _square_number(fen, v, hi_s, token)
            if hi < lo:
                raise FenError(fen, token, "range runs backwards")
            squares = range(lo, hi + 1)
        else:
            squares = range(
                _square_number(fen, v, body, token), _square_number(fen, v, body, token) + 1
            )
        for s in squares:
            if s in seen:
                raise FenError(fen, token, f"square {s} given twice")
            seen.add(s)
            boards[colour][1 if king else 0] |= 1 << (s - 1)

    def _check_promotion_rows(self, fen: str) -> None:
        v = self.variant
        bad_w = self.white_men & v.white_promotion_row
        if bad_w:
            s = squares_of(bad_w)[0]
            raise FenError(fen, str(s), f"white man on square {s}, its own promotion row")
        bad_b = self.black_men & v.black_promotion_row
        if bad_b:
            s = squares_of(bad_b)[0]
            raise FenError(fen, str(s), f"black man on square {s}, its own promotion row")

    # --- output -----------------------------------------------------------------------
    def fen(self, notation: str = "numeric") -> str:
        """FEN with ranges compressed (``W:W31-50:B1-20``); with ``notation="alphanumeric"``
        squares are named and listed one by one (``W:Wa1,c1:Bb8``)."""
        side = "W" if self.white_to_move else "B"
        if notation == "alphanumeric":
            v = self.variant
            white = _named_list(v, self.white_men, self.white_kings)
            black = _named_list(v, self.black_men, self.black_kings)
        elif notation == "numeric":
            white = _fen_list(self.white_men, self.white_kings)
            black = _fen_list(self.black_men, self.black_kings)
        else:
            raise ValueError(f"notation must be numeric or alphanumeric, not {notation!r}")
        if self.king_runs != NO_RUNS:
            (wsq, wn), (bsq, bn) = self.king_runs
            w_at = str(wsq) if wn else ""
            b_at = str(bsq) if bn else ""
            return f"{side}:W{white}:B{black}:H0:F1:+{bn}{b_at}+{wn}{w_at}"
        return f"{side}:W{white}:B{black}"

    def __str__(self) -> str:
        return self.fen()

    # --- derived ----------------------------------------------------------------------
    @property
    def side_boards(self) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
        """(own men, own kings, opponent men, opponent kings) as numpy uint64."""
        if self.white_to_move:
            t = (self.white_men, self.white_kings, self.black_men, self.black_kings)
        else:
            t = (self.black_men, self.black_kings, self.white_men, self.white_kings)
        return tuple(np.uint64(x) for x in t)  # type: ignore[return-value]

    @classmethod
    def from_side_boards(
        cls,
        own_m: int,
        own_k: int,
        opp_m: int,
        opp_k: int,
        white_to_move: bool,
        variant: Variant,
        runs: tuple[tuple[int, int], tuple[int, int]] = NO_RUNS,
    ) -> Position:
        """Inverse of :attr:`side_boards` (``runs``: the side to move's run first, as
        :attr:`side_runs` gives them)."""
        own_m, own_k, opp_m, opp_k = int(own_m), int(own_k), int(opp_m), int(opp_k)
        if white_to_move:
            return cls(own_m, own_k, opp_m, opp_k, True, variant, (runs[0], runs[1]))
        return cls(opp_m, opp_k, own_m, own_k, False, variant, (runs[1], runs[0]))

    @property
    def side_runs(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The king runs as compiled code takes them: ``((own_sq, own_n), (opp_sq, opp_n))``
        with 0-based squares and -1 for no run (:mod:`tablebase.rules.kingruns`)."""
        w, b = ((sq - 1, n) if n else (-1, 0) for sq, n in self.king_runs)
        return (w, b) if self.white_to_move else (b, w)

    def flipped(self) -> Position:
        """Colour-flipped twin: board rotated 180 degrees, colours and side to move swapped."""
        n = self.variant.squares
        (wsq, wn), (bsq, bn) = self.king_runs
        return Position(
            reverse_bits(self.black_men, n),
            reverse_bits(self.black_kings, n),
            reverse_bits(self.white_men, n),
            reverse_bits(self.white_kings, n),
            not self.white_to_move,
            self.variant,
            ((n + 1 - bsq if bn else 0, bn), (n + 1 - wsq if wn else 0, wn)),
        )

    def square_chars(self, chars: str) -> str:
        """One character a square in PDN order: ``chars`` gives those of a white man, a white
        king, a black man, a black king and an empty square (DXP writes ``"wWzZe"``, Hub
        ``"wWbBe"``)."""
        wm, wk, bm, bk, empty = tuple(chars)
        out = []
        for sq in range(self.variant.squares):
            bit = 1 << sq
            if self.white_men & bit:
                out.append(wm)
            elif self.white_kings & bit:
                out.append(wk)
            elif self.black_men & bit:
                out.append(bm)
            elif self.black_kings & bit:
                out.append(bk)
            else:
                out.append(empty)
        return "".join(out)

    def piece_count(self) -> tuple[int, int, int, int]:
        """(white men, white kings, black men, black kings)."""
        return (
            self.white_men.bit_count(),
            self.white_kings.bit_count(),
            self.black_men.bit_count(),
            self.black_kings.bit_count(),
        )

    def piece_at(self, square: int) -> str:
        """'w', 'W', 'b', 'B' (upper case for kings) or '.' for an empty square."""
        b = 1 << (square - 1)
        for board, ch in (
            (self.white_men, "w"),
            (self.white_kings, "W"),
            (self.black_men, "b"),
            (self.black_kings, "B"),
        ):
            if board & b:
                return ch
        return "."


def _ascii_number(text: str) -> bool:
    """True if ``text`` is digits 0-9 only (``"2²"`` and ``"٣"`` are not numbers here)."""
    return text.isascii() and text.isdigit()


def _square_number(fen: str, v: Variant, text: str, token: str) -> int:
    """A FEN square: a PDN number (``29``) or an alphanumeric name (``a1``)."""
    text = text.strip()
    if text[:1].lower() in FILES[: v.size] and text[1:].isdigit():
        if not _ascii_number(text[1:]) or len(text) > 3:
            raise FenError(fen, _short(token), f"{_short(text)!r} is not a square name of {v.name}")
        s = v.square_named(text)
        if not s:
            raise FenError(fen, token, f"{text!r} is not a dark square of the {v.name} board")
        return s
    if not _ascii_number(text):
        raise FenError(fen, token, f"expected a square number or name, got {_short(text)!r}")
    if len(text) > 4:
        raise FenError(fen, _short(token), f"{_short(text)} is not a square of {v.name}")
    s = int(text)
    if not 1 <= s <= v.squares:
        raise FenError(fen, token, f"square {s} out of range 1-{v.squares} for {v.name}")
    return s


def _named_list(v: Variant, men: int, kings: int) -> str:
    items = [(s, "") for s in squares_of(men)] + [(s, "K") for s in squares_of(kings)]
    return ",".join(f"{k}{v.square_name(s)}" for s, k in sorted(items))


def _fen_list(men: int, kings: int) -> str:
    items: list[tuple[int, str]] = []
    for s in squares_of(men):
        items.append((s, ""))
    for s in squares_of(kings):
        items.append((s, "K"))
    items.sort()
    out: list[str] = []
    i = 0
    while i < len(items):
        j = i
        while (
            j + 1 < len(items)
            and items[j + 1][0] == items[j][0] + 1
            and items[j + 1][1] == items[i][1]
        ):
            j += 1
        s, k = items[i]
        if j - i >= 2 and not items[i][1]:
            out.append(f"{k}{s}-{items[j][0]}")
        else:
            out.extend(f"{kk}{ss}" for ss, kk in items[i : j + 1])
        i = j + 1
    return ",".join(out)
