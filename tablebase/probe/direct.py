"""Entries read straight from group-coded blocks, without inflating or caching the blocks.

A batch that touches many blocks with few positions in each (random positions across a
database larger than the cache) would inflate a 16 KiB block for every one or two
positions. A part written group-coded (:mod:`tablebase.storage.groupcode`) lets a batch
read each such block's stored bytes, check them against the block's CRC-32 of its stored
bytes (``<part>_zcrc32``) the first time, read the block's row of group offsets (from
``<part>_groups``) and decode only the groups its positions fall in; once checked, only
those groups' bytes are read, the bytes of nearby blocks with one ``pread``. All of it
runs compiled, without the GIL, in parallel over the blocks: no Python per block.

``pread`` is libc's and the CRC-32 ISA-L's (the function the ``isal`` package's zlib
module is built on; zlib's own ``crc32`` where that is not exported), both called by name
as external functions whose addresses are given to LLVM at import (so the code is cached
like the rest): :data:`AVAILABLE` is False if neither CRC-32 can be found, and batches then
read whole blocks through the cache as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from isal import isal_zlib
from llvmlite.binding import add_symbol
from numba import njit, prange, types

from tablebase.probe.pagetable import PAGE_MASK, STORED, WIDTHS
from tablebase.storage.groupcode import TABLE_SIZE, byte_in_group, group_byte, group_start

if TYPE_CHECKING:
    from tablebase.probe.blocks import PartSource


def _bind() -> bool:
    """Give the compiled code ``pread`` and a CRC-32 under the names it calls them by
    (:data:`_pread`, :data:`_crc32`); False where they cannot be found. The code refers to
    them by name, not by address, so numba caches it like any other function."""
    try:
        pread = ctypes.CDLL(None).pread
    except (OSError, AttributeError):
        return False
    crc = None
    try:
        crc = ctypes.CDLL(isal_zlib.__file__).crc32_gzip_refl
    except (OSError, AttributeError):
        name = ctypes.util.find_library("z")
        try:
            crc = ctypes.CDLL(name).crc32 if name else None
        except (OSError, AttributeError):
            crc = None
    if crc is None:
        return False
    add_symbol("tablebase_pread", ctypes.cast(pread, ctypes.c_void_p).value)
    add_symbol("tablebase_crc32", ctypes.cast(crc, ctypes.c_void_p).value)
    return True


AVAILABLE = _bind()
# pread(fd, buffer, count, offset); crc32(crc, buffer, length): ISA-L's takes a uint32 and
# a uint64, zlib's an unsigned long and an unsigned int; both return the CRC in 32 bits,
# and the arguments are passed in 64-bit registers either way
_pread = types.ExternalFunction(
    "tablebase_pread", types.intp(types.intc, types.uintp, types.uintp, types.int64)
)
_crc32 = types.ExternalFunction(
    "tablebase_crc32", types.uint32(types.uint64, types.uintp, types.uint64)
)

OK, SHORT, CRC, UNDECODABLE = 0, 1, 2, 3  # the state of each block read
STATES = {
    SHORT: "truncated",
    CRC: "checksum mismatch of its stored bytes",
    UNDECODABLE: "its groups do not decode",
}


WINDOW = 1 << 18  # bytes of consecutive blocks read with one pread at most
RUN_ROWS = 1024  # rows of consecutive blocks read with one pread
GAP_BYTES = 1 << 13  # needed bytes this close are read with one pread, the gap with them


@njit(cache=True, nogil=True, inline="always")
def _flush(fd, buf, lo, a, b, bad_from):
    """``pread`` bytes ``a`` to ``b`` of a run (its first byte at file offset ``lo``) into
    ``buf[a:b]``; where the read comes back short, the run's bytes from where it stopped
    are not as stored: the least such byte."""
    if b <= a:
        return bad_from
    got = _pread(fd, buf[a:].ctypes.data, b - a, lo + a)
    if got != b - a:
        return min(bad_from, a + max(got, 0))
    return bad_from


class Blocks(NamedTuple):
    """Where a part's group-coded blocks lie, page by page and slice by slice, as one
    argument of :func:`read_entries` (:class:`tablebase.probe.pagedpart.PagedPart` keeps the
    arrays and makes this record for each batch that reads blocks directly)."""

    page_code: np.ndarray  # per page: the material code of its slice
    offsets: np.ndarray  # per page: where its block's stored bytes lie in the file
    sizes: np.ndarray  # ... how many they are (-1: not group-coded, or a resident slice)
    zcrcs: np.ndarray  # ... their CRC-32
    verified: np.ndarray  # ... 1 once the block was read whole and checked (uint8)
    fds: np.ndarray  # per slice (material code): the file descriptor of its file
    first_page: np.ndarray  # ... its first page
    groups_at: np.ndarray  # ... where its rows of group offsets lie in the file
    row_lens: np.ndarray  # ... entries per row
    shifts: np.ndarray  # ... the group size, as a shift
    tabidx: np.ndarray  # ... its decoding table's row in ``tables``
    tables: np.ndarray  # the decoding tables
    max_size: int  # the largest block's stored bytes


PLACE = "fd offset size zcrc rows_at row_len shift block"  # read_byte's place, in order
# (the file descriptor; where the block's stored bytes lie, how many, their CRC-32; where
# the part's rows of group offsets lie, entries a row, the group size as a shift; the
# block's number in its slice's part): a plain tuple of integers, which numba's dispatch
# types in C, where a namedtuple costs about a microsecond more a call (measured)


@njit(cache=True, nogil=True, parallel=True)
def read_entries(uniq, bounds, byte_addr, blocks, gap, out, state):
    """For each page ``uniq[j]`` (a block of the part; in increasing order) and its
    positions ``bounds[j]`` to ``bounds[j + 1]`` (their byte addresses ``byte_addr``, in
    the part's address space of ``BLOCK_BYTES`` a page): the byte at each address into
    ``out`` and the block's state (:data:`OK`, or what was wrong) into ``state[j]``; where
    each block lies, in ``blocks`` (:class:`Blocks`).

    Blocks of one slice that lie close together in the file form a run (at most
    :data:`WINDOW` bytes, whose rows are read with one ``pread``). A block is needed whole
    and checked against its CRC-32 the first time a process reads it (``verified[p]``
    then set); after that only the bytes of the groups its positions fall in. The bytes
    a run needs (whole blocks, and each position's group) are read with one ``pread``
    wherever they lie within ``gap`` bytes of each other (:data:`GAP_BYTES`: a call
    costs about as much as copying a few KiB), two groups of one block as two of two
    blocks: a batch that touches most blocks of a slice reads it in long sequential
    reads, one with a position every few blocks reads just their groups."""
    page_code, first_page, fds = blocks.page_code, blocks.first_page, blocks.fds
    groups_at, row_lens, shifts = blocks.groups_at, blocks.row_lens, blocks.shifts
    tabidx, tables, offsets = blocks.tabidx, blocks.tables, blocks.offsets
    sizes, zcrcs, verified = blocks.sizes, blocks.zcrcs, blocks.verified
    max_size = blocks.max_size
    n = uniq.shape[0]
    stripes = min(n, 256)
    widest = max(row_lens.max(), 1)
    for t in prange(stripes):
        j = t * n // stripes
        stop = (t + 1) * n // stripes
        x0 = bounds[j]  # the stripe's first position
        m = bounds[stop] - x0
        buf = np.empty(WINDOW + max_size + 8, dtype=np.uint8)
        rows = np.empty(RUN_ROWS * widest, dtype=np.uint16)
        # the byte ranges a run needs (a block's, or a position's group), relative to the
        # run's start; per position its group's first bit and the end of its range
        need_lo = np.empty(m + RUN_ROWS, dtype=np.int64)
        need_hi = np.empty(m + RUN_ROWS, dtype=np.int64)
        first_bit = np.empty(m, dtype=np.int64)
        pos_hi = np.empty(m, dtype=np.int64)
        while j < stop:
            p = uniq[j]
            code = page_code[p]
            k0 = p - first_page[code]
            lo = offsets[p]
            hi = lo + sizes[p]
            e = j + 1  # the run: pages of the same slice, forward in the file, close
            while e < stop:
                q = uniq[e]
                if page_code[q] != code or q - p >= RUN_ROWS or offsets[q] < hi:
                    break
                if offsets[q] + sizes[q] - lo > WINDOW:
                    break
                hi = offsets[q] + sizes[q]
                e += 1
            fd = fds[code]
            row_len = row_lens[code]
            shift = shifts[code]
            nrows = uniq[e - 1] - first_page[code] - k0 + 1
            rows_ok = (
                _pread(
                    fd, rows.ctypes.data, 2 * row_len * nrows, groups_at[code] + 2 * row_len * k0
                )
                == 2 * row_len * nrows
            )
            table = tables[tabidx[code]]
            k = 0  # ranges so far
            for i in range(j, e):  # what each block needs, relative to the run's start
                q = uniq[i]
                state[i] = OK
                if not rows_ok:
                    continue
                base = offsets[q] - lo
                size = sizes[q]
                r = (q - first_page[code] - k0) * row_len
                row = rows[r : r + row_len]
                whole = verified[q] == 0
                if whole:
                    need_lo[k] = base
                    need_hi[k] = base + size
                    k += 1
                first = k
                for x in range(bounds[i], bounds[i + 1]):
                    g = (byte_addr[x] & PAGE_MASK) >> shift
                    bit = group_start(row, g)
                    if g + 1 < row_len - 1:
                        end = (bit + row[g + 1] + 7) >> 3
                    else:
                        end = size
                    a = base + (bit >> 3)
                    b = base + min(end + 4, size)  # the decoder peeks past a token
                    if b <= a:
                        state[i] = UNDECODABLE
                    first_bit[x - x0] = bit
                    pos_hi[x - x0] = base + size if whole else b
                    if not whole:  # in order within the block (few positions: insertion)
                        y = k
                        while y > first and need_lo[y - 1] > a:
                            need_lo[y] = need_lo[y - 1]
                            need_hi[y] = need_hi[y - 1]
                            y -= 1
                        need_lo[y] = a
                        need_hi[y] = b
                        k += 1
                if state[i] != OK:
                    k = first - 1 if whole else first  # nothing of it is read
            bad_from = hi - lo  # needed bytes from here on were not read whole
            a = -1
            b = -1
            for y in range(k):
                if a >= 0 and need_lo[y] - b <= gap:
                    b = max(b, need_hi[y])
                    continue
                if a >= 0:
                    bad_from = _flush(fd, buf, lo, a, b, bad_from)
                a = need_lo[y]
                b = need_hi[y]
            if a >= 0:
                bad_from = _flush(fd, buf, lo, a, b, bad_from)
            for i in range(j, e):
                q = uniq[i]
                if state[i] != OK:
                    continue
                if not rows_ok:
                    state[i] = SHORT
                    continue
                for x in range(bounds[i], bounds[i + 1]):
                    if pos_hi[x - x0] > bad_from:
                        state[i] = SHORT
                if state[i] != OK:
                    continue
                base = offsets[q] - lo
                size = sizes[q]
                if verified[q] == 0:
                    if _crc32(0, buf[base:].ctypes.data, size) != zcrcs[q]:
                        state[i] = CRC
                        continue
                    verified[q] = 1
                chunk = buf[base : base + size]
                for x in range(bounds[i], bounds[i + 1]):
                    at = byte_addr[x] & PAGE_MASK
                    want = at - ((at >> shift) << shift)
                    b = byte_in_group(chunk, first_bit[x - x0], table, want)
                    if b < 0:
                        state[i] = UNDECODABLE
                        break
                    out[x] = b
            j = e


@njit(cache=True, nogil=True)
def read_byte(place, table, at, buf, row):
    """``(OK, the byte at at)`` of a block (``place``, :data:`PLACE`), decoded with ``table``, read
    with ``buf`` and ``row`` (room enough), or ``(state, 0)`` where the block is not as
    stored (:data:`STATES`)."""
    fd, offset, size, zcrc, rows_at, row_len, shift, k = place
    if _pread(fd, buf.ctypes.data, size, offset) != size:
        return SHORT, 0
    if _crc32(0, buf.ctypes.data, size) != zcrc:
        return CRC, 0
    if _pread(fd, row.ctypes.data, 2 * row_len, rows_at + 2 * row_len * k) != 2 * row_len:
        return SHORT, 0
    b = group_byte(buf[:size], row[:row_len], table, at, shift)
    if b < 0:
        return UNDECODABLE, 0
    return OK, b


DIRECT_BELOW = 32  # a batch's blocks are read directly below this many positions a block
DIRECT_SHARE = 8  # ... when they are more than this share of the cache's slots


def reads_directly(positions: int, blocks: int, slots: int) -> bool:
    """True if a batch's ``positions`` in ``blocks`` missing group-coded blocks are read
    straight from the files rather than through a cache of ``slots`` blocks: few
    positions a block (inflating a block for each would cost far more than decoding
    their groups), and more blocks than an eighth of the cache (fewer are cached, for the
    batches after)."""
    return blocks > 0 and positions < DIRECT_BELOW * blocks and blocks > slots // DIRECT_SHARE


class DirectIndex:
    """The page-indexed places of a part's group-coded blocks (this module):
    per page its stored bytes' offset, length (-1: not group-coded, or a resident slice) and
    CRC-32; per slice (code) its file descriptor, first page, rows' offset and length, group
    size (as a shift) and decoding table. Replaced, never changed, when a slice is added."""

    def __init__(self) -> None:
        self.offsets = np.zeros(0, dtype=np.int64)
        self.sizes = np.zeros(0, dtype=np.int64)
        self.zcrcs = np.zeros(0, dtype=np.uint32)
        self.verified = np.zeros(0, dtype=np.uint8)  # 1: the block was checked whole
        self.fds = np.full(STORED - WIDTHS, -1, dtype=np.int32)
        self.first_page = np.zeros(STORED - WIDTHS, dtype=np.int64)
        self.groups_at = np.zeros(STORED - WIDTHS, dtype=np.int64)
        self.tabidx = np.zeros(STORED - WIDTHS, dtype=np.int32)
        self.row_lens = np.zeros(STORED - WIDTHS, dtype=np.int64)
        self.shifts = np.zeros(STORED - WIDTHS, dtype=np.int64)
        self.tables = np.zeros((0, TABLE_SIZE), dtype=np.int32)
        self.max_size = 0
        self.any = False

    def blocks(self, page_code: np.ndarray) -> Blocks:
        """The record :func:`tablebase.probe.direct.read_entries` reads, pages' slices
        ``page_code``."""
        return Blocks(
            page_code, self.offsets, self.sizes, self.zcrcs, self.verified, self.fds,
            self.first_page, self.groups_at, self.row_lens, self.shifts, self.tabidx,
            self.tables, self.max_size,
        )  # fmt: skip

    def grown(self, code: int, first: int, source: PartSource, resident: bool) -> DirectIndex:
        """A copy with slice ``code``'s pages (``source``'s blocks from page ``first``)."""
        g = DirectIndex()
        n = first + source.blocks
        g.offsets = np.zeros(n, dtype=np.int64)
        g.sizes = np.full(n, -1, dtype=np.int64)
        g.zcrcs = np.zeros(n, dtype=np.uint32)
        g.verified = np.zeros(n, dtype=np.uint8)
        m = self.offsets.shape[0]
        g.offsets[:m], g.sizes[:m], g.zcrcs[:m] = self.offsets, self.sizes, self.zcrcs
        g.verified[:m] = self.verified
        for a in ("fds", "first_page", "groups_at", "tabidx", "row_lens", "shifts"):
            setattr(g, a, getattr(self, a).copy())
        g.tables, g.max_size, g.any = self.tables, self.max_size, self.any
        groups = getattr(source, "groups", None)
        reader = getattr(source, "reader", None)
        if groups is None or reader is None or resident or (reader.masks != 0).any():
            return g
        g.offsets[first:n] = reader.offsets
        g.sizes[first:n] = reader.sizes
        g.zcrcs[first:n] = groups.zcrcs
        fd = source.fd
        assert fd is not None  # a part read by a BlockReader, open
        g.fds[code] = fd
        g.first_page[code] = first
        g.groups_at[code] = groups.at
        g.row_lens[code] = groups.row_len
        g.shifts[code] = groups.shift
        g.tabidx[code] = g.tables.shape[0]
        g.tables = np.concatenate([g.tables, groups.table[None, :]])
        g.max_size = max(g.max_size, int(reader.sizes.max(initial=0)))
        g.any = True
        return g
