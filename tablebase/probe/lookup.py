"""The compiled look-ups of the prober: a position's entry read through the page table of a
part held in the block cache (:mod:`tablebase.probe.pagetable`), one position or a batch,
from the ``values`` part or from the two-bit ``wdl`` part.

**WDL probing invariant.** A position's result is its stored code if its slice stores
captures (``table[STORED + code]``) or the side to move has no capture; otherwise it is the
best, for the mover, of the negated results of the positions after each legal capture
(:mod:`tablebase.probe.captures`). The stored code of a capture position is read only in a
slice that stores captures.

A batch is answered level by level (:mod:`tablebase.probe.database`): the positions are
located and their codes read where their blocks are cached (:func:`gather_results`, in
parallel blocks of positions); the blocks missing are read and the positions that need them
probed again; the capture positions of slices that leave captures to the prober are expanded
into the positions after their captures, which form the next level.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tablebase.material.index import BINOM
from tablebase.probe.locate import (
    LOC_CAPTURE,
    LOC_LOST,
    LOC_MISSING,
    LOC_WON,
    locate_one,
    locate_rows,
    white_view,
)
from tablebase.probe.pagetable import WIDTHS, code_at, next_tick, read_code, read_entry, value_at

NO_TABLE = -2  # result code base: -2 - material code for a slice that is not loaded
NEEDS_CAPTURES = -10000  # result_quick: must capture; below NO_TABLE
PAGE_MISS = -20000  # PAGE_MISS - page: the block ``page`` is not in the cache; below the rest
CAPTURE = 2  # gather_results: the position must capture, in a slice leaving captures


@njit(cache=True, inline="always")
def paged_code(table, arena, stamps, e, t):
    """+1 / 0 / -1 stored at entry ``e`` (counted in two-bit codes from the part's byte
    addresses) of a part held in the block cache (:mod:`tablebase.probe.pagetable`), the
    block stamped ``t``; ``PAGE_MISS - page`` if its block is not cached."""
    c = code_at(table, arena, stamps, e, t)
    if c < 0:
        return PAGE_MISS - (-3 - c)
    return 1 if c == 1 else (-1 if c == 2 else 0)


@njit(cache=True)
def result_quick(table, arena, stamps, nbr, rules, wtm, wm, wk, bm, bk):
    """The single-probe path (bitboards as plain integers; the index tables are the module
    constants, to keep the call short): the result of a position whose side to move cannot
    capture or whose slice stores captures; ``NO_TABLE - code`` if its slice is not open,
    ``PAGE_MISS - address`` if its block is not cached (the entry's address counted in
    two-bit codes: its page is ``address >> (PAGE_SHIFT + 2)``), :data:`NEEDS_CAPTURES` if
    it must be resolved through its captures. ``table`` is the part's page table
    (:mod:`tablebase.probe.pagetable`)."""
    wm, wk, bm, bk = np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk)
    row = np.empty((1, 4), dtype=np.uint64)
    row[0, 0], row[0, 1], row[0, 2], row[0, 3] = white_view(rules[0], wtm, wm, wk, bm, bk)
    loc = np.empty(1, dtype=np.int64)
    locate_rows(table, nbr, rules, BINOM, row, 1, loc)
    e = loc[0]
    if e >= 0:
        r = paged_code(table, arena, stamps, e, next_tick(stamps))
        return PAGE_MISS - e if r <= PAGE_MISS else r
    if e == LOC_LOST:
        return -1
    if e == LOC_WON:
        return 1
    if e == LOC_CAPTURE:
        return NEEDS_CAPTURES
    return NO_TABLE - (LOC_MISSING - e)


BLOCK = 1 << 11  # positions located together


@njit(cache=True, parallel=True)
def gather_results(table, nbr, rules, binom, wtm, wm, wk, bm, bk, arena, stamps, out):
    """``out[i]`` (+1 / 0 / -1, or :data:`CAPTURE`) of the positions ``i`` of a batch,
    either side to move, whose blocks are cached; per position, where its block is not
    cached, its entry's address (counted in two-bit codes: the page is ``address >>
    (PAGE_SHIFT + 2)``; -1 where answered), how many lack one, and how many reach a slice
    that is not open (or none: more pieces of a kind than a slice holds; they get 3)."""
    t = next_tick(stamps)
    m = wm.shape[0]
    need = np.empty(m, dtype=np.int64)
    nsq = rules[0]
    nblk = (m + BLOCK - 1) // BLOCK
    missed = np.zeros(nblk, dtype=np.int64)
    closed = np.zeros(nblk, dtype=np.int64)
    for blk in prange(nblk):
        lo = blk * BLOCK
        hi = min(m, lo + BLOCK)
        rows = np.empty((hi - lo, 4), dtype=np.uint64)
        loc = np.empty(hi - lo, dtype=np.int64)
        for i in range(lo, hi):
            a, b, c, d = white_view(nsq, wtm[i], wm[i], wk[i], bm[i], bk[i])
            rows[i - lo, 0], rows[i - lo, 1], rows[i - lo, 2], rows[i - lo, 3] = a, b, c, d
        locate_rows(table, nbr, rules, binom, rows, hi - lo, loc)
        for i in range(lo, hi):  # the gather: nothing between the reads
            e = loc[i - lo]
            need[i] = -1
            if e >= 0:
                r = paged_code(table, arena, stamps, e, t)
                if r <= PAGE_MISS:
                    need[i] = e
                    missed[blk] += 1
                else:
                    out[i] = r
            elif e == LOC_LOST:
                out[i] = -1
            elif e == LOC_WON:
                out[i] = 1
            elif e == LOC_CAPTURE:
                out[i] = CAPTURE
            else:
                out[i] = 3
                closed[blk] += 1
    return need, missed.sum(), closed.sum()


@njit(cache=True)
def results_again(table, arena, stamps, sel, need, out):
    """``out[sel[k]]`` = the result at address ``need[k]`` (as :func:`gather_results`
    gives it) where its block is cached; per position, ``need[k]`` where it is not, else
    -1."""
    t = next_tick(stamps)
    rest = np.empty(sel.shape[0], dtype=np.int64)
    for k in range(sel.shape[0]):
        r = paged_code(table, arena, stamps, need[k], t)
        if r <= PAGE_MISS:
            rest[k] = need[k]
        else:
            out[sel[k]] = r
            rest[k] = -1
    return rest


def results_of_bytes(raw: np.ndarray, e: np.ndarray) -> np.ndarray:
    """+1 / 0 / -1 (int8) of the codes at entries ``e`` (counted as :func:`paged_code`
    counts them) from the bytes ``raw`` holding them, as :func:`paged_code` gives them."""
    c = (raw.astype(np.int64) >> ((e & 3) << 1)) & 3
    return np.where(c == 1, 1, np.where(c == 2, -1, 0)).astype(np.int8)


@njit(cache=True)
def probe_value(nsq, width, wtm, wm, wk, bm, bk, table, arena, stamps):
    """(material code, index, value) of a position given as Python ints, the value as
    :func:`read_entry` gives it (-2: the slice is not open; -3 - page: its block is not
    cached); the code is -1 (value -2) for more pieces of a kind than a slice holds. The
    binomials are the module's constant (one array argument fewer: a single probe's call
    costs about 90 ns per array it passes)."""
    code, idx = locate_one(
        nsq, width, wtm, np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk), BINOM, 0
    )
    if code < 0:
        return code, idx, -2
    t = next_tick(stamps)
    return code, idx, read_entry(table, arena, stamps, code, idx, t)


@njit(cache=True)
def value_at_entry(table, arena, stamps, code, idx):
    """:func:`read_entry` of entry ``idx`` of slice ``code``."""
    t = next_tick(stamps)
    return read_entry(table, arena, stamps, code, idx, t)


@njit(cache=True)
def code_at_entry(table, arena, stamps, code, idx):
    """:func:`read_code` of entry ``idx`` of slice ``code``."""
    t = next_tick(stamps)
    return read_code(table, arena, stamps, code, idx, t)


@njit(cache=True, parallel=True)
def gather_values(wm, wk, bm, bk, wtm, nsq, width, binom, limit, table, arena, stamps, out):
    """``out[i]`` = the value of position ``i`` where its block is cached (1 where the side
    to move has no pieces); per position, where its block is not cached, its entry's byte
    address and width as ``address << 1 | (width - 1)`` (-1 where answered); how many lack
    one, how many reach a slice that is not open (or none: more pieces of a kind than a
    slice holds; their answers are not written), and how many reach a slice of 16-bit
    values."""
    t = next_tick(stamps)
    m = wm.shape[0]
    need = np.empty(m, dtype=np.int64)
    closed = 0
    wide = 0
    for i in prange(m):  # the entries' addresses first: the look-ups after, many at once
        code, idx = locate_one(nsq, width, wtm[i], wm[i], wk[i], bm[i], bk[i], binom, limit)
        need[i] = -1
        if code < 0:
            closed += 1
            continue
        if code >> 6 == 0:  # the side to move has no pieces: lost
            out[i] = 1
            continue
        if table[code] < 0:
            closed += 1
            continue
        w = table[WIDTHS + code]
        wide += w == 2
        need[i] = ((table[code] + idx * w) << 1) | (w - 1)
    missed = 0
    for i in prange(m):
        if need[i] >= 0:
            r = value_at(table, arena, stamps, need[i] >> 1, (need[i] & 1) + 1, t)
            if r >= 0:
                out[i] = r
                need[i] = -1
            else:
                missed += 1
    return need, missed, closed, wide


@njit(cache=True)
def values_again(table, arena, stamps, sel, need, out):
    """``out[sel[k]]`` = the entry at ``need[k]`` (as :func:`gather_values` gives it) where
    its block is cached; per position, ``need[k]`` where it is not, else -1."""
    t = next_tick(stamps)
    rest = np.empty(sel.shape[0], dtype=np.int64)
    for k in range(sel.shape[0]):
        r = value_at(table, arena, stamps, need[k] >> 1, (need[k] & 1) + 1, t)
        if r >= 0:
            out[sel[k]] = r
            rest[k] = -1
        else:
            rest[k] = need[k]
    return rest
