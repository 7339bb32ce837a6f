"""The page table through which the compiled probes read a part held in the block cache.

A part (``values`` or ``wdl``) of an opened database is seen by the probes as one ``int64``
array, its *table* (:class:`tablebase.probe.pagedpart.PagedPart` owns it), and the cache's
``arena`` (the blocks' bytes, :data:`~tablebase.storage.chunkio.BLOCK_BYTES` a slot) and
``stamps`` (each slot's last use; the last element is the clock):

- ``table[code]``: the byte address of slice ``code``'s first block (a multiple of
  ``BLOCK_BYTES``: its first page times ``BLOCK_BYTES``), -1 if the slice is not open;
- ``table[WIDTHS + code]``: bytes per entry of the part (1, or 2 for 16-bit values);
- ``table[STORED + code]``: 1 if the slice's ``wdl`` part stores its capture positions'
  codes;
- ``table[PAGES + page]``: the slot holding block ``page``, or :data:`NOT_CACHED` /
  :data:`IN_FLIGHT`.

One array rather than four because a compiled function's every array argument costs about
90 ns a call (numba's dispatch types and unboxes each): a single probe passes three arrays
(the table, the arena, the stamps) and no more.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tablebase.probe.status import BLOCK_MISSING, FOUND, NOT_OPEN
from tablebase.storage.chunkio import BLOCK_BYTES

PAGE_SHIFT = BLOCK_BYTES.bit_length() - 1
assert 1 << PAGE_SHIFT == BLOCK_BYTES
PAGE_MASK = BLOCK_BYTES - 1
NOT_CACHED = -1  # table[PAGES + p]: the block is not in the cache
IN_FLIGHT = -2  # table[PAGES + p]: a thread is reading the block
WIDTHS = 4096  # table[WIDTHS + code]: bytes per entry
STORED = 8192  # table[STORED + code]: the wdl part stores capture positions' codes
PAGES = 12288  # table[PAGES + page]: the slot of block ``page``


class PartView(NamedTuple):
    """What a batch's compiled look-ups read of a part, as one argument: its table, the
    cache's arena and stamps. (A single probe passes the three apart: numba types a tuple
    argument in Python, a few microseconds a call, where a batch's call does not notice.)"""

    table: np.ndarray
    arena: np.ndarray
    stamps: np.ndarray


def new_table(pages: int) -> np.ndarray:
    """An empty table with room for ``pages`` pages: no slice open, no block cached."""
    table = np.full(PAGES + pages, NOT_CACHED, dtype=np.int64)
    table[WIDTHS:PAGES] = 0
    return table


@njit(cache=True, inline="always")
def next_tick(stamps):
    """Advance the cache's clock (the last element of ``stamps``) and return it: the
    stamp of every block a probe reads."""
    t = stamps[-1] + 1
    stamps[-1] = t
    return t


@njit(cache=True, inline="always")
def slot_of(table, stamps, p, tick):
    """The slot holding page ``p`` (stamped ``tick``), or -1 if it is not cached."""
    if p >= table.shape[0] - PAGES:
        return -1
    s = table[PAGES + p]
    if s < 0:
        return -1
    if stamps[s] != tick:  # written once a batch: a store per probe would bounce the line
        stamps[s] = tick
    return s


@njit(cache=True, inline="always")
def value_at(table, arena, stamps, addr, width, tick):
    """``(FOUND, the entry of width bytes (little-endian) at byte address addr)``, or
    ``(BLOCK_MISSING, page)`` if its block is not cached (:mod:`tablebase.probe.status`)."""
    p = addr >> PAGE_SHIFT
    s = slot_of(table, stamps, p, tick)
    if s < 0:
        return BLOCK_MISSING, p
    o = (np.int64(s) << PAGE_SHIFT) | (addr & PAGE_MASK)
    v = np.int64(arena[o])
    if width == 2:
        v |= np.int64(arena[o + 1]) << 8
    return FOUND, v


@njit(cache=True, inline="always")
def read_entry(table, arena, stamps, code, entry, tick):
    """The value at ``entry`` of slice ``code`` as :func:`value_at` answers, or
    ``(NOT_OPEN, code)`` if the slice is not open."""
    base = table[code]
    if base < 0:
        return NOT_OPEN, np.int64(code)
    width = table[WIDTHS + code]
    return value_at(table, arena, stamps, base + entry * width, width, tick)


@njit(cache=True, inline="always")
def code_at(table, arena, stamps, e, tick):
    """``(FOUND, the two-bit code at entry e)``, ``e`` counted in codes from the part's byte
    addresses (byte ``e >> 2``, four codes a byte), or ``(BLOCK_MISSING, page)`` if its
    block is not cached."""
    byte = e >> 2
    p = byte >> PAGE_SHIFT
    s = slot_of(table, stamps, p, tick)
    if s < 0:
        return BLOCK_MISSING, p
    o = (np.int64(s) << PAGE_SHIFT) | (byte & PAGE_MASK)
    return FOUND, (np.int64(arena[o]) >> ((e & 3) << 1)) & 3


@njit(cache=True, inline="always")
def read_code(table, arena, stamps, code, entry, tick):
    """The two-bit WDL code at ``entry`` of slice ``code`` (packed four to a byte) as
    :func:`code_at` answers, or ``(NOT_OPEN, code)`` if the slice is not open."""
    base = table[code]
    if base < 0:
        return NOT_OPEN, np.int64(code)
    return code_at(table, arena, stamps, base * 4 + entry, tick)
