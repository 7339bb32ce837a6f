"""The compact win/draw/loss part of a slice: encoding for distribution, probing with captures.

Each index entry gets a two-bit code (:mod:`tablebase.storage.values`: draw 0, win 1, loss 2), four
entries to a byte, entry ``i`` in bits ``2 * (i % 4)`` and up of byte ``i // 4``.

**Two forms.** Entries that are not positions (two men on one square) never need their code
read. A part **with captures stored** (as the generator writes it; ``captures="stored"`` on
the dataset, :data:`tablebase.storage.files.WDL_CAPTURES`) holds every position's own code,
capture positions included: a probe reads one code. A part **with captures resolved** (the
smaller form, the default of the WDL-only copy: :mod:`tablebase.storage.export`) leaves capture
positions don't-care as well: a capture position's result
follows from its captures, whose positions have fewer pieces and so lie in smaller slices,
and the prober resolves it there (recursively, as a capture may lead to another capture
position). Either way the writer stores in each don't-care entry the code of the last entry
before it that is not don't-care (the slice's first code for a leading run), which
lengthens runs of equal codes and lets gzip shrink them: see ``docs/FORMAT.md`` for the
figures.

**Probing invariant.** A position's result is its stored code if its slice stores captures
(``table[STORED + code]``, one flag per material code beside its offset,
:mod:`tablebase.storage.paged`) or the side to move has
no capture; otherwise it is the best, for the mover, of the negated results of the positions
after each legal capture. The stored code of a capture position is read only in a slice
that stores captures.
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
    entry_index,
    position_from_index,
    unrank_colex,
)
from tablebase.material.slices import UNCODED, Slice, material_code
from tablebase.rules import movegen as mg
from tablebase.rules.bits import reversed_bits
from tablebase.rules.kernel import kernel
from tablebase.rules.variants import Variant
from tablebase.storage.paged import STORED, code_at, next_tick
from tablebase.storage.values import wdl_code

DONT_CARE = 3  # transient code while encoding; never stored
MAX_CAPTURE_DEPTH = 16  # capture positions in a row, bounded by the pieces on the board
NO_TABLE = -2  # result code base: -2 - material code for a slice that is not loaded


def packed_size(entries: int) -> int:
    """Bytes of the packed WDL part of a slice of ``entries`` entries."""
    return (entries + 3) // 4


# --- encoding ----------------------------------------------------------------------------


@njit(cache=True)
def _classify_range(values, codes, nbr, rules, binom, counts, lo, hi):
    nsq = rules[0]
    width = rules[5]
    cur, boards, free1, free2 = cursor_at(lo, nsq, width, counts, binom)
    for idx in range(lo, hi):
        if idx > lo:
            changed = cursor_next(nsq, width, counts, cur)
            cursor_boards(nsq, width, counts, cur, changed, boards, free1, free2)
        if boards[4] == 0 or mg.has_capture(
            nbr, rules, True, boards[0], boards[1], boards[2], boards[3]
        ):
            codes[idx] = DONT_CARE
        else:
            codes[idx] = wdl_code(values[idx])


@njit(cache=True, parallel=True)
def classify(values, nbr, rules, binom, counts, nchunks):
    """WDL code of every entry, :data:`DONT_CARE` for non-positions and capture positions:
    the plain definition (the writer computes the same result faster: :func:`filled_codes`)."""
    size = values.shape[0]
    codes = np.empty(size, dtype=np.uint8)
    step = (size + nchunks - 1) // nchunks
    for c in prange(nchunks):
        lo = c * step
        hi = min(size, lo + step)
        if lo < hi:
            _classify_range(values, codes, nbr, rules, binom, counts, lo, hi)
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
def _fill_range(values, codes, nbr, rules, binom, counts, lo, hi):
    """:func:`filled_codes` over ``lo..hi`` on its own: entries before the range's first
    stored code that are don't-care are left :data:`DONT_CARE`; returns the last stored code
    (-1 if none)."""
    nsq = rules[0]
    width = rules[5]
    prev = -1
    for i in range(lo, hi):
        c = wdl_code(values[i])
        if c == prev:
            codes[i] = c
            continue
        wm, wk, bm, bk, ok = position_from_index(
            i, nsq, width, counts[0], counts[1], counts[2], counts[3], binom
        )
        if ok and not mg.has_capture(nbr, rules, True, wm, wk, bm, bk):
            prev = c
            codes[i] = c
        else:
            codes[i] = prev if prev >= 0 else DONT_CARE
    return prev


@njit(cache=True, parallel=True)
def filled_codes(values, nbr, rules, binom, counts, nchunks):
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
            last[k] = _fill_range(values, codes, nbr, rules, binom, counts, lo, hi)
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
        codes = filled_codes(
            values, variant.neighbours, variant.rules, BINOM, counts, max(1, threads) * 8
        )
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
def capture_entries(lo, hi, nsq, width, counts, binom, nbr, rules, nsub=16):
    """The entries ``lo..hi`` of a slice without king runs that are capture positions (the
    side to move, white, can capture), and their bitboards (``boards[0..3]``: wm, wk, bm,
    bk); ``nsub`` parts of the range searched in parallel."""
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
        cur, boards, free1, free2 = cursor_at(a, nsq, width, counts, binom)
        m = a - lo  # this part's own region of the output
        for i in range(a, b):
            if i > a:
                changed = cursor_next(nsq, width, counts, cur)
                cursor_boards(nsq, width, counts, cur, changed, boards, free1, free2)
            if boards[4] != 0 and mg.has_capture(
                nbr, rules, True, boards[0], boards[1], boards[2], boards[3]
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


# --- probing -----------------------------------------------------------------------------
# Positions are located in rows (:func:`locate_rows`): each one's entry in the flat tables,
# or what stands in the way of reading one. A capture position in a slice that leaves
# captures to the prober is then resolved through the positions after its captures
# (:func:`tablebase.rules.movegen.capture_successors`, each once), which are located in
# turn: depth first for a single probe (:func:`result_white`), level by level for a batch
# (:func:`resolve_levels`).

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
    (:mod:`tablebase.storage.paged`: the slices' byte offsets and capture flags). A
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


NEEDS_CAPTURES = -10000  # result_quick: must capture; below NO_TABLE
PAGE_MISS = -20000  # PAGE_MISS - page: the block ``page`` is not in the cache; below the rest
CAPTURE = 2  # gather_results: the position must capture, in a slice leaving captures


@njit(cache=True, inline="always")
def paged_code(table, arena, stamps, e, t):
    """+1 / 0 / -1 stored at entry ``e`` (counted in two-bit codes from the part's byte
    addresses) of a part held in the block cache (:mod:`tablebase.storage.paged`), the
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
    (:mod:`tablebase.storage.paged`)."""
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


# --- batched probing ----------------------------------------------------------------------
# A batch is answered level by level (tablebase.probe.database): the positions are located
# and their codes read where their blocks are cached (:func:`gather_results`, in parallel
# blocks of positions); the blocks missing are read and the positions that need them
# probed again; the capture positions of slices that leave captures to the prober are
# expanded into the positions after their captures (:func:`expand_captures`), which form
# the next level, and their results folded back (:func:`fold_results`).

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


@njit(cache=True, inline="always")
def _room(a, need):
    """``a`` if it holds ``need`` items, else a copy at least twice as long."""
    if a.shape[0] >= need:
        return a
    out = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True)
def expand_captures(nbr, rules, wtm, wm, wk, bm, bk):
    """The positions after each legal capture of the positions given (each must capture),
    white to move (``kwm, kwk, kbm, kbk``), with ``owner`` (the position they follow), and
    ``best`` per position: 1 where a capture takes the opponent's last piece (won; its
    other captures are left out), else -1 (a capture position has a move: at least lost)."""
    nsq = rules[0]
    n = wm.shape[0]
    cap = max(16, 4 * n)
    kids = [np.empty(cap, dtype=np.uint64) for _ in range(4)]
    kwm, kwk, kbm, kbk = kids[0], kids[1], kids[2], kids[3]
    owner = np.empty(cap, dtype=np.int64)
    best = np.full(n, -1, dtype=np.int8)
    succ = mg.new_successor_buffer_nb()
    ws = mg.new_workspace_nb()
    count = 0
    for j in range(n):
        a, b, c, d = white_view(nsq, wtm[j], wm[j], wk[j], bm[j], bk[j])
        m = mg.capture_successors(nbr, rules, True, a, b, c, d, succ, ws)
        start = count
        kwm = _room(kwm, count + m)
        kwk = _room(kwk, count + m)
        kbm = _room(kbm, count + m)
        kbk = _room(kbk, count + m)
        owner = _room(owner, count + m)
        for k in range(m):
            if (succ[k, 0] | succ[k, 1]) == 0:  # the opponent has no pieces left: won
                best[j] = 1
                count = start
                break
            kwm[count] = turned(succ[k, 0], nsq)
            kwk[count] = turned(succ[k, 1], nsq)
            kbm[count] = turned(succ[k, 2], nsq)
            kbk[count] = turned(succ[k, 3], nsq)
            owner[count] = j
            count += 1
    return kwm[:count], kwk[:count], kbm[:count], kbk[:count], owner[:count], best


@njit(cache=True)
def fold_results(best, owner, results):
    """``best[owner[k]]`` = the best, for its mover, of itself and ``-results[k]`` (the
    results of the positions after its captures), :data:`CAPTURE` entries left out."""
    for k in range(owner.shape[0]):
        r = results[k]
        if r == CAPTURE:
            continue
        if -r > best[owner[k]]:
            best[owner[k]] = -r
