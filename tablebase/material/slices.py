"""Material splits ("slices"): naming, sizes, colour mirrors, dependencies and build order.

A slice is ``(wm, wk, bm, bk)``: white men and kings, black men and kings, white to move
(black-to-move positions are stored as their colour-flipped twin). Its name is the four
digits, e.g. ``"1010"``, as in ``longest_wins.json``. Slices where either side has no piece
are not stored: a side to move without pieces has lost, and the other case cannot arise.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import NamedTuple

import numpy as np
from numba import njit

from tablebase.material.index import run_states
from tablebase.rules.bits import popcount
from tablebase.rules.variants import Variant


class Slice(NamedTuple):
    """A material split with white to move."""

    wm: int
    wk: int
    bm: int
    bk: int

    @property
    def name(self) -> str:
        return f"{self.wm}{self.wk}{self.bm}{self.bk}"

    @property
    def pieces(self) -> int:
        return self.wm + self.wk + self.bm + self.bk

    @property
    def men(self) -> int:
        return self.wm + self.bm

    @property
    def mirror(self) -> Slice:
        """The slice reached after white's quiet move, normalised back to white to move."""
        return Slice(self.bm, self.bk, self.wm, self.wk)

    @property
    def pair(self) -> tuple[Slice, ...]:
        """This slice and its mirror (one slice when symmetric), canonical order."""
        a, b = sorted((self, self.mirror))
        return (a,) if a == b else (a, b)

    @property
    def code(self) -> int:
        """Dense id used by compiled lookups (each count below 8)."""
        return slice_code(self.wm, self.wk, self.bm, self.bk)

    def file_name(self) -> str:
        return f"{self.name}.h5"

    def boards(self, variant: Variant) -> int:
        """Number of boards indexed (a few of them, men of both colours on one square,
        unused)."""
        return slice_size(variant.squares, variant.per_row, *self)

    def run_states(self, variant: Variant) -> tuple[int, int]:
        """Run states of white and black (:mod:`tablebase.material.index`, "king runs"): more than
        one only for a side with men and kings in a variant with a king-move limit."""
        limit = variant.king_move_limit
        return run_states(limit, self.wm, self.wk), run_states(limit, self.bm, self.bk)

    def size(self, variant: Variant) -> int:
        """Number of index entries: boards times the run states of both sides."""
        cw, cb = self.run_states(variant)
        return self.boards(variant) * cw * cb


UNCODED = 4096  # material with more than seven pieces of a kind: past every real code


@njit(cache=True, inline="always")
def slice_code(wm: int, wk: int, bm: int, bk: int) -> int:
    """The material code of piece counts (each below 8): the one home of this numbering,
    used as an index into per-slice tables by compiled code."""
    return ((wm * 8 + wk) * 8 + bm) * 8 + bk


@njit(cache=True, inline="always")
def material_code(wm, wk, bm, bk):
    """:func:`slice_code` of a white-to-move position given by its bitboards, UNCODED when
    a kind has more than seven pieces."""
    n_wm, n_wk, n_bm, n_bk = popcount(wm), popcount(wk), popcount(bm), popcount(bk)
    if max(max(n_wm, n_wk), max(n_bm, n_bk)) > 7:
        return UNCODED
    return slice_code(n_wm, n_wk, n_bm, n_bk)


def slice_of_code(code: int) -> Slice:
    """The slice whose :func:`slice_code` is ``code`` (its inverse)."""
    return Slice(code >> 9 & 7, code >> 6 & 7, code >> 3 & 7, code & 7)


def flat_offsets(sizes: dict[int, int]) -> tuple[np.ndarray, int]:
    """The flat table of slices: ``offsets[material code]`` of tables of the given sizes
    (by material code) laid end to end in the order given, ``-1`` for absent codes; and the
    total length. Compiled lookups index ``flat[offsets[code] + index]``."""
    offsets = np.full(UNCODED + 1, -1, dtype=np.int64)
    pos = 0
    for code, size in sizes.items():
        offsets[code] = pos
        pos += size
    return offsets, pos


MAX_PIECES = 7  # the largest database the build graph and the material codes support


def parse_slice(name: str) -> Slice:
    """``"1010"`` → Slice(1, 0, 1, 0); raises ValueError for anything else."""
    if len(name) != 4 or not (name.isascii() and name.isdigit()):
        raise ValueError(f"slice name {name!r} must be four digits wm wk bm bk, e.g. 1010")
    return Slice(*(int(c) for c in name))


def parse_material(name: str) -> Slice:
    """A slice that can be built, from its name; raises ValueError saying what is wrong.

    ``name`` is four digits: white men, white kings, black men, black kings (``"0402"``:
    four white kings against two black kings). Each side needs a piece, the total is at most
    :data:`MAX_PIECES` (so the men of a side always fit on the squares men can stand on).
    """
    s = parse_slice(name)
    if s.wm + s.wk == 0:
        raise ValueError(f"material {name!r}: white has no piece (a side with none has lost)")
    if s.bm + s.bk == 0:
        raise ValueError(f"material {name!r}: black has no piece (a side with none has lost)")
    if s.pieces > MAX_PIECES:
        raise ValueError(
            f"material {name!r}: {s.pieces} pieces, more than the {MAX_PIECES} supported"
        )
    return s


@cache
def _binom(n: int, k: int) -> int:
    if k < 0 or n < k:
        return 0
    from math import comb

    return comb(n, k)


def slice_size(nsq: int, width: int, wm: int, wk: int, bm: int, bk: int) -> int:
    men_squares = nsq - width
    free = nsq - wm - bm
    return (
        _binom(men_squares, wm) * _binom(men_squares, bm) * _binom(free, wk) * _binom(free - wk, bk)
    )


def all_slices(pieces: int, min_pieces: int = 2) -> list[Slice]:
    """Every slice with ``min_pieces``..``pieces`` pieces and at least one piece a side."""
    out = []
    for n in range(min_pieces, pieces + 1):
        for wm in range(n + 1):
            for wk in range(n + 1 - wm):
                for bm in range(n + 1 - wm - wk):
                    bk = n - wm - wk - bm
                    if wm + wk > 0 and bm + bk > 0:
                        out.append(Slice(wm, wk, bm, bk))
    return sorted(out, key=build_key)


def build_key(s: Slice) -> tuple[int, int, tuple[int, ...]]:
    """Build order: fewer pieces first, then fewer men (promotions reduce men)."""
    return (s.pieces, s.men, tuple(s))


def successors(s: Slice) -> set[Slice]:
    """Slices other than ``s`` and its mirror that one white move from ``s`` can reach.

    Captures remove black pieces; a white man may be crowned. The result is given with
    white to move (the colour flip of the position after white's move).
    """
    out: set[Slice] = set()
    for promote in (0, 1) if s.wm else (0,):
        wm, wk = s.wm - promote, s.wk + promote
        for bm in range(s.bm + 1):
            for bk in range(s.bk + 1):
                captured = (s.bm - bm) + (s.bk - bk)
                if captured == 0 and not promote:
                    continue
                if bm + bk == 0:
                    continue  # black has no pieces left: a loss without a table
                out.add(Slice(bm, bk, wm, wk))
    return out


def pair_dependencies(s: Slice) -> set[Slice]:
    """Every slice the pair of ``s`` needs solved first."""
    deps: set[Slice] = set()
    for member in s.pair:
        deps |= successors(member)
    return deps - set(s.pair)


def material_pairs(
    wanted: list[Slice] | tuple[Slice, ...] | set[Slice], have: Callable[[Slice], bool]
) -> list[tuple[Slice, ...]]:
    """The pairs to solve so that every slice of ``wanted`` exists, in build order.

    That is the pair of each wanted slice (so its colour mirror too), and, recursively,
    the pair of every slice they depend on for which ``have(slice)`` is false (the
    database lacks it). A wanted slice is always included, even if present.
    """
    todo = [s.pair for s in wanted]
    chosen: set[tuple[Slice, ...]] = set()
    while todo:
        pair = todo.pop()
        if pair in chosen:
            continue
        chosen.add(pair)
        for d in pair_dependencies(pair[0]):
            if d.pair not in chosen and not all(have(m) for m in d.pair):
                todo.append(d.pair)
    return sorted(chosen, key=lambda p: build_key(p[0]))


def build_pairs(pieces: int) -> list[tuple[Slice, ...]]:
    """The slice pairs to solve for a database of up to ``pieces`` pieces, in build order."""
    seen: set[Slice] = set()
    pairs = []
    for s in all_slices(pieces):
        if s in seen:
            continue
        seen.update(s.pair)
        pairs.append(s.pair)
    return pairs
