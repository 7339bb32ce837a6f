"""Where a position lies in the tables: its material code and its entry, seen with white to
move (the board turned half a turn, colours swapped, if black moves).

Positions are located one at a time (:func:`locate`, for the ``values`` part) or in rows
(:func:`locate_rows`, for the ``wdl`` part: each one's entry in the part's address space,
or what stands in the way of reading one).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tablebase.material.index import entry_index
from tablebase.material.slices import UNCODED, material_code
from tablebase.probe.pagetable import STORED
from tablebase.rules import movegen as mg
from tablebase.rules.bits import reversed_bits
from tablebase.rules.kernel import kernel

LOC_LOST = -1  # the side to move has no pieces: lost
LOC_WON = -2  # must capture (slice leaving captures to the prober), the opponent has 1 piece
LOC_CAPTURE = -3  # must capture (slice leaving captures to the prober): resolve the captures
LOC_MISSING = -4  # LOC_MISSING - code: the slice ``code`` is not loaded


@njit(cache=True, inline="always")
def entry_of(rules, binom, wm, wk, bm, bk):
    """Entry of a white-to-move position in its slice, with no king run on either side
    where the variant counts runs (Frisian, ``rules[6]`` > 0): the runs a probe without
    them means, and the runs after any capture (a capture ends the capturer's run, and the
    side that was captured from had none)."""
    return entry_index(rules[0], rules[5], rules[6], wm, wk, bm, bk, -1, 0, -1, 0, binom)


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
def locate_rows(table, nbr, rules, binom, rows, n, loc):
    """``loc[k]`` of the white-to-move positions ``rows[k]`` (wm, wk, bm, bk), ``k < n``:
    the entry in the flat tables counted in two-bit codes (byte ``loc >> 2``), or
    :data:`LOC_LOST`, :data:`LOC_WON`, :data:`LOC_CAPTURE` (both only in a slice that does
    not store captures) or ``LOC_MISSING - code``; ``table`` is the part's page table
    (:mod:`tablebase.probe.pagetable`: the slices' byte offsets and capture flags). A
    capture position of such a slice whose opponent has a single piece is won outright, as
    resolving it would find: any capture takes that piece, and a side without pieces has
    lost.

    The one home of these rules, written out in one loop over many positions (a
    :mod:`kernel <tablebase.rules.kernel>`: no reference counting, which doubled the cost of
    a lookup when a per-position helper took the tables)."""
    for k in range(n):
        a, b, c, d = rows[k, 0], rows[k, 1], rows[k, 2], rows[k, 3]
        if (a | b) == 0:
            loc[k] = LOC_LOST
            continue
        code = material_code(a, b, c, d)
        if code == UNCODED or table[code] < 0 or (c | d) == 0:
            loc[k] = LOC_MISSING - code  # no black pieces: no slice (the caller reports it)
        elif not table[STORED + code] and mg.has_capture(nbr, rules, True, a, b, c, d):
            loc[k] = LOC_WON if (c | d) & ((c | d) - np.uint64(1)) == 0 else LOC_CAPTURE
        else:
            loc[k] = table[code] * 4 + entry_of(rules, binom, a, b, c, d)


@njit(cache=True, inline="always")
def white_to_move(nsq, wtm, wm, wk, bm, bk):
    """The position with white to move (colour-flipped if black moves) and its material
    code; the code is -1 for more pieces of a kind than any slice code can name."""
    if not wtm:
        a = turned(bm, nsq)
        b = turned(bk, nsq)
        bm = turned(wm, nsq)
        bk = turned(wk, nsq)
        wm, wk = a, b
    code = material_code(wm, wk, bm, bk)
    return wm, wk, bm, bk, (-1 if code == UNCODED else code)


@njit(cache=True, inline="always")
def locate_one(nsq, width, wtm, wm, wk, bm, bk, binom, limit):
    """(material code, entry) of a position, with no king run on either side where the
    variant has runs (``limit`` > 0)."""
    wm, wk, bm, bk, code = white_to_move(nsq, wtm, wm, wk, bm, bk)
    if code < 0 or (wm | wk) == 0 or (bm | bk) == 0:
        return code, 0
    return code, entry_index(nsq, width, limit, wm, wk, bm, bk, -1, 0, -1, 0, binom)


@njit(cache=True)
def locate(nsq, width, wtm, wm, wk, bm, bk, binom):
    """(material code, index) of a position given as Python ints, after the colour flip."""
    return locate_one(
        nsq, width, wtm, np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk), binom, 0
    )


@njit(cache=True, parallel=True)
def codes_batch(wm, wk, bm, bk, wtm, nsq):
    n = wm.shape[0]
    codes = np.empty(n, dtype=np.int64)
    for i in prange(n):
        codes[i] = white_to_move(nsq, wtm[i], wm[i], wk[i], bm[i], bk[i])[4]
    return codes
