"""A solved slice's statistics: its positions, wins, losses and longest win, counted in
parallel without a branch per entry; and which index entries are positions at all.

The counts are what every slice file records about itself (Fierz's habit: two independent
builds can be compared by them) and what ``tablebase stats`` prints.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tablebase.material.index import colex_boards, unrank_colex


@njit(cache=True, inline="always")
def count_value(v, wins, losses, top):
    """The counts of :func:`value_counts` with one more value ``v`` (0 for an entry that is
    not a position), without a branch."""
    odd = v & 1
    return wins + ((v != 0) & (odd == 0)), losses + odd, max(top, v * (1 - odd))


@njit(cache=True, parallel=True)
def value_counts(values, valid, per):
    """``(positions, wins, losses, largest win value, first entry holding it)`` of a solved
    slice, over its valid entries (``valid`` per board, ``per`` entries per board: the run
    states), without temporary arrays beyond a few counts per block of boards, the blocks
    counted in parallel. The counts and the largest win are taken without a branch per
    entry (wins and losses alternate in no pattern), then the first entry holding the
    largest win is looked for in the first block that has it."""
    boards = valid.shape[0]
    nblocks = min(boards, 256)
    counts = np.zeros((max(nblocks, 1), 4), dtype=np.int64)  # positions wins losses top
    for b in prange(nblocks):
        positions = wins = losses = 0
        top = 0
        b0, b1 = b * boards // nblocks, (b + 1) * boards // nblocks
        if per == 1:  # one flat loop, which the compiler vectorises
            for i in range(b0, b1):
                ok = np.int64(valid[i])
                positions += ok
                wins, losses, top = count_value(np.int64(values[i]) * ok, wins, losses, top)
        else:
            for board in range(b0, b1):
                ok = np.int64(valid[board])
                positions += per * ok
                for i in range(board * per, (board + 1) * per):
                    v = np.int64(values[i]) * ok
                    wins, losses, top = count_value(v, wins, losses, top)
        counts[b, 0] = positions
        counts[b, 1] = wins
        counts[b, 2] = losses
        counts[b, 3] = top
    top = counts[:, 3].max()
    first = -1
    if top > 0:
        b = 0
        while counts[b, 3] < top:  # the first block holding the largest win
            b += 1
        for i in range(b * boards // nblocks * per, (b + 1) * boards // nblocks * per):
            if valid[i // per] and values[i] == top:  # its first entry
                first = i
                break
    return counts[:, 0].sum(), counts[:, 1].sum(), counts[:, 2].sum(), top, first


@njit(cache=True, parallel=True)
def valid_mask(size, nsq, width, counts, binom):
    """Which index entries are real positions (False where two men share a square). The
    black men's placements are unranked once, not once per placement of the white men (the
    men-only English 3040, 67 M entries, took 42 s; a slice assignment per gap cost most
    of it), and the white men's placements are shared among the threads."""
    out = np.ones(size, dtype=np.bool_)
    if counts[0] == 0 or counts[2] == 0:
        return out
    a = nsq - width
    n_wm = binom[a, counts[0]]
    n_bm = binom[a, counts[2]]
    block = size // (n_wm * n_bm)  # king placements per men placement
    bms = colex_boards(counts[2], a, binom)
    for r_wm in prange(n_wm):
        r = np.int64(r_wm)  # a copy: the unranking changes its argument
        wm = unrank_colex(r, counts[0], a, binom) << np.uint64(width)
        for r_bm in range(n_bm):
            if wm & bms[r_bm]:
                start = (r_wm * n_bm + r_bm) * block
                for i in range(start, start + block):
                    out[i] = False
    return out
