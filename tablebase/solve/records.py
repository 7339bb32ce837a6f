"""The records the solver's compiled kernels take, instead of long lists of positions.

Each is a ``typing.NamedTuple``, which numba types as a named tuple: a record is built once
by the caller (in Python or in compiled code), handed down by value, and its fields are
read by name (a record is a struct of its fields: reading one is a load, as reading a
separate argument is; the rules engine's record measured no slower on a 2-4 build, these
records are still to be A/B'd on a 2-5 build). The arrays in a record are borrowed by the
kernels that take it (:mod:`tablebase.rules.kernel`), as arrays passed alone are.

* :class:`Tables`: the solved slices a pair reads, end to end (its dependencies);
* :class:`Shape`: the index of the boards a part is laid out by (piece counts, binomials);
* :class:`Part`: one part of the pair as the level passes see it (its state words, its
  blocks in the level schedule, its layout);
* :class:`Updates`: where the predecessors of a part's positions lie and how they are set;
* :class:`Words`: where pass 1 writes (state words, flag bits);
* :class:`PairWords`: a pair's state as the men configurations' solver writes it;
* :class:`Entries`: the entries pass 1 goes through, their boards decoded from the index or
  given (the king placements of one men configuration), and whether they are solved as
  their colour flip.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Tables(NamedTuple):
    """The solved slices a pair depends on: their values end to end, and where each
    starts (``offsets[material code]``, -1 where absent; see
    :func:`tablebase.material.slices.flat_offsets`)."""

    vals: np.ndarray
    offsets: np.ndarray


class Shape(NamedTuple):
    """The index of a slice's boards: its piece counts (white men, white kings, black men,
    black kings) and the binomial table (:data:`tablebase.material.index.BINOM`)."""

    counts: np.ndarray
    binom: np.ndarray


class Part(NamedTuple):
    """One part of a pair in the level passes: its words start at ``soff`` in ``state``
    (``size`` entries) and its blocks at ``sbo`` in the level schedule ``due`` and
    ``touched`` (:mod:`tablebase.solve.whole`); ``mode`` is its layout
    (:mod:`tablebase.solve.skeleton`)."""

    state: np.ndarray
    due: np.ndarray
    touched: np.ndarray
    soff: int
    sbo: int
    size: int
    mode: int


class Updates(NamedTuple):
    """Where the level passes update predecessors: the part at ``moff`` in ``state``, its
    blocks from ``mbo`` in ``touched``; state words of ``vb``-bit values, counts changed by
    compare-and-swap when ``atomic`` (several threads)."""

    state: np.ndarray
    touched: np.ndarray
    moff: int
    mbo: int
    vb: int
    atomic: bool


class Words(NamedTuple):
    """Where pass 1 writes: the state words of ``vb``-bit values from ``soff`` in
    ``state``, and the bit of each entry ``i`` without a stored WDL code at ``i - foff``
    in ``flags`` (``foff`` a multiple of 8)."""

    state: np.ndarray
    soff: int
    vb: int
    flags: np.ndarray
    foff: int


class PairWords(NamedTuple):
    """A pair's state as the men configurations' solver (:mod:`tablebase.solve.men`)
    writes it: its parts at ``offw`` (white to move) and ``offb`` (black to move) in
    ``state``, ``vb``-bit words, configuration ``r`` at slot ``slots[r]`` of each part (all
    of the pair in index order, ``slots[r] == r``, or a band's window,
    :mod:`tablebase.solve.bands`); flag bits into ``flags_w``, ``flags_b`` unless they are
    empty (a band's solve keeps none)."""

    state: np.ndarray
    offw: int
    offb: int
    vb: int
    flags_w: np.ndarray
    flags_b: np.ndarray
    slots: np.ndarray


class Entries(NamedTuple):
    """The entries ``lo..hi`` of pass 1: their boards decoded from the index where ``wks``
    is empty, else the men ``wm``, ``bm`` with the kings ``wks[i - lo]``, ``bks[i - lo]``
    (one men configuration, :mod:`tablebase.solve.men`); each solved as its colour flip
    (black to move) where ``flip``."""

    lo: int
    hi: int
    flip: bool
    wks: np.ndarray
    bks: np.ndarray
    wm: np.uint64
    bm: np.uint64
