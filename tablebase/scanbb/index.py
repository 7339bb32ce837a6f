"""Scan's material id and its dense index of positions (learnt from Scan 3.1's ``bb_index``).

Scan indexes a position from the side to move's view: a black-to-move position is turned
round first (square ``s`` -> ``51 - s``, colours swapped), as our own index does, so below
"white" is the side to move. A **material id** is four counts in the order *white men, black
men, white kings, black kings* and is named by those digits (``"1201"``: one man against two
men and one king); our slice names order them ``wm wk bm bk`` (:class:`ScanId` converts).

**The board's index.** With 0-based squares ``s`` (0..49), ``C`` the binomial coefficient,
``F = 50 - wm - bm``::

    board = ((r_wm * C(45, bm) + r_bm) * C(F, wk) + r_wk) * C(F - wk, bk) + r_bk

each ``r`` the colex rank ``C(x_1, 1) + C(x_2, 2) + ...`` of the group's sorted coordinates
``x_1 < x_2 < ...``:

- white men: ``x = 49 - s`` (the squares counted down from 50; a white man never stands on
  squares 1-5);
- black men: ``x = s`` (never on 46-50);
- white kings: ``x`` = the number of squares *above* ``s`` without a man;
- black kings: ``x`` = the number of squares *below* ``s`` without a man or a white king.

So the side to move's pieces are counted from the far end of the board and the other side's
from the near end; our index (:mod:`tablebase.material.index`) counts both from the near end,
so the black groups' ranks are the same in both and the white groups' differ. The two men
groups are ranked independently: entries where a white and a black man would share a square
are in the index but are no positions.

**Frisian run states.** Scan's Frisian positions carry, for each side that has men, the king
that made its last quiet moves (its "wolf") and how many it made (1..3): code 0 for no run,
else ``n + 3 j`` where ``j`` is the king's rank among its side's kings, counted from the top
of the board for the side to move and from the bottom for the other side. A side with men
and ``k`` kings has ``1 + 3k`` codes, any other side one, and::

    entry = (board * Cw + white_code) * Cb + black_code

which is exactly our king-run scheme (:func:`tablebase.material.index.run_code`) with the
side to move's kings counted from the other end (:func:`mirror_run_code`). Every id's number
of entries therefore equals the size of the matching slice of ours.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tablebase.material.index import (
    BINOM,
    black_kings_at,
    index_parts,
    mirror_run_code,
    rank_among_free,
    reverse_board,
    run_code,
    run_of_code,
    run_states,
)
from tablebase.material.slices import Slice, all_slices
from tablebase.rules.bits import popcount
from tablebase.rules.kernel import kernel
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant

ZERO = np.uint64(0)

# Scan's name of each variant it has bitbases for: the suffix of its folder ``bb<suffix>``
VARIANT_SUFFIX = {"international": "", "frisian": "_frisian"}

MAX_SCAN_PIECES = 7  # Scan's ids hold at most seven pieces (three bits a count)


class ScanFormatError(ValueError):
    """Something Scan's bitbase format cannot express (a variant, a material)."""


def variant_suffix(variant: Variant) -> str:
    """The suffix of Scan's bitbase folder for ``variant`` (``bb`` + suffix)."""
    try:
        return VARIANT_SUFFIX[variant.name]
    except KeyError:
        known = ", ".join(sorted(VARIANT_SUFFIX))
        raise ScanFormatError(
            f"Scan has no bitbases of {variant.name} draughts (only: {known})"
        ) from None


class ScanId(NamedTuple):
    """Scan's material id: side to move's men, other side's men, side to move's kings, other
    side's kings."""

    wm: int
    bm: int
    wk: int
    bk: int

    @property
    def name(self) -> str:
        """The file name: the four counts in Scan's order."""
        return f"{self.wm}{self.bm}{self.wk}{self.bk}"

    @property
    def pieces(self) -> int:
        return self.wm + self.bm + self.wk + self.bk

    @property
    def slice(self) -> Slice:
        """Our slice of the same positions (white to move)."""
        return Slice(self.wm, self.wk, self.bm, self.bk)

    @classmethod
    def of_slice(cls, s: Slice) -> ScanId:
        return cls(s.wm, s.bm, s.wk, s.bk)

    def size(self, variant: Variant) -> int:
        """Number of entries of the id's file (its decoded length)."""
        return self.slice.size(variant)


def scan_ids(pieces: int, min_pieces: int = 2) -> list[ScanId]:
    """Every id Scan loads with ``bb-size`` = ``pieces``: both sides have a piece."""
    if pieces > MAX_SCAN_PIECES:
        raise ScanFormatError(f"Scan's index holds at most {MAX_SCAN_PIECES} pieces")
    return [ScanId.of_slice(s) for s in all_slices(pieces, min_pieces)]


# --- compiled -------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def scan_board_index(nsq, width, board, counts, binom):
    """Scan's board index of a white-to-move position ``board`` (white men, white kings,
    black men, black kings; ``counts`` its pieces in that order; module docstring)."""
    wm, wk, bm, bk = board
    nwm, nwk, nbm, nbk = counts
    men = wm | bm
    a = nsq - width
    free = nsq - nwm - nbm
    r_wm = rank_among_free(reverse_board(wm, nsq), ZERO, binom)
    r_bm = rank_among_free(bm, ZERO, binom)
    r_wk = rank_among_free(reverse_board(wk, nsq), reverse_board(men, nsq), binom)
    r_bk = rank_among_free(bk, men | wk, binom)
    return ((r_wm * binom[a, nbm] + r_bm) * binom[free, nwk] + r_wk) * binom[free - nwk, nbk] + r_bk


@kernel
def scan_entry(nsq, width, limit, pos, runs, binom):
    """Scan's entry of a white-to-move position ``pos`` (white men, white kings, black men,
    black kings) with its runs ``runs`` = ``(wsq, wn, bsq, bn)`` (white's king on 0-based
    ``wsq`` made the last ``wn`` quiet moves, black's on ``bsq`` the last ``bn``; 0: none)."""
    wm, wk, bm, bk = pos
    wsq, wn, bsq, bn = runs
    nwm, nwk, nbm, nbk = popcount(wm), popcount(wk), popcount(bm), popcount(bk)
    board = scan_board_index(nsq, width, pos, (nwm, nwk, nbm, nbk), binom)
    cw = run_states(limit, nwm, nwk)
    cb = run_states(limit, nbm, nbk)
    if cw * cb == 1:
        return board
    code_w = mirror_run_code(limit, nwk, run_code(limit, nwm, wk, wsq, wn))
    code_b = run_code(limit, nbm, bk, bsq, bn)
    return (board * cw + code_w) * cb + code_b


@njit(cache=True, inline="always")
def scan_prefix(q, nsq, width, nwm, nwk, nbm, binom):
    """The men and white kings shared by Scan's boards ``q * C(F - wk, bk)`` and the
    ``C(F - wk, bk)`` after it (those differing only in their black kings):
    ``(wm, wk, bm, valid)``, ``valid`` False where a white and a black man coincide."""
    a = nsq - width
    free = nsq - nwm - nbm
    d_wk = binom[free, nwk]
    d_bm = binom[a, nbm]
    r_wk = q % d_wk
    q //= d_wk
    wm = reverse_board(black_kings_at(q // d_bm, nwm, a, binom, ZERO), nsq)
    bm = black_kings_at(q % d_bm, nbm, a, binom, ZERO)
    if wm & bm:
        return wm, ZERO, bm, False
    men = wm | bm
    wk = reverse_board(black_kings_at(r_wk, nwk, free, binom, reverse_board(men, nsq)), nsq)
    return wm, wk, bm, True


@njit(cache=True, inline="always")
def our_prefix(nsq, width, pieces, counts, binom):
    """Our board index (``pieces``: white men, white kings, black men; ``counts`` the
    slice's four piece counts) of the same boards as :func:`scan_prefix` divided by
    ``C(F - wk, bk)``: the black kings' rank (the last group) is the same in both indexes,
    so ``our board = our_prefix * C(F - wk, bk) + r_bk`` for Scan's ``board = q * ... +
    r_bk``."""
    wm, wk, bm = pieces
    head, r_wk, _ = index_parts(nsq, width, (wm, wk, bm, ZERO), counts, binom)
    return head + r_wk


@njit(cache=True)
def scan_position(entry, nsq, width, limit, counts, binom):
    """Inverse of :func:`scan_entry` in the slice of ``counts``: ``(wm, wk, bm, bk, wsq, wn,
    bsq, bn, valid)``."""
    nwm, nwk, nbm, nbk = counts
    cw = run_states(limit, nwm, nwk)
    cb = run_states(limit, nbm, nbk)
    code_b = entry % cb
    code_w = (entry // cb) % cw
    board = entry // (cw * cb)
    d_bk = binom[nsq - nwm - nbm - nwk, nbk]
    wm, wk, bm, valid = scan_prefix(board // d_bk, nsq, width, nwm, nwk, nbm, binom)
    if not valid:
        return wm, wk, bm, ZERO, -1, 0, -1, 0, False
    free = nsq - nwm - nbm
    bk = black_kings_at(board % d_bk, nbk, free - nwk, binom, wm | bm | wk)
    wsq, wn = run_of_code(limit, wk, mirror_run_code(limit, nwk, code_w))
    bsq, bn = run_of_code(limit, bk, code_b)
    return wm, wk, bm, bk, wsq, wn, bsq, bn, True


# --- positions ------------------------------------------------------------------------------


def white_view(pos: Position) -> Position:
    """The position with white to move (turned round if black moves), runs included."""
    return pos if pos.white_to_move else pos.flipped()


def scan_id_of(pos: Position) -> ScanId:
    """The id of a position (counts from the side to move's view)."""
    p = white_view(pos)
    return ScanId(
        p.white_men.bit_count(),
        p.black_men.bit_count(),
        p.white_kings.bit_count(),
        p.black_kings.bit_count(),
    )


def scan_entry_of(pos: Position) -> tuple[ScanId, int]:
    """Scan's id and entry of a position (its runs included in Frisian)."""
    v = pos.variant
    variant_suffix(v)
    p = white_view(pos)
    (wsq, wn), (bsq, bn) = p.king_runs
    entry = scan_entry(
        v.squares, v.per_row, v.king_move_limit,
        (np.uint64(p.white_men), np.uint64(p.white_kings),
         np.uint64(p.black_men), np.uint64(p.black_kings)),
        (wsq - 1, wn, bsq - 1, bn), BINOM,
    )  # fmt: skip
    return scan_id_of(pos), int(entry)


def position_of_entry(variant: Variant, sid: ScanId, entry: int) -> Position | None:
    """The white-to-move position of entry ``entry`` of ``sid`` (None: no position)."""
    if not 0 <= entry < sid.size(variant):
        raise ScanFormatError(f"entry {entry} is outside {sid.name} ({sid.size(variant)})")
    wm, wk, bm, bk, wsq, wn, bsq, bn, ok = scan_position(
        entry, variant.squares, variant.per_row, variant.king_move_limit,
        (sid.wm, sid.wk, sid.bm, sid.bk), BINOM,
    )  # fmt: skip
    if not ok:
        return None
    runs = ((int(wsq) + 1 if wn else 0, int(wn)), (int(bsq) + 1 if bn else 0, int(bn)))
    return Position(int(wm), int(wk), int(bm), int(bk), True, variant).with_runs(runs)
