"""The compact win/draw/loss part of a slice: its encoding, as the writer and the export make it.

Each index entry gets a two-bit code (:mod:`tablebase.storage.values`: draw 0, win 1, loss 2), four
entries to a byte, entry ``i`` in bits ``2 * (i % 4)`` and up of byte ``i // 4``.

**Two forms.** Entries that are not positions (two men on one square) never need their code
read. A part **with captures stored** (as the generator writes it; ``captures="stored"`` on
the dataset, :data:`tablebase.storage.slicefile.WDL_CAPTURES`) holds every position's own code,
capture positions included: a probe reads one code. A part **with captures resolved** (the
smaller form, the default of the WDL-only copy: :mod:`tablebase.storage.export`) leaves capture
positions don't-care as well: a capture position's result
follows from its captures, whose positions have fewer pieces and so lie in smaller slices,
and the prober resolves it there (recursively, as a capture may lead to another capture
position). Either way the writer stores in each don't-care entry the code of the last entry
before it that is not don't-care (the slice's first code for a leading run), which
lengthens runs of equal codes and lets gzip shrink them: see ``docs/FORMAT.md`` for the
figures.

How a probe reads it: :mod:`tablebase.probe.lookup`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tablebase.material.index import (
    BINOM,
    colex_boards,
    cursor_at,
    cursor_boards,
    cursor_next,
    position_from_index,
    unrank_colex,
)
from tablebase.material.slices import Slice
from tablebase.rules.captures import has_capture
from tablebase.rules.variants import Variant
from tablebase.storage.values import wdl_code

DONT_CARE = 3  # transient code while encoding; never stored


def packed_size(entries: int) -> int:
    """Bytes of the packed WDL part of a slice of ``entries`` entries."""
    return (entries + 3) // 4


# --- encoding ----------------------------------------------------------------------------


@njit(cache=True)
def _classify_range(values, codes, rules, binom, counts, lo, hi):
    nsq = rules.nsq
    width = rules.width
    cur, boards, free1, free2 = cursor_at(lo, nsq, width, counts, binom)
    for idx in range(lo, hi):
        if idx > lo:
            changed = cursor_next(nsq, width, counts, cur)
            cursor_boards(nsq, width, counts, cur, changed, boards, free1, free2)
        if boards[4] == 0 or has_capture(rules, True, boards[0], boards[1], boards[2], boards[3]):
            codes[idx] = DONT_CARE
        else:
            codes[idx] = wdl_code(values[idx])


@njit(cache=True, parallel=True)
def classify(values, rules, binom, counts, nchunks):
    """WDL code of every entry, :data:`DONT_CARE` for non-positions and capture positions:
    the plain definition (the writer computes the same result faster: :func:`filled_codes`)."""
    size = values.shape[0]
    codes = np.empty(size, dtype=np.uint8)
    step = (size + nchunks - 1) // nchunks
    for c in prange(nchunks):
        lo = c * step
        hi = min(size, lo + step)
        if lo < hi:
            _classify_range(values, codes, rules, binom, counts, lo, hi)
    return codes


@njit(cache=True)
def fill_dont_care(codes):
    """Replace each don't-care code by the previous stored code (the first one for a
    leading run; draw if the slice has none)."""
    prev = 0
    for i in range(codes.shape[0]):
        if codes[i] != DONT_CARE:
            prev = codes[i]
            break
    for i in range(codes.shape[0]):
        if codes[i] == DONT_CARE:
            codes[i] = prev
        else:
            prev = codes[i]


@njit(cache=True)
def _fill_range(values, codes, rules, binom, counts, lo, hi):
    """:func:`filled_codes` over ``lo..hi`` on its own: entries before the range's first
    stored code that are don't-care are left :data:`DONT_CARE`; returns the last stored code
    (-1 if none)."""
    nsq = rules.nsq
    width = rules.width
    prev = -1
    for i in range(lo, hi):
        c = wdl_code(values[i])
        if c == prev:
            codes[i] = c
            continue
        wm, wk, bm, bk, ok = position_from_index(
            i, nsq, width, counts[0], counts[1], counts[2], counts[3], binom
        )
        if ok and not has_capture(rules, True, wm, wk, bm, bk):
            prev = c
            codes[i] = c
        else:
            codes[i] = prev if prev >= 0 else DONT_CARE
    return prev


@njit(cache=True, parallel=True)
def filled_codes(values, rules, binom, counts, nchunks):
    """The codes :func:`classify` then :func:`fill_dont_care` give, looking at an entry's
    position only where its code differs from the run before it (an entry continuing the run
    stores the same code whether it is don't-care or not); chunks in parallel, then each
    chunk's leading don't-care entries take the last stored code before them."""
    n = values.shape[0]
    codes = np.empty(n, dtype=np.uint8)
    step = (n + nchunks - 1) // nchunks
    last = np.full(nchunks, -1, dtype=np.int64)
    for k in prange(nchunks):
        lo = k * step
        hi = min(n, lo + step)
        if lo < hi:
            last[k] = _fill_range(values, codes, rules, binom, counts, lo, hi)
    prev = -1
    for i in range(n):  # the slice's first stored code, for a leading don't-care run
        if codes[i] != DONT_CARE:
            prev = codes[i]
            break
    if prev < 0:
        prev = 0
    for k in range(nchunks):
        lo = k * step
        hi = min(n, lo + step)
        i = lo
        while i < hi and codes[i] == DONT_CARE:
            codes[i] = prev
            i += 1
        if last[k] >= 0:
            prev = last[k]
    return codes


def pack(codes: np.ndarray) -> np.ndarray:
    """Four two-bit codes to a byte, the first in the low bits."""
    padded = np.zeros(packed_size(codes.shape[0]) * 4, dtype=np.uint8)
    padded[: codes.shape[0]] = codes
    quads = padded.reshape(-1, 4)
    return quads[:, 0] | (quads[:, 1] << 2) | (quads[:, 2] << 4) | (quads[:, 3] << 6)


def unpack(packed: np.ndarray, entries: int) -> np.ndarray:
    """The ``entries`` two-bit codes of a packed array (one byte each)."""
    out = np.empty((packed.shape[0], 4), dtype=np.uint8)
    for k in range(4):
        out[:, k] = (packed >> (2 * k)) & 3
    return out.reshape(-1)[:entries]


def non_position_bits(boards, per, nsq, width, counts, binom, out=None):
    """A bit per entry (bit ``i & 7`` of byte ``i >> 3``), set where the entry is not a
    position: a white and a black man on one square. ``boards`` entries of ``per`` run
    states each (1 without king runs). ``out``: where to set them (zeros, ``(entries + 7)
    // 8`` bytes, e.g. a memory-mapped file), else a new array."""
    if out is None:
        out = np.zeros((boards * per + 7) // 8, dtype=np.uint8)
    _mark_non_positions(out, boards, per, nsq, width, counts, binom)
    return out


@njit(cache=True)
def _mark_non_positions(out, boards, per, nsq, width, counts, binom):
    """:func:`non_position_bits` into ``out``. The men are ranked outermost in the index,
    so each placement of the two groups of men owns one contiguous block of entries."""
    if counts[0] == 0 or counts[2] == 0:
        return out
    a = nsq - width
    n_wm = binom[a, counts[0]]
    n_bm = binom[a, counts[2]]
    block = boards // (n_wm * n_bm) * per  # entries per placement of the men
    bms = colex_boards(counts[2], a, binom)
    for r_wm in range(n_wm):
        wm = unrank_colex(r_wm, counts[0], a, binom) << np.uint64(width)
        for r_bm in range(n_bm):
            if wm & bms[r_bm]:
                i = (r_wm * n_bm + r_bm) * block
                stop = i + block
                while i < stop and i & 7:
                    out[i >> 3] |= np.uint8(1 << (i & 7))
                    i += 1
                while i + 8 <= stop:
                    out[i >> 3] = 255
                    i += 8
                while i < stop:
                    out[i >> 3] |= np.uint8(1 << (i & 7))
                    i += 1


def non_positions(variant: Variant, s: Slice, out: np.ndarray | None = None) -> np.ndarray:
    """:func:`non_position_bits` of slice ``s`` (with its king-run states), into ``out``
    (zeros) when given."""
    cw, cb = s.run_states(variant)
    counts = np.array(tuple(s), dtype=np.int64)
    return non_position_bits(
        s.boards(variant), cw * cb, variant.squares, variant.per_row, counts, BINOM, out
    )


def encode_wdl(
    variant: Variant,
    s: Slice,
    values: np.ndarray,
    threads: int = 1,
    dont_care: np.ndarray | None = None,
    captures: bool = True,
    work: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """The packed WDL part of slice ``s`` from its values, don't-care entries filled.
    ``work`` (with ``captures``): two arrays of zeros to use instead of new ones (files
    memory-mapped by a writer that must not hold the slice's parts in memory), one of
    ``(entries + 7) // 8`` bytes for the bits of the entries that are not positions and
    one of :func:`packed_size` bytes for the part, which is returned.

    ``captures`` True (the default): captures stored, only the entries that are not
    positions are don't-care (found here; ``dont_care`` is not needed and not read). False:
    the older form, capture positions don't-care too; ``dont_care`` (bool per entry, or a
    bit per entry as the solver keeps them: non-positions and capture positions) saves
    finding them."""
    if values.shape[0] != s.size(variant):
        raise ValueError(f"{s.name}: {values.shape[0]} values for {s.size(variant)} entries")
    if captures:
        if work is None:
            return pack_filled(values, non_positions(variant, s))
        return pack_filled(values, non_positions(variant, s, work[0]), out=work[1])
    if dont_care is None:
        if variant.king_move_limit > 0:  # filled_codes reads entry i as board i
            raise ValueError(f"{s.name}: a slice with king runs needs the solver's don't-care bits")
        counts = np.array(tuple(s), dtype=np.int64)
        codes = filled_codes(values, variant.rules, BINOM, counts, max(1, threads) * 8)
        return pack(codes)
    if dont_care.dtype == np.bool_:
        if dont_care.shape != values.shape:
            raise ValueError(f"dont_care has shape {dont_care.shape}, values {values.shape}")
        dont_care = np.packbits(dont_care, bitorder="little")
    elif dont_care.shape[0] != (values.shape[0] + 7) // 8:
        raise ValueError(f"dont_care has {dont_care.shape[0]} bytes for {values.shape[0]} entries")
    return pack_filled(values, dont_care)


PACK_BLOCK = 1 << 20  # entries per parallel block of pack_filled (a multiple of 8)


def pack_filled(values, unstored, block=PACK_BLOCK, out=None):
    """The packed WDL part in one pass, without a code per entry in memory: entries whose
    bit is set in ``unstored`` (bit ``i & 7`` of byte ``i >> 3``) take the code of the last
    stored entry before them (the first stored code for a leading run; draw if none), as
    :func:`fill_dont_care` does. Blocks of entries are packed in parallel, each starting
    from the last stored code of the blocks before it (``block`` entries each, a multiple
    of 8). ``out``: the ``(entries + 3) // 4`` bytes to pack into, else a new array."""
    if out is None:
        out = np.zeros((values.shape[0] + 3) // 4, dtype=np.uint8)
    _pack_filled(values, unstored, block, out)
    return out


@njit(cache=True, parallel=True)
def _pack_filled(values, unstored, block, out):
    """:func:`pack_filled` into ``out``."""
    n = values.shape[0]
    nblocks = (n + block - 1) // block
    last = np.full(nblocks, -1, dtype=np.int64)  # each block's last stored code
    for b in prange(nblocks):
        for i in range(min(n, (b + 1) * block) - 1, b * block - 1, -1):
            if not (unstored[i >> 3] >> (i & 7)) & 1:
                last[b] = wdl_code(values[i])
                break
    first = 0  # the first stored code, for a leading run
    for i in range(n):
        if not (unstored[i >> 3] >> (i & 7)) & 1:
            first = wdl_code(values[i])
            break
    carry = np.empty(nblocks, dtype=np.int64)  # the code in force where each block starts
    prev = first
    for b in range(nblocks):
        carry[b] = prev
        if last[b] >= 0:
            prev = last[b]
    for b in prange(nblocks):
        prev = carry[b]
        i1 = min(n, (b + 1) * block)
        for k in range(b * block >> 2, (i1 + 3) >> 2):  # a byte of four codes at a time
            byte = 0
            for i in range(4 * k, min(i1, 4 * k + 4)):
                stored = 1 - ((np.int64(unstored[i >> 3]) >> (i & 7)) & 1)
                prev += (wdl_code(values[i]) - prev) * stored  # kept where not stored
                byte |= prev << (2 * (i & 3))
            out[k] = np.uint8(byte)


@njit(cache=True, parallel=True)
def capture_entries(lo, hi, nsq, width, counts, rules, nsub=16):
    """The entries ``lo..hi`` of a slice without king runs that are capture positions (the
    side to move, white, can capture), and their bitboards (``boards[0..3]``: wm, wk, bm,
    bk); ``nsub`` parts of the range searched in parallel (the binomials: the module's
    constant)."""
    n = hi - lo
    idx = np.empty(n, dtype=np.int64)
    boards_out = np.empty((4, n), dtype=np.uint64)
    found = np.zeros(nsub, dtype=np.int64)
    step = (n + nsub - 1) // nsub
    for k in prange(nsub):
        a = lo + k * step
        b = min(hi, a + step)
        if a >= b:
            continue
        cur, boards, free1, free2 = cursor_at(a, nsq, width, counts, BINOM)
        m = a - lo  # this part's own region of the output
        for i in range(a, b):
            if i > a:
                changed = cursor_next(nsq, width, counts, cur)
                cursor_boards(nsq, width, counts, cur, changed, boards, free1, free2)
            if boards[4] != 0 and has_capture(
                rules, True, boards[0], boards[1], boards[2], boards[3]
            ):
                idx[m] = i
                for g in range(4):
                    boards_out[g, m] = boards[g]
                m += 1
        found[k] = m - (a - lo)
    total = found.sum()
    out_idx = np.empty(total, dtype=np.int64)
    out_boards = np.empty((4, total), dtype=np.uint64)
    m = 0
    for k in range(nsub):
        a = k * step
        for j in range(found[k]):
            out_idx[m] = idx[a + j]
            for g in range(4):
                out_boards[g, m] = boards_out[g, a + j]
            m += 1
    return out_idx, out_boards


@njit(cache=True)
def set_codes(packed, idx, codes):
    """Store code ``codes[k]`` at entry ``idx[k]`` of a packed part."""
    for k in range(idx.shape[0]):
        i = idx[k]
        shift = (i & 3) * 2
        packed[i >> 2] = (packed[i >> 2] & np.uint8(~(3 << shift) & 255)) | np.uint8(
            codes[k] << shift
        )


@njit(cache=True)
def refill(packed, unstored, n):
    """Give each of the ``n`` entries of a packed part whose bit is set in ``unstored`` the
    code of the last entry before it whose bit is clear (the first such code for a leading
    run; draw if none), as the writer does."""
    prev = 0
    for i in range(n):
        if not (unstored[i >> 3] >> (i & 7)) & 1:
            prev = (packed[i >> 2] >> ((i & 3) * 2)) & 3
            break
    for i in range(n):
        shift = (i & 3) * 2
        if (unstored[i >> 3] >> (i & 7)) & 1:
            packed[i >> 2] = (packed[i >> 2] & np.uint8(~(3 << shift) & 255)) | np.uint8(
                prev << shift
            )
        else:
            prev = (packed[i >> 2] >> shift) & 3


@njit(cache=True)
def codes_of(values):
    """The WDL code of every value."""
    codes = np.empty(values.shape[0], dtype=np.uint8)
    for i in range(values.shape[0]):
        codes[i] = wdl_code(values[i])
    return codes


def exact_wdl(values: np.ndarray) -> np.ndarray:
    """The packed WDL part with every entry's own code (no don't-care entries), as read
    from a version 1 file."""
    return pack(codes_of(values))
