"""The compact win/draw/loss part of a slice: encoding for distribution, probing with captures.

Each index entry gets a two-bit code (:mod:`tablebase.values`: draw 0, win 1, loss 2), four
entries to a byte, entry ``i`` in bits ``2 * (i % 4)`` and up of byte ``i // 4``.

**Don't-care entries.** Two kinds of entries never need their code read: entries that are not
positions (two men on one square) and positions whose side to move has a capture. A capture
position's result follows from its captures, whose positions have fewer pieces and so lie in
smaller slices; the prober resolves it there (recursively, as a capture may lead to another
capture position). The writer stores in each don't-care entry the code of the last entry
before it that is not don't-care (the slice's first code for a leading run), which lengthens
runs of equal codes and lets gzip shrink them: see ``docs/FORMAT.md`` for the figures.

**Probing invariant.** A position's result is its stored code if the side to move has no
capture; otherwise it is the best, for the mover, of the negated results of the positions
after each legal capture. The stored code of a capture position is never read.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tablebase.index import (
    BINOM,
    REVERSE16,
    cursor_boards,
    cursor_next,
    cursor_start,
    position_from_index,
    position_index,
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


def encode_wdl(
    variant: Variant,
    s: Slice,
    values: np.ndarray,
    threads: int = 1,
    dont_care: np.ndarray | None = None,
) -> np.ndarray:
    """The packed WDL part of slice ``s`` from its values, don't-care entries filled;
    ``dont_care`` (bool per entry: non-positions and capture positions) saves finding them."""
    if dont_care is None:
        counts = np.array(tuple(s), dtype=np.int64)
        codes = filled_codes(
            values, variant.neighbours, variant.rules, BINOM, counts, max(1, threads) * 8
        )
        return pack(codes)
    if dont_care.shape != values.shape:
        raise ValueError(f"dont_care has shape {dont_care.shape}, values {values.shape}")
    codes = codes_of(values)
    codes[dont_care] = DONT_CARE
    fill_dont_care(codes)
    return pack(codes)


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
def _stored_result(flat, offsets, nbr, rules, binom, wm, wk, bm, bk):
    """``(final, result)`` of a white-to-move position before looking at its captures:
    final with the result (or ``NO_TABLE - code``) unless the side to move can capture."""
    if (wm | wk) == 0:
        return True, -1
    code = material_code(wm, wk, bm, bk)
    if code == UNCODED or offsets[code] < 0 or (bm | bk) == 0:
        return True, NO_TABLE - code  # no black pieces: no slice (the caller reports it)
    if mg.has_capture(nbr, rules, True, wm, wk, bm, bk):
        return False, 0
    idx = position_index(rules[0], rules[5], wm, wk, bm, bk, binom)
    c = (flat[offsets[code] + (idx >> 2)] >> ((idx & 3) * 2)) & 3
    if c == 1:
        return True, 1
    if c == 2:
        return True, -1
    return True, 0


@njit(cache=True)
def result_white(flat, offsets, nbr, rules, binom, rev16, wm, wk, bm, bk, moves, ws, frames):
    """Result (+1 / 0 / -1) of a white-to-move position from the packed WDL tables in
    ``flat`` (``offsets[code]`` = byte where a slice starts, -1 if not loaded), resolving
    captures depth first with an explicit stack (``moves[d]`` and ``frames[d]`` = wm, wk,
    bm, bk, move count, next move, best result at depth ``d``); ``NO_TABLE - code`` if the
    slice ``code`` is needed but not loaded."""
    nsq = rules[0]
    final, r = _stored_result(flat, offsets, nbr, rules, binom, wm, wk, bm, bk)
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
        final, r = _stored_result(flat, offsets, nbr, rules, binom, cwm, cwk, cbm, cbk)
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
def result_of(flat, offsets, nbr, rules, binom, rev16, wtm, wm, wk, bm, bk, moves, ws, frames):
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
    return result_white(flat, offsets, nbr, rules, binom, rev16, wm, wk, bm, bk, moves, ws, frames)


NEEDS_CAPTURES = -10000  # result_quick: must capture (call result_of); below every NO_TABLE code


@njit(cache=True)
def result_quick(flat, offsets, nbr, rules, wtm, wm, wk, bm, bk):
    """The single-probe fast path (bitboards as plain integers; the index tables are the
    module constants, to keep the call short): :func:`result_of` for a position whose side
    to move cannot capture, :data:`NEEDS_CAPTURES` otherwise."""
    wm, wk, bm, bk = np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk)
    if not wtm:
        nsq = rules[0]
        a = reverse_board(bm, nsq, REVERSE16)
        b = reverse_board(bk, nsq, REVERSE16)
        bm = reverse_board(wm, nsq, REVERSE16)
        bk = reverse_board(wk, nsq, REVERSE16)
        wm, wk = a, b
    final, r = _stored_result(flat, offsets, nbr, rules, BINOM, wm, wk, bm, bk)
    return r if final else NEEDS_CAPTURES


@njit(cache=True, parallel=True)
def results_batch(flat, offsets, nbr, rules, binom, rev16, wtm, wm, wk, bm, bk, nchunks):
    """:func:`result_of` of many positions (int8 results; ``NO_TABLE - code`` never fits
    int8, so a missing slice is reported in ``missing`` instead: -1 if none)."""
    n = wm.shape[0]
    out = np.empty(n, dtype=np.int8)
    missing = np.full(nchunks, -1, dtype=np.int64)
    step = (n + nchunks - 1) // nchunks
    for c in prange(nchunks):
        lo = c * step
        hi = min(n, lo + step)
        if lo >= hi:
            continue
        moves = np.empty((MAX_CAPTURE_DEPTH, mg.MAX_MOVES, mg.MOVE_FIELDS), dtype=np.uint64)
        ws = mg.new_workspace_nb()
        frames = np.zeros((MAX_CAPTURE_DEPTH, 7), dtype=np.uint64)
        for i in range(lo, hi):
            r = result_of(
                flat,
                offsets,
                nbr,
                rules,
                binom,
                rev16,
                wtm[i],
                wm[i],
                wk[i],
                bm[i],
                bk[i],
                moves,
                ws,
                frames,
            )
            if r <= NO_TABLE:
                missing[c] = NO_TABLE - r
                out[i] = 0
            else:
                out[i] = r
    return out, missing


def new_buffers() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move buffers, capture-search workspace and stack frames for :func:`result_of`."""
    frames = np.zeros((MAX_CAPTURE_DEPTH, 7), dtype=np.uint64)
    return mg.new_move_buffer(MAX_CAPTURE_DEPTH), mg.new_workspace(), frames
