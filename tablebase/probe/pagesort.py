"""A batch's positions grouped by the page (block) their entries lie in, in compiled passes:
the grouping (:func:`by_page`), and its cut into the blocks read straight from the files
and the rest (:func:`coded_pages`, :func:`split_pages`; :mod:`tablebase.probe.cache`)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True)
def coded_pages(uniq, bounds, sizes):
    """Which of the pages ``uniq`` (with positions ``bounds``, as :func:`by_page` gives
    them) are group-coded blocks read directly (``sizes`` >= 0), how many positions they
    hold and how many they are."""
    ok = np.zeros(uniq.shape[0], dtype=np.bool_)
    positions = 0
    blocks = 0
    for j in range(uniq.shape[0]):
        if uniq[j] < sizes.shape[0] and sizes[uniq[j]] >= 0:
            ok[j] = True
            positions += bounds[j + 1] - bounds[j]
            blocks += 1
    return ok, positions, blocks


@njit(cache=True)
def split_pages(ok, sel, addr, uniq, bounds, positions, blocks):
    """:func:`by_page`'s grouping of a batch (``sel``, ``addr``, ``uniq``, ``bounds``) cut
    in two: the pages ``ok`` says (``blocks`` of them, holding ``positions``), then the
    rest, each grouped as before."""
    n = uniq.shape[0]
    out = (
        np.empty(positions, dtype=sel.dtype), np.empty(positions, dtype=np.int64),
        np.empty(blocks, dtype=np.int64), np.empty(blocks + 1, dtype=np.int64),
        np.empty(sel.shape[0] - positions, dtype=sel.dtype),
        np.empty(sel.shape[0] - positions, dtype=np.int64),
        np.empty(n - blocks, dtype=np.int64), np.empty(n - blocks + 1, dtype=np.int64),
    )  # fmt: skip
    dsel, daddr, duniq, dbounds, rsel, raddr, runiq, rbounds = out
    dbounds[0] = 0
    rbounds[0] = 0
    done = np.zeros((2, 2), dtype=np.int64)  # per side: positions and pages so far
    for k in range(n):
        if ok[k]:
            _take((sel, addr), bounds[k], bounds[k + 1], uniq[k], (dsel, daddr, duniq, dbounds),
                  done, 0)  # fmt: skip
        else:
            _take((sel, addr), bounds[k], bounds[k + 1], uniq[k], (rsel, raddr, runiq, rbounds),
                  done, 1)  # fmt: skip
    return out


@njit(cache=True, inline="always")
def _take(batch, lo, hi, page, side_out, done, side):
    """Append positions ``lo`` to ``hi`` of a batch (``batch``: its ``sel``, ``addr``; page
    ``page``) to one side of :func:`split_pages` (``side_out``: its ``sel``, ``addr``, ``uniq``,
    ``bounds``; ``done[side]``: its positions and pages so far)."""
    sel, addr = batch
    osel, oaddr, ouniq, obounds = side_out
    i = done[side, 0]
    for x in range(lo, hi):
        osel[i] = sel[x]
        oaddr[i] = addr[x]
        i += 1
    done[side, 0] = i
    ouniq[done[side, 1]] = page
    done[side, 1] += 1
    obounds[done[side, 1]] = i


BUCKETS = 64  # page ranges (and runs of a batch) by_page sorts apart, in parallel


@njit(cache=True, parallel=True)
def by_page(sel, addr, shift, pages):
    """``sel`` and ``addr`` grouped by page (``addr >> shift``, below ``pages``; in order
    within a page), the pages present in order, and where each one's group starts (one
    more at the end). A counting sort in two rounds, each in parallel: the positions are
    first grouped by ranges of pages (:data:`BUCKETS` of them), then each range's by page,
    so that the counts a round writes to at random lie close together."""
    n = addr.shape[0]
    nb = max(1, min(BUCKETS, pages))
    span = -(-pages // nb)  # pages a range: range b holds pages b * span to (b + 1) * span
    nc = max(1, min(BUCKETS, n // 4096))  # runs of the batch counted apart
    counts = np.zeros((nc, nb), dtype=np.int64)
    for c in prange(nc):
        for k in range(c * n // nc, (c + 1) * n // nc):
            counts[c, (addr[k] >> shift) // span] += 1
    offs = np.empty((nc, nb), dtype=np.int64)  # where run c's positions of range b go
    first = np.empty(nb + 1, dtype=np.int64)  # where range b's positions begin
    at = 0
    for b in range(nb):
        first[b] = at
        for c in range(nc):
            offs[c, b] = at
            at += counts[c, b]
    first[nb] = n
    tsel = np.empty(n, dtype=sel.dtype)
    taddr = np.empty(n, dtype=np.int64)
    for c in prange(nc):
        o = offs[c]
        for k in range(c * n // nc, (c + 1) * n // nc):
            b = (addr[k] >> shift) // span
            tsel[o[b]] = sel[k]
            taddr[o[b]] = addr[k]
            o[b] += 1
    start = np.zeros(pages, dtype=np.int64)  # per page: its count, then where it begins
    present = np.zeros(nb + 1, dtype=np.int64)
    for b in prange(nb):
        for k in range(first[b], first[b + 1]):
            start[taddr[k] >> shift] += 1
        run = first[b]
        for p in range(b * span, min(pages, (b + 1) * span)):
            count = start[p]
            start[p] = run
            run += count
            present[b + 1] += count > 0
    for b in range(nb):
        present[b + 1] += present[b]
    uniq = np.empty(present[nb], dtype=np.int64)
    bounds = np.empty(present[nb] + 1, dtype=np.int64)
    bounds[present[nb]] = n
    out_sel = np.empty(n, dtype=sel.dtype)
    out_addr = np.empty(n, dtype=np.int64)
    for b in prange(nb):
        j = present[b]
        hi = min(pages, (b + 1) * span)
        for p in range(b * span, hi):
            end = start[p + 1] if p + 1 < hi else first[b + 1]
            if end > start[p]:
                uniq[j] = p
                bounds[j] = start[p]
                j += 1
        for k in range(first[b], first[b + 1]):
            p = taddr[k] >> shift
            at = start[p]
            start[p] = at + 1
            out_sel[at] = tsel[k]
            out_addr[at] = taddr[k]
    return out_sel, out_addr, uniq, bounds
