"""Where a position lies in the tables: its material code and its entry, seen with white to
move (the board turned half a turn, colours swapped, if black moves).

Positions are located one at a time (:func:`locate`, for the ``values`` part) or in rows
(:func:`locate_rows`, for the ``wdl`` part: each one's entry in the part's address space,
or what stands in the way of reading one).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from tablebase.material.index import BINOM, entry_index
from tablebase.material.slices import UNCODED, material_code
from tablebase.probe.pagetable import STORED
from tablebase.probe.status import CAPTURES, FOUND, LOCATED, NOT_OPEN
from tablebase.rules.bits import reversed_bits
from tablebase.rules.captures import has_capture
from tablebase.rules.kernel import kernel

NO_CODE = -1  # white_to_move's code for more pieces of a kind than any slice code names


class Batch(NamedTuple):
    """The positions of a batch as one argument of the compiled look-ups: per position the
    side to move (bool) and the four bitboards (uint64; white men, white kings, black men,
    black kings)."""

    wtm: np.ndarray
    wm: np.ndarray
    wk: np.ndarray
    bm: np.ndarray
    bk: np.ndarray


@njit(cache=True, inline="always")
def entry_of(rules, binom, wm, wk, bm, bk):
    """Entry of a white-to-move position in its slice, with no king run on either side
    where the variant counts runs (Frisian, ``rules.king_limit`` > 0): the runs a probe without
    them means, and the runs after any capture (a capture ends the capturer's run, and the
    side that was captured from had none)."""
    return entry_index(
        rules.nsq, rules.width, rules.king_limit, (wm, wk, bm, bk), (-1, 0, -1, 0), binom
    )


@njit(cache=True, inline="always")
def turned(x, nsq):
    """Square ``s`` <-> square ``nsq - 1 - s`` (0-based): the board turned half a turn, by
    the CPU's bit reversal (as :func:`tablebase.material.index.reverse_board`)."""
    return reversed_bits(x) >> np.uint64(64 - nsq)


@njit(cache=True, inline="always")
def white_view(nsq, wtm, wm, wk, bm, bk):
    """The position as white to move: turned half a turn, colours swapped, if black is to
    move."""
    if wtm:
        return wm, wk, bm, bk
    return (
        turned(bm, nsq),
        turned(bk, nsq),
        turned(wm, nsq),
        turned(wk, nsq),
    )


@kernel
def locate_rows(table, rules, rows, n, loc):
    """Where each white-to-move position ``rows[k]`` (wm, wk, bm, bk), ``k < n``, lies in a
    ``wdl`` part whose page table is ``table`` (:mod:`tablebase.probe.pagetable`: the
    slices' byte offsets and capture flags), as a pair ``loc[k, 0], loc[k, 1]``
    (:mod:`tablebase.probe.status`):

    - ``LOCATED, entry``: its entry in the part, counted in two-bit codes (byte
      ``entry >> 2``), where its result is read;
    - ``FOUND, result`` where the result needs no entry: lost (-1) if the side to move has
      no pieces; won (+1) if it must capture (in a slice that does not store captures) and
      the opponent has a single piece, as resolving it would find (any capture takes that
      piece, and a side without pieces has lost);
    - ``CAPTURES, 0``: it must capture, in a slice that does not store captures;
    - ``NOT_OPEN, code``: its slice is not open (or the opponent has no pieces: no slice;
      the caller reports it).

    The one home of these rules, written out in one loop over many positions (a
    :mod:`kernel <tablebase.rules.kernel>`: no reference counting, which doubled the cost of
    a lookup when a per-position helper took the tables)."""
    for k in range(n):
        a, b, c, d = rows[k, 0], rows[k, 1], rows[k, 2], rows[k, 3]
        if (a | b) == 0:
            loc[k, 0], loc[k, 1] = FOUND, -1
            continue
        code = material_code(a, b, c, d)
        if code == UNCODED or table[code] < 0 or (c | d) == 0:
            loc[k, 0], loc[k, 1] = NOT_OPEN, code
        elif not table[STORED + code] and has_capture(rules, True, a, b, c, d):
            if (c | d) & ((c | d) - np.uint64(1)) == 0:
                loc[k, 0], loc[k, 1] = FOUND, 1
            else:
                loc[k, 0], loc[k, 1] = CAPTURES, 0
        else:
            loc[k, 0], loc[k, 1] = LOCATED, table[code] * 4 + entry_of(rules, BINOM, a, b, c, d)


@njit(cache=True, inline="always")
def white_to_move(nsq, wtm, wm, wk, bm, bk):
    """The position with white to move (colour-flipped if black moves) and its material
    code; the code is :data:`NO_CODE` for more pieces of a kind than any slice code names."""
    if not wtm:
        a = turned(bm, nsq)
        b = turned(bk, nsq)
        bm = turned(wm, nsq)
        bk = turned(wk, nsq)
        wm, wk = a, b
    code = material_code(wm, wk, bm, bk)
    return wm, wk, bm, bk, (NO_CODE if code == UNCODED else code)


@njit(cache=True, inline="always")
def locate_one(nsq, width, limit, pos):
    """(material code, entry) of a position ``pos`` = (white to move, wm, wk, bm, bk), with
    no king run on either side where the variant has runs (``limit`` > 0)."""
    wtm, wm, wk, bm, bk = pos
    wm, wk, bm, bk, code = white_to_move(nsq, wtm, wm, wk, bm, bk)
    if code < 0 or (wm | wk) == 0 or (bm | bk) == 0:
        return code, 0
    return code, entry_index(nsq, width, limit, (wm, wk, bm, bk), (-1, 0, -1, 0), BINOM)


@njit(cache=True, inline="always")
def as_bitboards(pos):
    """A position given as Python integers, (white to move, wm, wk, bm, bk), with its
    bitboards as ``uint64``."""
    wtm, wm, wk, bm, bk = pos
    return wtm, np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk)


@njit(cache=True)
def locate(nsq, width, pos):
    """(material code, index) of a position given as Python integers, (white to move, wm,
    wk, bm, bk), after the colour flip."""
    return locate_one(nsq, width, 0, as_bitboards(pos))


@njit(cache=True, parallel=True)
def codes_batch(batch, nsq):
    """The material code of every position of a :class:`Batch` (:data:`NO_CODE` where no
    slice code names it)."""
    n = batch.wm.shape[0]
    codes = np.empty(n, dtype=np.int64)
    for i in prange(n):
        w = white_to_move(nsq, batch.wtm[i], batch.wm[i], batch.wk[i], batch.bm[i], batch.bk[i])
        codes[i] = w[4]
    return codes
