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

from tablebase.material.slices import UNCODED
from tablebase.probe.locate import NO_CODE, as_bitboards, locate_one, locate_rows, white_view
from tablebase.probe.pagetable import WIDTHS, code_at, next_tick, read_code, read_entry, value_at
from tablebase.probe.status import (
    ANSWERED,
    BLOCK_MISSING,
    CAPTURES,
    CLOSED,
    FOUND,
    LOCATED,
    MUST_CAPTURE,
    NOT_OPEN,
)
from tablebase.rules.variants import rules_of
from tablebase.storage.values import result_of_code


@njit(cache=True, inline="always")
def result_of(c):
    """+1 / 0 / -1 of a two-bit WDL code (1 win, 2 loss, 0 draw)."""
    return 1 if c == 1 else (-1 if c == 2 else 0)


# --- the wdl part ---------------------------------------------------------------------


@njit(cache=True)
def result_quick(table, arena, stamps, nbr, fields, pos):
    """The single-probe path of the ``wdl`` part, the position ``pos`` given as Python
    integers (white to move, wm, wk, bm, bk); the index tables are the module constants, to
    keep the call short. Answers (:mod:`tablebase.probe.status`) ``(FOUND, result)``
    (+1 / 0 / -1), ``(NOT_OPEN, code)`` if its slice is not open, ``(BLOCK_MISSING,
    address)`` if its block is not cached (the entry's address counted in two-bit codes:
    its page is ``address >> (PAGE_SHIFT + 2)``), ``(CAPTURES, 0)`` if it must be resolved
    through its captures. ``table`` is the part's page table
    (:mod:`tablebase.probe.pagetable`). The variant's rules come as its neighbour table
    and :attr:`~tablebase.rules.variants.Variant.rule_fields` (a Python caller's record
    would be typed at every call)."""
    rules = rules_of(nbr, fields)
    wtm, wm, wk, bm, bk = as_bitboards(pos)
    row = np.empty((1, 4), dtype=np.uint64)
    row[0, 0], row[0, 1], row[0, 2], row[0, 3] = white_view(rules.nsq, wtm, wm, wk, bm, bk)
    loc = np.empty((1, 2), dtype=np.int64)
    locate_rows(table, rules, row, 1, loc)
    status, x = loc[0, 0], loc[0, 1]
    if status == LOCATED:
        found, c = code_at(table, arena, stamps, x, next_tick(stamps))
        if found == FOUND:
            return FOUND, np.int64(result_of(c))
        return BLOCK_MISSING, x
    return status, x


BLOCK = 1 << 11  # positions located together


@njit(cache=True, parallel=True)
def gather_results(part, rules, batch, out):
    """``out[i]`` (+1 / 0 / -1, or :data:`~tablebase.probe.status.MUST_CAPTURE`) of the
    positions ``i`` of a :class:`~tablebase.probe.locate.Batch`, either side to move, whose
    blocks are cached, from the ``wdl`` part seen through ``part`` (a
    :class:`~tablebase.probe.pagetable.PartView`); per position, where its block is not
    cached, its entry's address (counted in two-bit codes: the page is ``address >>
    (PAGE_SHIFT + 2)``; :data:`~tablebase.probe.status.ANSWERED` where answered), how many
    lack one, and how many reach a slice that is not open (or none: more pieces of a kind
    than a slice holds; they get :data:`~tablebase.probe.status.CLOSED`)."""
    table, arena, stamps = part.table, part.arena, part.stamps
    wtm, wm, wk, bm, bk = batch.wtm, batch.wm, batch.wk, batch.bm, batch.bk
    t = next_tick(stamps)
    m = wm.shape[0]
    need = np.empty(m, dtype=np.int64)
    nsq = rules.nsq
    nblk = (m + BLOCK - 1) // BLOCK
    missed = np.zeros(nblk, dtype=np.int64)
    closed = np.zeros(nblk, dtype=np.int64)
    for blk in prange(nblk):
        lo = blk * BLOCK
        hi = min(m, lo + BLOCK)
        rows = np.empty((hi - lo, 4), dtype=np.uint64)
        loc = np.empty((hi - lo, 2), dtype=np.int64)
        for i in range(lo, hi):
            a, b, c, d = white_view(nsq, wtm[i], wm[i], wk[i], bm[i], bk[i])
            rows[i - lo, 0], rows[i - lo, 1], rows[i - lo, 2], rows[i - lo, 3] = a, b, c, d
        locate_rows(table, rules, rows, hi - lo, loc)
        for i in range(lo, hi):  # the gather: nothing between the reads
            status, x = loc[i - lo, 0], loc[i - lo, 1]
            need[i] = ANSWERED
            if status == LOCATED:
                found, c = code_at(table, arena, stamps, x, t)
                if found == FOUND:
                    out[i] = result_of(c)
                else:
                    need[i] = x
                    missed[blk] += 1
            elif status == FOUND:
                out[i] = x
            elif status == CAPTURES:
                out[i] = MUST_CAPTURE
            else:
                out[i] = CLOSED
                closed[blk] += 1
    return need, missed.sum(), closed.sum()


@njit(cache=True)
def results_again(part, sel, need, out):
    """``out[sel[k]]`` = the result at address ``need[k]`` (as :func:`gather_results`
    gives it) where its block is cached; per position, ``need[k]`` where it is not, else
    :data:`~tablebase.probe.status.ANSWERED`."""
    table, arena, stamps = part.table, part.arena, part.stamps
    t = next_tick(stamps)
    rest = np.empty(sel.shape[0], dtype=np.int64)
    for k in range(sel.shape[0]):
        found, c = code_at(table, arena, stamps, need[k], t)
        if found == FOUND:
            out[sel[k]] = result_of(c)
            rest[k] = ANSWERED
        else:
            rest[k] = need[k]
    return rest


def results_of_bytes(raw: np.ndarray, e: np.ndarray) -> np.ndarray:
    """+1 / 0 / -1 (int8) of the codes at entries ``e`` (counted in two-bit codes, as
    :func:`gather_results` counts them) from the bytes ``raw`` holding them."""
    c = (raw.astype(np.int64) >> ((e & 3) << 1)) & 3
    return np.where(c == 1, 1, np.where(c == 2, -1, 0)).astype(np.int8)


def result_of_byte(b: int, e: int) -> int:
    """+1 / 0 / -1 of the code at entry ``e`` (counted in two-bit codes) from the byte ``b``
    holding it (a single probe's byte read straight from its block)."""
    return result_of_code((b >> ((e & 3) << 1)) & 3)


@njit(cache=True)
def code_at_entry(table, arena, stamps, code, idx):
    """:func:`~tablebase.probe.pagetable.read_code` of entry ``idx`` of slice ``code``."""
    t = next_tick(stamps)
    return read_code(table, arena, stamps, code, idx, t)


# --- the values part ------------------------------------------------------------------


@njit(cache=True)
def probe_value(table, arena, stamps, nsq, width, pos):
    """(material code, index, status, x) of a position ``pos`` given as Python integers
    (white to move, wm, wk, bm, bk): its value read as
    :func:`~tablebase.probe.pagetable.read_entry` answers (``FOUND``, ``NOT_OPEN``,
    ``BLOCK_MISSING`` and the page), with the code and index it was located at (code
    :data:`~tablebase.probe.locate.NO_CODE`, ``NOT_OPEN``, for more pieces of a kind than a
    slice holds). The binomials are the module's constant (one array argument fewer: a
    single probe's call costs about 90 ns per array it passes)."""
    code, idx = locate_one(nsq, width, 0, as_bitboards(pos))
    if code == NO_CODE:
        return code, idx, NOT_OPEN, np.int64(UNCODED)
    t = next_tick(stamps)
    status, x = read_entry(table, arena, stamps, code, idx, t)
    return code, idx, status, x


@njit(cache=True)
def value_at_entry(table, arena, stamps, code, idx):
    """:func:`~tablebase.probe.pagetable.read_entry` of entry ``idx`` of slice ``code``."""
    t = next_tick(stamps)
    return read_entry(table, arena, stamps, code, idx, t)


@njit(cache=True, inline="always")
def value_place(addr, width):
    """Where a batch finds a value again: its byte address and width in one integer (the
    ``need`` of :func:`gather_values`; the page is ``place >> (PAGE_SHIFT + 1)``)."""
    return (addr << 1) | (width - 1)


@njit(cache=True, inline="always")
def value_at_place(table, arena, stamps, place, t):
    """:func:`~tablebase.probe.pagetable.value_at` of a :func:`value_place`."""
    return value_at(table, arena, stamps, place >> 1, (place & 1) + 1, t)


@njit(cache=True, parallel=True)
def gather_values(part, batch, nsq, width, limit, out):
    """``out[i]`` = the value of position ``i`` of a :class:`~tablebase.probe.locate.Batch`
    where its block is cached (1 where the side to move has no pieces), from the ``values``
    part seen through ``part`` (a :class:`~tablebase.probe.pagetable.PartView`); per
    position, where its block is not cached, the :func:`value_place` of its entry
    (:data:`~tablebase.probe.status.ANSWERED` where answered); how many lack one, how many
    reach a slice that is not open (or none: more pieces of a kind than a slice holds;
    their answers are not written), and how many reach a slice of 16-bit values."""
    table, arena, stamps = part.table, part.arena, part.stamps
    t = next_tick(stamps)
    m = batch.wm.shape[0]
    need = np.empty(m, dtype=np.int64)
    closed = 0
    wide = 0
    for i in prange(m):  # the entries' addresses first: the look-ups after, many at once
        pos = (batch.wtm[i], batch.wm[i], batch.wk[i], batch.bm[i], batch.bk[i])
        code, idx = locate_one(nsq, width, limit, pos)
        need[i] = ANSWERED
        if code == NO_CODE:
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
        need[i] = value_place(table[code] + idx * w, w)
    missed = 0
    for i in prange(m):
        if need[i] != ANSWERED:
            found, v = value_at_place(table, arena, stamps, need[i], t)
            if found == FOUND:
                out[i] = v
                need[i] = ANSWERED
            else:
                missed += 1
    return need, missed, closed, wide


@njit(cache=True)
def values_again(part, sel, need, out):
    """``out[sel[k]]`` = the value at ``need[k]`` (as :func:`gather_values` gives it) where
    its block is cached; per position, ``need[k]`` where it is not, else
    :data:`~tablebase.probe.status.ANSWERED`."""
    table, arena, stamps = part.table, part.arena, part.stamps
    t = next_tick(stamps)
    rest = np.empty(sel.shape[0], dtype=np.int64)
    for k in range(sel.shape[0]):
        found, v = value_at_place(table, arena, stamps, need[k], t)
        if found == FOUND:
            out[sel[k]] = v
            rest[k] = ANSWERED
        else:
            rest[k] = need[k]
    return rest
