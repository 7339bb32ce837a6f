"""Entries read straight from group-coded blocks, without inflating or caching the blocks.

A batch that touches many blocks with few positions in each (random positions across a
database larger than the cache) would inflate a 16 KiB block for every one or two
positions. A part written group-coded (:mod:`tablebase.storage.groupcode`) lets a batch
read each such block's stored bytes (one ``pread``), check them against the block's
CRC-32 of its stored bytes (``<part>_zcrc32``), read the block's row of group offsets (one
``pread`` of ``<part>_groups``) and decode only the groups its positions fall in. All of
it runs compiled, without the GIL, in parallel over the blocks: no Python per block.

``pread`` is libc's and the CRC-32 ISA-L's (the function the ``isal`` package's zlib
module is built on; zlib's own ``crc32`` where that is not exported), both called through
``ctypes``: :data:`AVAILABLE` is False if neither CRC-32 can be found, and batches then read
whole blocks through the cache as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
from numba import njit, prange

from tablebase.storage.groupcode import GROUP_BYTES, byte_in_group, group_byte, group_start
from tablebase.storage.paged import PAGE_MASK


def _bind() -> tuple[object, object] | None:
    """``(pread, crc32)`` as ctypes functions, or None where they cannot be found."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pread = libc.pread
        pread.restype = ctypes.c_ssize_t
        pread.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64]
    except (OSError, AttributeError):
        return None
    crc = None
    try:
        from isal import isal_zlib

        crc = ctypes.CDLL(isal_zlib.__file__).crc32_gzip_refl
        crc.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64]
    except (OSError, AttributeError, ImportError):
        name = ctypes.util.find_library("z")
        try:
            crc = ctypes.CDLL(name).crc32 if name else None
            if crc is not None:
                crc.argtypes = [ctypes.c_ulong, ctypes.c_void_p, ctypes.c_uint]
        except (OSError, AttributeError):
            crc = None
    if crc is None:
        return None
    crc.restype = ctypes.c_uint32
    return pread, crc


_BOUND = _bind()
AVAILABLE = _BOUND is not None
if _BOUND is not None:
    _pread, _crc32 = _BOUND
else:  # never called: AVAILABLE is False
    _pread = _crc32 = None

OK, SHORT, CRC, UNDECODABLE = 0, 1, 2, 3  # the state of each block a batch read
STATES = {
    SHORT: "truncated",
    CRC: "checksum mismatch of its stored bytes",
    UNDECODABLE: "its groups do not decode",
}


WINDOW = 1 << 18  # bytes of consecutive blocks read with one pread
RUN_ROWS = 1024  # rows of consecutive blocks read with one pread
SPARSE_BYTES = 2048  # a run of checked blocks with more stored bytes a position: groups read


@njit(nogil=True, parallel=True)  # not cached: numba cannot cache ctypes calls
def read_entries(
    uniq, bounds, byte_addr, page_code, first_page, fds, groups_at, row_len, tabidx, tables,
    offsets, sizes, zcrcs, max_size, verified, out, state,
):  # fmt: skip
    """For each page ``uniq[j]`` (a block of the part; in increasing order) and its
    positions ``bounds[j]`` to ``bounds[j + 1]`` (their byte addresses ``byte_addr``, in
    the part's address space of ``BLOCK_BYTES`` a page): the byte at each address into
    ``out`` and the block's state (:data:`OK`, or what was wrong) into ``state[j]``. Per
    page: its slice ``page_code``, whose first page is ``first_page``, file descriptor
    ``fds``, rows at ``groups_at`` and decoding table ``tables[tabidx]``; the block's
    stored bytes at ``offsets``, ``sizes`` long, with CRC-32 ``zcrcs``.

    Blocks of one slice that lie close together in the file are read in runs (one
    ``pread`` of up to :data:`WINDOW` bytes and one of their rows): a batch that touches
    most blocks of a slice reads it in long sequential reads. A block is read whole and
    checked against its CRC-32 the first time (``verified[p]`` then set); after that only
    the bytes of the groups its positions fall in are read (a run of blocks all checked
    before reads only their rows)."""
    n = uniq.shape[0]
    stripes = min(n, 256)
    for t in prange(stripes):
        buf = np.empty(WINDOW + max_size + 8, dtype=np.uint8)
        rows = np.empty((RUN_ROWS, row_len), dtype=np.uint16)
        j = t * n // stripes
        stop = (t + 1) * n // stripes
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
            last = uniq[e - 1] - first_page[code]
            nrows = last - k0 + 1
            got_rows = _pread(
                fd, rows.ctypes.data, 2 * row_len * nrows, groups_at[code] + 2 * row_len * k0
            )
            table = tables[tabidx[code]]
            checked = True
            for i in range(j, e):
                checked = checked and verified[uniq[i]] != 0
            sparse = hi - lo > SPARSE_BYTES * (bounds[e] - bounds[j])
            if checked and sparse:  # every block checked before, few positions: their groups
                for i in range(j, e):
                    q = uniq[i]
                    if got_rows != 2 * row_len * nrows:
                        state[i] = SHORT
                        continue
                    row = rows[q - first_page[code] - k0]
                    state[i] = OK
                    for x in range(bounds[i], bounds[i + 1]):
                        at = byte_addr[x] & PAGE_MASK
                        g = at // GROUP_BYTES
                        start = group_start(row, g)
                        first = start >> 3
                        if g + 1 < row_len - 1:
                            end = (start + row[g + 1] + 7) >> 3
                        else:
                            end = sizes[q]
                        end = min(end + 4, sizes[q])  # the decoder peeks past the last token
                        if end <= first or end - first > buf.shape[0]:
                            state[i] = UNDECODABLE
                            break
                        if (
                            _pread(fd, buf.ctypes.data, end - first, offsets[q] + first)
                            != end - first
                        ):
                            state[i] = SHORT
                            break
                        b = byte_in_group(
                            buf[: end - first], start & 7, table, at - g * GROUP_BYTES
                        )
                        if b < 0:
                            state[i] = UNDECODABLE
                            break
                        out[x] = b
                j = e
                continue
            got = _pread(fd, buf.ctypes.data, hi - lo, lo)
            for i in range(j, e):
                q = uniq[i]
                at = offsets[q] - lo
                size = sizes[q]
                if got != hi - lo or got_rows != 2 * row_len * nrows:
                    state[i] = SHORT
                    continue
                if verified[q] == 0 and _crc32(0, buf[at:].ctypes.data, size) != zcrcs[q]:
                    state[i] = CRC
                    continue
                verified[q] = 1
                chunk = buf[at : at + size]
                row = rows[q - first_page[code] - k0]
                state[i] = OK
                for x in range(bounds[i], bounds[i + 1]):
                    b = group_byte(chunk, row, table, byte_addr[x] & PAGE_MASK)
                    if b < 0:
                        state[i] = UNDECODABLE
                        break
                    out[x] = b
            j = e


@njit(nogil=True)  # not cached: numba cannot cache ctypes calls
def read_byte(fd, offset, size, zcrc, rows_at, row_len, k, table, at, buf, row):
    """The byte at ``at`` of block ``k`` of a part (its stored bytes at ``offset``, ``size``
    long, with CRC-32 ``zcrc``; its rows at ``rows_at``), read with ``buf`` and ``row``
    (room enough); ``-1 - state`` where the block is not as stored (:data:`STATES`)."""
    if _pread(fd, buf.ctypes.data, size, offset) != size:
        return -1 - SHORT
    if _crc32(0, buf.ctypes.data, size) != zcrc:
        return -1 - CRC
    if _pread(fd, row.ctypes.data, 2 * row_len, rows_at + 2 * row_len * k) != 2 * row_len:
        return -1 - SHORT
    b = group_byte(buf[:size], row, table, at)
    return b if b >= 0 else -1 - UNDECODABLE
