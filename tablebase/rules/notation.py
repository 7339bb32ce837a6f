"""PDN move notation: parse ``32-28``, ``19x28``, ``19:28``, ``26x37x48`` against a position
and write moves in the short form, or the full path where the short form is ambiguous.

Squares are PDN numbers or alphanumeric names (``c3-d4``, ``c3:e5:g3``; ``a1`` dark, white at
the bottom, as Russian and Brazilian files write them), read in either form for every
variant. Moves are written in the variant's own notation (:attr:`Variant.notation`) unless
another is asked for: numbers with ``-`` and ``x``, names with ``-`` and ``:`` (the Russian
convention).
"""

from __future__ import annotations

import re

from tablebase.rules.moves import Move, legal_moves
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant

_SQ = r"(?:\d+|[a-p]\d+)"
_MOVE_RE = re.compile(rf"^({_SQ})([-x:])({_SQ})((?:[-x:]{_SQ})*)$", re.IGNORECASE | re.ASCII)
_SQ_RE = re.compile(_SQ, re.IGNORECASE | re.ASCII)


class MoveError(ValueError):
    """A move text that is malformed, not legal in the position, or ambiguous."""

    def __init__(self, text: str, reason: str, candidates: list[str] | None = None) -> None:
        self.text = text
        self.reason = reason
        self.candidates = candidates or []
        msg = f"move {text!r}: {reason}"
        if candidates is not None:
            msg += f" (legal: {', '.join(candidates) if candidates else 'none'})"
        super().__init__(msg)


def parse_squares(text: str, variant: Variant | None = None) -> tuple[list[int], bool]:
    """Split a move text into its square numbers and whether it is written as a capture.

    Alphanumeric squares (``c3-d4``) need the ``variant`` whose board names them.
    """
    m = _MOVE_RE.match(text.replace(" ", ""))
    if not m:
        raise MoveError(
            text, "not a move (expected forms like 32-28, 19x28, 26x37x48, c3-d4, c3:e5)"
        )
    tokens = [m.group(1), m.group(3)] + _SQ_RE.findall(m.group(4) or "")
    squares = [_square(text, t, variant) for t in tokens]
    is_capture = m.group(2) in "x:X"
    if not is_capture and len(squares) > 2:
        raise MoveError(text, "a step has exactly two squares")
    if is_capture and "-" in m.group(4):
        raise MoveError(text, "not a move (a capture is written with x or :, not -)")
    return squares, is_capture


def _square(text: str, token: str, variant: Variant | None) -> int:
    if token.isascii() and token.isdigit():
        if len(token) > 4:
            raise MoveError(text[:40], f"square {token[:12]}... is not a square")
        return int(token)
    if variant is None:
        raise MoveError(text, f"square {token!r}: alphanumeric squares need a variant")
    s = variant.square_named(token)
    if not s:
        raise MoveError(text, f"{token!r} is not a dark square of the {variant.name} board")
    return s


def square_text(variant: Variant, square: int, notation: str | None = None) -> str:
    """A 1-based square as written in ``notation`` (default: the variant's)."""
    if (notation or variant.notation) == "alphanumeric":
        return variant.square_name(square)
    return str(square)


def _candidates(
    pos: Position, moves: list[Move], squares: list[int], is_capture: bool
) -> list[Move]:
    """The legal moves a written move may denote.

    Two squares are from and to (where two captures share them, the one jumping straight
    from one to the other over a single piece is meant, the route reading below). A capture
    with more squares is read both ways PDN allows:
    as a route of landing squares (``26x37x48``: from, landings..., to) and as from, to and
    some of the captured squares (``26x48x31x42``); a text cannot fit both readings for two
    different moves, since a route's squares are empty and captured squares are not. A
    route that fits neither (some landing squares left out) is matched by from and to.
    """
    if len(squares) == 2:
        found = [
            m
            for m in moves
            if m.is_capture == is_capture and m.frm == squares[0] and m.to == squares[1]
        ]
        if len(found) > 1 and is_capture:  # twins: a single straight jump names itself
            taken = _captured_along(pos, squares)
            direct = [m for m in found if m.captures == taken]
            return direct if len(direct) == 1 else found
        return found
    caps = [m for m in moves if m.is_capture and m.frm == squares[0]]
    taken = _captured_along(pos, squares)
    by_route = [m for m in caps if m.to == squares[-1] and taken == m.captures]
    listed = set(squares[2:])
    by_captured = [m for m in caps if m.to == squares[1] and listed <= set(m.captures)]
    found = by_route + [m for m in by_captured if m not in by_route]
    if not found:  # a partial route: from and to are what counts
        found = [m for m in caps if m.to == squares[-1]]
    return found


def _captured_along(pos: Position, squares: list[int]) -> tuple[int, ...] | None:
    """Opponent pieces jumped along a written path of landing squares, or None when a leg
    is not a jump over exactly one opponent piece along a diagonal (or, where the variant
    captures straight, along a row or a column, whose dark squares are every second one)."""
    v = pos.variant
    opp = (
        (pos.black_men | pos.black_kings)
        if pos.white_to_move
        else (pos.white_men | pos.white_kings)
    )
    taken: set[int] = set()
    for a, b in zip(squares, squares[1:], strict=False):
        (ra, ca), (rb, cb) = v.coords(a), v.coords(b)
        dr, dc = rb - ra, cb - ca
        sr, sc = (dr > 0) - (dr < 0), (dc > 0) - (dc < 0)
        if dr and abs(dr) == abs(dc):
            between = [v.square_at(ra + k * sr, ca + k * sc) for k in range(1, abs(dr))]
        elif v.straight_captures and (dr == 0) != (dc == 0) and (dr + dc) % 2 == 0:
            n = abs(dr + dc)
            between = [v.square_at(ra + k * sr, ca + k * sc) for k in range(2, n, 2)]
        else:
            return None
        jumped = [s for s in between if opp >> (s - 1) & 1]
        if len(jumped) != 1:
            return None
        taken.add(jumped[0])
    return tuple(sorted(taken))


def parse_move(pos: Position, text: str) -> Move:
    """The unique legal move ``text`` denotes in ``pos``; :class:`MoveError` otherwise.

    A capture written with intermediate squares is read as a path of landing squares
    (``26x37x48``) or as ``from x to x captured squares`` (all or some of them).
    """
    squares, is_capture = parse_squares(text, pos.variant)
    nsq = pos.variant.squares
    for s in squares:
        if not 1 <= s <= nsq:
            raise MoveError(text, f"square {s} out of range 1-{nsq}")
    moves = legal_moves(pos)
    found = _candidates(pos, moves, squares, is_capture)
    if len(found) == 1:
        return found[0]
    names = [move_text(pos, m, moves) for m in moves]
    if not found:
        return _raise(text, "not legal in this position", names)
    return _raise(text, "ambiguous", [move_text(pos, m, moves) for m in found])


def _raise(text: str, reason: str, names: list[str]) -> Move:
    raise MoveError(text, reason, names)


def move_text(
    pos: Position, move: Move, moves: list[Move] | None = None, notation: str | None = None
) -> str:
    """Short PDN text (``32-28``, ``19x28``; ``c3-d4``, ``c3:e5``); the full path when two
    legal captures share from and to but take different pieces (PDN 3.0). ``notation`` is
    ``"numeric"`` or ``"alphanumeric"``, by default the variant's."""
    v = pos.variant
    notation = notation or v.notation
    if notation not in ("numeric", "alphanumeric"):
        raise ValueError(f"notation must be numeric or alphanumeric, not {notation!r}")
    cap = ":" if notation == "alphanumeric" else "x"
    if not move.is_capture:
        return f"{square_text(v, move.frm, notation)}-{square_text(v, move.to, notation)}"
    if moves is None:
        moves = legal_moves(pos)
    twins = [m for m in moves if m.frm == move.frm and m.to == move.to and m.is_capture]
    squares = move.path if len(twins) > 1 else (move.frm, move.to)
    return cap.join(square_text(v, s, notation) for s in squares)
