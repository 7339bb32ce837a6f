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
def entry_of(rules, binom, wm, wk, bm, bk):
    """Entry of a white-to-move position in its slice, with no king run on either side
    where the variant counts runs (Frisian, ``rules[6]`` > 0): the runs a probe without
    them means, and the runs after any capture (a capture ends the capturer's run, and the
    side that was captured from had none)."""
    return entry_index(rules[0], rules[5], rules[6], wm, wk, bm, bk, -1, 0, -1, 0, binom)


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
    idx = entry_of(rules, binom, wm, wk, bm, bk)
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


@njit(cache=True)
def result_capturing(flat, offsets, nbr, rules, wtm, wm, wk, bm, bk, moves, ws, frames):
    """:func:`result_of` with the index tables taken from the module (a shorter call for
    single probes that :func:`result_quick` left to the captures)."""
    return result_of(
        flat, offsets, nbr, rules, BINOM, REVERSE16, wtm, wm, wk, bm, bk, moves, ws, frames
    )


def new_buffers() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move buffers, capture-search workspace and stack frames for :func:`result_of`."""
    frames = np.zeros((MAX_CAPTURE_DEPTH, 7), dtype=np.uint64)
    return mg.new_move_buffer(MAX_CAPTURE_DEPTH), mg.new_workspace(), frames


# --- batched probing: each stage a compiled pass over arrays -----------------------------
# A batch is resolved in stages so that the random reads of the tables are not held up by
# the move generation around them: (1) every position's entry (or "must capture") is found,
# (2) the codes are gathered in a tight loop, (3) capture positions get the positions after
# each of their captures, which are resolved as a batch of their own (recursively: they may
# have to capture too), and (4) each capture position takes the best of its captures.

LOC_FINAL = -1  # the result is already known (the side to move has no pieces: lost)
LOC_CAPTURE = -2  # the side to move must capture: resolved through the captures
LOC_MISSING = -3  # LOC_MISSING - code: the slice ``code`` is not loaded
CHILD_SLOTS = 8  # positions after a capture kept per capture position; more: depth first


@njit(cache=True, parallel=True)
def locate_batch(offsets, nbr, rules, binom, wtm, wm, wk, bm, bk, res, loc):
    """Stage 1: ``loc[i]`` = the entry of position ``i`` in the flat tables, counted in
    two-bit codes (byte ``loc >> 2``), or :data:`LOC_FINAL` (``res[i]`` holds the result),
    :data:`LOC_CAPTURE` or ``LOC_MISSING - code``."""
    nsq = rules[0]
    for i in prange(wm.shape[0]):
        a, b, c, d = wm[i], wk[i], bm[i], bk[i]
        if not wtm[i]:
            a = reverse_board(bm[i], nsq, REVERSE16)
            b = reverse_board(bk[i], nsq, REVERSE16)
            c = reverse_board(wm[i], nsq, REVERSE16)
            d = reverse_board(wk[i], nsq, REVERSE16)
        if (a | b) == 0:
            res[i] = -1
            loc[i] = LOC_FINAL
            continue
        code = material_code(a, b, c, d)
        if code == UNCODED or offsets[code] < 0 or (c | d) == 0:
            loc[i] = LOC_MISSING - code
        elif mg.has_capture(nbr, rules, True, a, b, c, d):
            loc[i] = LOC_CAPTURE
        else:
            loc[i] = offsets[code] * 4 + entry_of(rules, binom, a, b, c, d)


@njit(cache=True, parallel=True)
def gather_codes(flat, loc, res):
    """Stage 2: the result of every position whose entry stage 1 found."""
    for i in prange(loc.shape[0]):
        e = loc[i]
        if e >= 0:
            c = (flat[e >> 2] >> ((e & 3) << 1)) & 3
            res[i] = 1 if c == 1 else (-1 if c == 2 else 0)


@njit(cache=True, parallel=True)
def capture_children(flat, offsets, nbr, rules, binom, wtm, wm, wk, bm, bk, at, res, nchunks):
    """Stage 3, for the capture positions ``at`` (indices into the batch): each legal
    capture is played; a position after it whose side to move cannot capture is looked up
    at once (a win found for the capturer ends the position's search), and the ones that
    must capture in turn are kept, white to move (colour-flipped), :data:`CHILD_SLOTS`
    slots per capture position. ``res`` gets the best result of the looked-up captures
    (-2 if none); a position with more kept captures than slots is resolved depth first
    (:func:`result_white`) and keeps none. Returns the kept positions' boards (4 rows),
    their number per capture position and, per chunk, a slice that was needed and not
    loaded (-1 if none)."""
    n = at.shape[0]
    nsq = rules[0]
    kids = np.empty((4, n * CHILD_SLOTS), dtype=np.uint64)
    count = np.zeros(n, dtype=np.int64)
    missing = np.full(nchunks, -1, dtype=np.int64)
    step = (n + nchunks - 1) // nchunks
    for ch in prange(nchunks):
        lo = ch * step
        hi = min(n, lo + step)
        if lo >= hi:
            continue
        moves = np.empty((MAX_CAPTURE_DEPTH, mg.MAX_MOVES, mg.MOVE_FIELDS), dtype=np.uint64)
        ws = mg.new_workspace_nb()
        frames = np.zeros((MAX_CAPTURE_DEPTH, 7), dtype=np.uint64)
        for j in range(lo, hi):
            i = at[j]
            a, b, c, d = wm[i], wk[i], bm[i], bk[i]
            if not wtm[i]:
                a = reverse_board(bm[i], nsq, REVERSE16)
                b = reverse_board(bk[i], nsq, REVERSE16)
                c = reverse_board(wm[i], nsq, REVERSE16)
                d = reverse_board(wk[i], nsq, REVERSE16)
            buf = moves[0]
            m = mg.generate_moves(nbr, rules, True, a, b, c, d, buf, ws)
            base = j * CHILD_SLOTS
            best = -2
            kept = 0
            for k in range(m):
                p, q, r, s = mg.play_row(a, b, c, d, buf, k)
                cwm = reverse_board(p, nsq, REVERSE16)
                cwk = reverse_board(q, nsq, REVERSE16)
                cbm = reverse_board(r, nsq, REVERSE16)
                cbk = reverse_board(s, nsq, REVERSE16)
                if (cwm | cwk) == 0:  # every opposing piece taken
                    best = 1
                    break
                code = material_code(cwm, cwk, cbm, cbk)
                if code == UNCODED or offsets[code] < 0:
                    missing[ch] = code
                    break
                if mg.has_capture(nbr, rules, True, cwm, cwk, cbm, cbk):
                    if kept < CHILD_SLOTS:
                        kids[0, base + kept] = cwm
                        kids[1, base + kept] = cwk
                        kids[2, base + kept] = cbm
                        kids[3, base + kept] = cbk
                    kept += 1
                    continue
                e = offsets[code] * 4 + entry_of(rules, binom, cwm, cwk, cbm, cbk)
                v = (flat[e >> 2] >> ((e & 3) << 1)) & 3
                r = -1 if v == 1 else (1 if v == 2 else 0)  # the capturer's result
                if r > best:
                    best = r
                    if r == 1:
                        break
            if best == 1:
                kept = 0
            elif kept > CHILD_SLOTS:
                r = result_white(
                    flat, offsets, nbr, rules, binom, REVERSE16, a, b, c, d, moves, ws, frames
                )
                if r <= NO_TABLE:
                    missing[ch] = NO_TABLE - r
                    r = 0
                best = r
                kept = 0
            res[i] = best
            count[j] = kept
    return kids, count, missing


@njit(cache=True, parallel=True)
def compact_children(kids, count, first):
    """The children of :func:`capture_children` without the unused slots: capture position
    ``j``'s children at ``first[j] .. first[j] + count[j]``."""
    total = first[-1] + count[-1] if count.shape[0] else 0
    out = np.empty((4, total), dtype=np.uint64)
    for j in prange(count.shape[0]):
        for k in range(count[j]):
            for r in range(4):
                out[r, first[j] + k] = kids[r, j * CHILD_SLOTS + k]
    return out


@njit(cache=True, parallel=True)
def fold_children(res, at, count, first, child):
    """Stage 4: a capture position's result is the best, for its mover, of its children's
    results negated."""
    for j in prange(at.shape[0]):
        if count[j] == 0:
            continue
        best = res[at[j]]
        for k in range(count[j]):
            r = -child[first[j] + k]
            if r > best:
                best = r
        res[at[j]] = best


CAPTURE_BLOCK = 1 << 18  # capture positions handled at once (bounds the children's slots)


def results_staged(
    flat: np.ndarray,
    offsets: np.ndarray,
    variant: Variant,
    wtm: np.ndarray,
    wm: np.ndarray,
    wk: np.ndarray,
    bm: np.ndarray,
    bk: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, int]:
    """Results (int8, +1 / 0 / -1 for the side to move) of a batch of positions through the
    packed WDL tables ``flat`` / ``offsets`` in compiled stages (see above), and the code of
    a slice that was needed and not loaded (-1 if none; the results are then incomplete)."""
    nbr, rules = variant.neighbours, variant.rules
    n = wm.shape[0]
    res = np.zeros(n, dtype=np.int8)
    loc = np.empty(n, dtype=np.int64)
    locate_batch(offsets, nbr, rules, BINOM, wtm, wm, wk, bm, bk, res, loc)
    if n and loc.min() <= LOC_MISSING:
        return res, int(LOC_MISSING - loc.min())
    gather_codes(flat, loc, res)
    captures = np.flatnonzero(loc == LOC_CAPTURE)
    nchunks = max(1, threads) * 4
    for lo in range(0, captures.shape[0], CAPTURE_BLOCK):
        at = captures[lo : lo + CAPTURE_BLOCK]
        kids, count, missing = capture_children(
            flat, offsets, nbr, rules, BINOM, wtm, wm, wk, bm, bk, at, res, nchunks
        )
        if missing.max() >= 0:
            return res, int(missing.max())
        first = np.zeros(count.shape[0], dtype=np.int64)
        np.cumsum(count[:-1], out=first[1:])
        kids = compact_children(kids, count, first)
        child, need = results_staged(
            flat, offsets, variant, np.ones(kids.shape[1], dtype=np.bool_), *kids, threads
        )
        if need >= 0:
            return res, need
        fold_children(res, at, count, first, child)
    return res, -1
