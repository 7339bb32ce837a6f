"""The compact win/draw/loss part of a slice: encoding for distribution, probing with captures.

Each index entry gets a two-bit code (:mod:`tablebase.values`: draw 0, win 1, loss 2), four
entries to a byte, entry ``i`` in bits ``2 * (i % 4)`` and up of byte ``i // 4``.

**Two forms.** Entries that are not positions (two men on one square) never need their code
read. A part **with captures stored** (written by default; ``captures="stored"`` on the
dataset, :data:`tablebase.storage.WDL_CAPTURES`) holds every position's own code, capture
positions included: a probe reads one code. A part **with captures resolved** (the older
form, still read) leaves capture positions don't-care as well: a capture position's result
follows from its captures, whose positions have fewer pieces and so lie in smaller slices,
and the prober resolves it there (recursively, as a capture may lead to another capture
position). Either way the writer stores in each don't-care entry the code of the last entry
before it that is not don't-care (the slice's first code for a leading run), which
lengthens runs of equal codes and lets gzip shrink them: see ``docs/FORMAT.md`` for the
figures.

**Probing invariant.** A position's result is its stored code if its slice stores captures
(``stored[code]``, one flag per material code beside ``offsets``) or the side to move has
no capture; otherwise it is the best, for the mover, of the negated results of the positions
after each legal capture. The stored code of a capture position is read only in a slice
that stores captures.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tablebase.index import (
    BINOM,
    REVERSE16,
    _unrank_colex,
    cursor_boards,
    cursor_next,
    cursor_start,
    entry_index,
    position_from_index,
    reverse_board,
)
from tablebase.rules import movegen as mg
from tablebase.rules.variants import Variant
from tablebase.slices import UNCODED, Slice, material_code, successors
from tablebase.values import wdl_code

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
    cur = np.zeros((4, 8), dtype=np.int64)
    boards = np.zeros(5, dtype=np.uint64)
    free1 = np.zeros(64, dtype=np.int64)
    free2 = np.zeros(64, dtype=np.int64)
    cursor_start(lo, nsq, width, counts, binom, cur)
    cursor_boards(nsq, width, counts, cur, 0, boards, free1, free2)
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


@njit(cache=True)
def non_position_bits(boards, per, nsq, width, counts, binom):
    """A bit per entry (bit ``i & 7`` of byte ``i >> 3``), set where the entry is not a
    position: a white and a black man on one square. ``boards`` entries of ``per`` run
    states each (1 without king runs). The men are ranked outermost in the index, so each
    placement of the two groups of men owns one contiguous block of entries."""
    size = boards * per
    out = np.zeros((size + 7) // 8, dtype=np.uint8)
    if counts[0] == 0 or counts[2] == 0:
        return out
    a = nsq - width
    n_wm = binom[a, counts[0]]
    n_bm = binom[a, counts[2]]
    block = boards // (n_wm * n_bm) * per  # entries per placement of the men
    for r_wm in range(n_wm):
        wm = _unrank_colex(r_wm, counts[0], a, binom) << np.uint64(width)
        for r_bm in range(n_bm):
            if wm & _unrank_colex(r_bm, counts[2], a, binom):
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
    return out


def non_positions(variant: Variant, s: Slice) -> np.ndarray:
    """:func:`non_position_bits` of slice ``s`` (with its king-run states)."""
    cw, cb = s.run_states(variant)
    counts = np.array(tuple(s), dtype=np.int64)
    return non_position_bits(
        s.boards(variant), cw * cb, variant.squares, variant.per_row, counts, BINOM
    )


def encode_wdl(
    variant: Variant,
    s: Slice,
    values: np.ndarray,
    threads: int = 1,
    dont_care: np.ndarray | None = None,
    captures: bool = True,
) -> np.ndarray:
    """The packed WDL part of slice ``s`` from its values, don't-care entries filled.

    ``captures`` True (the default): captures stored, only the entries that are not
    positions are don't-care (found here; ``dont_care`` is not needed and not read). False:
    the older form, capture positions don't-care too; ``dont_care`` (bool per entry, or a
    bit per entry as the solver keeps them: non-positions and capture positions) saves
    finding them."""
    if captures:
        return pack_filled(values, non_positions(variant, s))
    if dont_care is None:
        if variant.king_move_limit > 0:  # filled_codes reads entry i as board i
            raise ValueError(
                f"{s.name}: a slice with king runs needs the solver's don't-care bits"
            )
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


@njit(cache=True, parallel=True)
def pack_filled(values, unstored, block=PACK_BLOCK):
    """The packed WDL part in one pass, without a code per entry in memory: entries whose
    bit is set in ``unstored`` (bit ``i & 7`` of byte ``i >> 3``) take the code of the last
    stored entry before them (the first stored code for a leading run; draw if none), as
    :func:`fill_dont_care` does. Blocks of entries are packed in parallel, each starting
    from the last stored code of the blocks before it (``block`` entries each, a multiple
    of 8)."""
    n = values.shape[0]
    out = np.zeros((n + 3) // 4, dtype=np.uint8)
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
        for i in range(b * block, min(n, (b + 1) * block)):
            if not (unstored[i >> 3] >> (i & 7)) & 1:
                prev = wdl_code(values[i])
            out[i >> 2] |= np.uint8(prev << (2 * (i & 3)))
    return out


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
        cur = np.zeros((4, 8), dtype=np.int64)
        boards = np.zeros(5, dtype=np.uint64)
        free1 = np.zeros(64, dtype=np.int64)
        free2 = np.zeros(64, dtype=np.int64)
        cursor_start(a, nsq, width, counts, binom, cur)
        cursor_boards(nsq, width, counts, cur, 0, boards, free1, free2)
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


def capture_closure(s: Slice) -> set[Slice]:
    """Every slice a capture from ``s`` can reach, directly or by further captures
    (without ``s``): what probing the WDL part of ``s`` needs loaded."""
    out: set[Slice] = set()
    todo = [s]
    while todo:
        t = todo.pop()
        for u in successors(t):
            if u.pieces < t.pieces and u not in out:
                out.add(u)
                todo.append(u)
    return out


# --- probing -----------------------------------------------------------------------------


@njit(cache=True, inline="always")
def entry_of(rules, binom, wm, wk, bm, bk):
    """Entry of a white-to-move position in its slice, with no king run on either side
    where the variant counts runs (Frisian, ``rules[6]`` > 0): the runs a probe without
    them means, and the runs after any capture (a capture ends the capturer's run, and the
    side that was captured from had none)."""
    return entry_index(rules[0], rules[5], rules[6], wm, wk, bm, bk, -1, 0, -1, 0, binom)


@njit(cache=True, inline="always")
def _stored_result(flat, offsets, stored, nbr, rules, binom, wm, wk, bm, bk):
    """``(final, result)`` of a white-to-move position before looking at its captures:
    final with the result (or ``NO_TABLE - code``) unless the side to move can capture and
    its slice leaves captures to the prober (``stored[code]`` False)."""
    if (wm | wk) == 0:
        return True, -1
    code = material_code(wm, wk, bm, bk)
    if code == UNCODED or offsets[code] < 0 or (bm | bk) == 0:
        return True, NO_TABLE - code  # no black pieces: no slice (the caller reports it)
    if not stored[code] and mg.has_capture(nbr, rules, True, wm, wk, bm, bk):
        return False, 0
    idx = entry_of(rules, binom, wm, wk, bm, bk)
    c = (flat[offsets[code] + (idx >> 2)] >> ((idx & 3) * 2)) & 3
    if c == 1:
        return True, 1
    if c == 2:
        return True, -1
    return True, 0


@njit(cache=True)
def result_white(
    flat, offsets, stored, nbr, rules, binom, rev16, wm, wk, bm, bk, moves, ws, frames
):
    """Result (+1 / 0 / -1) of a white-to-move position from the packed WDL tables in
    ``flat`` (``offsets[code]`` = byte where a slice starts, -1 if not loaded;
    ``stored[code]``: the slice stores its capture positions' codes), resolving the
    captures of the others depth first with an explicit stack (``moves[d]`` and
    ``frames[d]`` = wm, wk, bm, bk, move count, next move, best result at depth ``d``);
    ``NO_TABLE - code`` if the slice ``code`` is needed but not loaded."""
    nsq = rules[0]
    final, r = _stored_result(flat, offsets, stored, nbr, rules, binom, wm, wk, bm, bk)
    if final:
        return r
    depth = 0
    frames[0, 0], frames[0, 1], frames[0, 2], frames[0, 3] = wm, wk, bm, bk
    frames[0, 4] = mg.generate_moves(nbr, rules, True, wm, wk, bm, bk, moves[0], ws)
    frames[0, 5] = 0
    frames[0, 6] = 0  # best result + 1 (0: none yet)
    while True:
        # play the next capture of the position at ``depth`` and look at the result
        f = frames[depth]
        buf = moves[depth]
        i = f[5]
        f[5] = i + 1
        a, b, c, d = mg.play_row(f[0], f[1], f[2], f[3], buf, i)
        cwm = reverse_board(a, nsq, rev16)
        cwk = reverse_board(b, nsq, rev16)
        cbm = reverse_board(c, nsq, rev16)
        cbk = reverse_board(d, nsq, rev16)
        final, r = _stored_result(flat, offsets, stored, nbr, rules, binom, cwm, cwk, cbm, cbk)
        if not final:  # the position after the capture must capture too: go down
            if depth + 1 >= moves.shape[0]:
                raise RuntimeError("capture positions nested deeper than the move buffers")
            depth += 1
            g = frames[depth]
            g[0], g[1], g[2], g[3] = cwm, cwk, cbm, cbk
            g[4] = mg.generate_moves(nbr, rules, True, cwm, cwk, cbm, cbk, moves[depth], ws)
            g[5] = 0
            g[6] = 0
            continue
        # fold result r (for the side to move after the capture) into the frames above
        while True:
            if r <= NO_TABLE:
                return r
            f = frames[depth]
            if -r + 1 > np.int64(f[6]):
                f[6] = -r + 1
            if f[6] == 2 or f[5] == f[4]:  # a win found, or every capture seen
                r = np.int64(f[6]) - 1
                if depth == 0:
                    return r
                depth -= 1
                continue
            break


@njit(cache=True)
def result_of(
    flat, offsets, stored, nbr, rules, binom, rev16, wtm, wm, wk, bm, bk, moves, ws, frames
):
    """:func:`result_white` of a position with either side to move (flipped if black);
    the bitboards may be given as plain integers."""
    wm, wk, bm, bk = np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk)
    if not wtm:
        nsq = rules[0]
        a = reverse_board(bm, nsq, rev16)
        b = reverse_board(bk, nsq, rev16)
        bm = reverse_board(wm, nsq, rev16)
        bk = reverse_board(wk, nsq, rev16)
        wm, wk = a, b
    return result_white(
        flat, offsets, stored, nbr, rules, binom, rev16, wm, wk, bm, bk, moves, ws, frames
    )


NEEDS_CAPTURES = -10000  # result_quick: must capture (call result_of); below every NO_TABLE code


@njit(cache=True)
def result_quick(flat, offsets, stored, nbr, rules, wtm, wm, wk, bm, bk):
    """The single-probe fast path (bitboards as plain integers; the index tables are the
    module constants, to keep the call short): :func:`result_of` for a position whose side
    to move cannot capture or whose slice stores captures, :data:`NEEDS_CAPTURES`
    otherwise."""
    wm, wk, bm, bk = np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk)
    if not wtm:
        nsq = rules[0]
        a = reverse_board(bm, nsq, REVERSE16)
        b = reverse_board(bk, nsq, REVERSE16)
        bm = reverse_board(wm, nsq, REVERSE16)
        bk = reverse_board(wk, nsq, REVERSE16)
        wm, wk = a, b
    final, r = _stored_result(flat, offsets, stored, nbr, rules, BINOM, wm, wk, bm, bk)
    return r if final else NEEDS_CAPTURES


@njit(cache=True)
def result_capturing(flat, offsets, stored, nbr, rules, wtm, wm, wk, bm, bk, moves, ws, frames):
    """:func:`result_of` with the index tables taken from the module (a shorter call for
    single probes that :func:`result_quick` left to the captures)."""
    return result_of(
        flat, offsets, stored, nbr, rules, BINOM, REVERSE16, wtm, wm, wk, bm, bk, moves, ws, frames
    )


def new_buffers() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move buffers, capture-search workspace and stack frames for :func:`result_of`."""
    frames = np.zeros((MAX_CAPTURE_DEPTH, 7), dtype=np.uint64)
    return mg.new_move_buffer(MAX_CAPTURE_DEPTH), mg.new_workspace(), frames


# --- batched probing ----------------------------------------------------------------------
# A batch is split into chunks, one compiled parallel region over them; each chunk goes in
# stages so that the random reads of the tables are not held up by the move generation
# around them: (1) every position's entry (or "must capture") is found, (2) the codes are
# gathered in a tight loop, (3) each capture position has its captures played once: a
# position after a capture whose side to move cannot capture is looked up at once (a win
# found ends the search), the others are resolved depth first (:func:`result_white`).

LOC_FINAL = -1  # the result is already known (the side to move has no pieces: lost)
LOC_CAPTURE = -2  # the side to move must capture: resolved through the captures
LOC_MISSING = -3  # LOC_MISSING - code: the slice ``code`` is not loaded
CHUNK = 1 << 16  # positions per chunk of a batch (at least; a chunk per 4 threads' worth)


@njit(cache=True, inline="always")
def _locate_one(offsets, stored, nbr, rules, binom, wtm, wm, wk, bm, bk):
    """``(loc, result)`` of one position: ``loc`` its entry in the flat tables counted in
    two-bit codes (byte ``loc >> 2``), or :data:`LOC_FINAL` (with its result),
    :data:`LOC_CAPTURE` (a capture to resolve: only in a slice that does not store
    captures) or ``LOC_MISSING - code``."""
    nsq = rules[0]
    a, b, c, d = wm, wk, bm, bk
    if not wtm:
        a = reverse_board(bm, nsq, REVERSE16)
        b = reverse_board(bk, nsq, REVERSE16)
        c = reverse_board(wm, nsq, REVERSE16)
        d = reverse_board(wk, nsq, REVERSE16)
    if (a | b) == 0:
        return LOC_FINAL, -1
    code = material_code(a, b, c, d)
    if code == UNCODED or offsets[code] < 0 or (c | d) == 0:
        return LOC_MISSING - code, 0
    if not stored[code] and mg.has_capture(nbr, rules, True, a, b, c, d):
        return LOC_CAPTURE, 0
    return offsets[code] * 4 + entry_of(rules, binom, a, b, c, d), 0


@njit(cache=True, inline="always")
def _code_at(flat, e):
    """+1 / 0 / -1 stored at entry ``e`` (counted in two-bit codes) of the flat tables."""
    c = (flat[e >> 2] >> ((e & 3) << 1)) & 3
    return 1 if c == 1 else (-1 if c == 2 else 0)


@njit(cache=True, parallel=True)
def locate_batch(offsets, stored, nbr, rules, binom, wtm, wm, wk, bm, bk, res, loc):
    """Stage 1 over a whole batch: ``loc[i]``, ``res[i]`` of :func:`_locate_one`."""
    for i in prange(wm.shape[0]):
        loc[i], res[i] = _locate_one(
            offsets, stored, nbr, rules, binom, wtm[i], wm[i], wk[i], bm[i], bk[i]
        )


@njit(cache=True)
def capture_result(
    flat, offsets, stored, nbr, rules, binom, wm, wk, bm, bk, moves, ws, frames, kids
):
    """Result of a white-to-move position that must capture: each capture is played once;
    a position after it whose side to move cannot capture (or whose slice stores captures)
    is looked up at once (a win ends
    the search), those that must capture too are kept in ``kids`` and resolved depth first
    afterwards. ``NO_TABLE - code`` if the slice ``code`` is needed and not loaded."""
    nsq = rules[0]
    buf = moves[0]
    m = mg.generate_moves(nbr, rules, True, wm, wk, bm, bk, buf, ws)
    best = -1
    kept = 0
    for k in range(m):
        p, q, r, s = mg.play_row(wm, wk, bm, bk, buf, k)
        cwm = reverse_board(p, nsq, REVERSE16)
        cwk = reverse_board(q, nsq, REVERSE16)
        cbm = reverse_board(r, nsq, REVERSE16)
        cbk = reverse_board(s, nsq, REVERSE16)
        if (cwm | cwk) == 0:  # every opposing piece taken
            return 1
        code = material_code(cwm, cwk, cbm, cbk)
        if code == UNCODED or offsets[code] < 0:
            return NO_TABLE - code
        if not stored[code] and mg.has_capture(nbr, rules, True, cwm, cwk, cbm, cbk):
            kids[kept, 0], kids[kept, 1], kids[kept, 2], kids[kept, 3] = cwm, cwk, cbm, cbk
            kept += 1
            continue
        v = -_code_at(flat, offsets[code] * 4 + entry_of(rules, binom, cwm, cwk, cbm, cbk))
        if v > best:
            best = v
            if best == 1:
                return 1
    for k in range(kept):  # the move list in moves[0] is no longer needed
        a, b, c, d = kids[k, 0], kids[k, 1], kids[k, 2], kids[k, 3]
        v = result_white(
            flat, offsets, stored, nbr, rules, binom, REVERSE16, a, b, c, d, moves, ws, frames
        )
        if v <= NO_TABLE:
            return v
        if -v > best:
            best = -v
            if best == 1:
                return 1
    return best


@njit(cache=True, parallel=True)
def results_chunked(flat, offsets, stored, nbr, rules, binom, wtm, wm, wk, bm, bk, nchunks):
    """Results (int8) of a batch in ``nchunks`` chunks, each in the stages above, and per
    chunk a slice that was needed and not loaded (-1 if none; the chunk is then
    incomplete)."""
    n = wm.shape[0]
    res = np.zeros(n, dtype=np.int8)
    missing = np.full(nchunks, -1, dtype=np.int64)
    nsq = rules[0]
    step = (n + nchunks - 1) // nchunks
    for ch in prange(nchunks):
        lo = ch * step
        hi = min(n, lo + step)
        if lo >= hi:
            continue
        loc = np.empty(hi - lo, dtype=np.int64)
        captures = 0
        for i in range(lo, hi):
            e, r = _locate_one(
                offsets, stored, nbr, rules, binom, wtm[i], wm[i], wk[i], bm[i], bk[i]
            )
            loc[i - lo] = e
            res[i] = r
            if e <= LOC_MISSING:
                missing[ch] = LOC_MISSING - e
            elif e == LOC_CAPTURE:
                captures += 1
        if missing[ch] >= 0:
            continue
        for i in range(lo, hi):
            e = loc[i - lo]
            if e >= 0:
                res[i] = _code_at(flat, e)
        if captures == 0:
            continue
        moves = np.empty((MAX_CAPTURE_DEPTH, mg.MAX_MOVES, mg.MOVE_FIELDS), dtype=np.uint64)
        ws = mg.new_workspace_nb()
        frames = np.zeros((MAX_CAPTURE_DEPTH, 7), dtype=np.uint64)
        kids = np.empty((mg.MAX_MOVES, 4), dtype=np.uint64)
        for i in range(lo, hi):
            if loc[i - lo] != LOC_CAPTURE:
                continue
            a, b, c, d = wm[i], wk[i], bm[i], bk[i]
            if not wtm[i]:
                a = reverse_board(bm[i], nsq, REVERSE16)
                b = reverse_board(bk[i], nsq, REVERSE16)
                c = reverse_board(wm[i], nsq, REVERSE16)
                d = reverse_board(wk[i], nsq, REVERSE16)
            r = capture_result(
                flat, offsets, stored, nbr, rules, binom, a, b, c, d, moves, ws, frames, kids
            )
            if r <= NO_TABLE:
                missing[ch] = NO_TABLE - r
                r = 0
            res[i] = r
    return res, missing


def results_staged(
    flat: np.ndarray,
    offsets: np.ndarray,
    stored: np.ndarray,
    variant: Variant,
    wtm: np.ndarray,
    wm: np.ndarray,
    wk: np.ndarray,
    bm: np.ndarray,
    bk: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, int]:
    """Results (int8, +1 / 0 / -1 for the side to move) of a batch of positions through the
    packed WDL tables ``flat`` / ``offsets`` / ``stored`` (see above), and the code of a
    slice that was needed and not loaded (-1 if none; the results are then incomplete)."""
    n = wm.shape[0]
    nchunks = max(1, min(max(1, threads) * 4, n // CHUNK + 1))
    res, missing = results_chunked(
        flat, offsets, stored, variant.neighbours, variant.rules, BINOM, wtm, wm, wk, bm, bk,
        nchunks,
    )  # fmt: skip
    return res, int(missing.max()) if missing.shape[0] else -1
