"""The solver for pairs with men: one men configuration at a time, the most advanced first.

A man's quiet step is irreversible: it takes the man one row forward, so the men's
advancement (:func:`config_order`: black men's rows minus white men's rows, on the board
of the pair's first slice) grows by one with every step of a man of either colour, and
captures and promotions leave the pair. The entries of a pair fall into men configurations
(the placements of its men: the top part of the index, :mod:`tablebase.material.index`, so a
configuration is a run of ``K`` entries, the placements of its kings, in each part of the
pair, :mod:`tablebase.solve.whole`). Inside the pair a position reaches only positions of its own
configuration (the kings' moves) and of configurations one step more advanced (the men's
steps). So the configurations are solved from the most advanced down, those of equal
advancement in parallel, each completely before any configuration that reaches it:

1. pass 1 of :mod:`tablebase.solve.whole` over the configuration's ``2 K`` entries (both parts),
   with only the kings' moves counted inside and the men's steps read like promotions, as
   exits, from the configurations already solved;
2. the level passes over the configuration alone, in the thread's scratch: ``2 K``
   four-byte state words (no exit value or move count overflows them), which stay in the
   cache for the smaller configurations and are prefetched in the larger ones. The
   positions to expand at each level are listed, not searched for: a bucket per level for
   the values and exits known after pass 1, and the list of positions set at the level
   before;
3. its values into the pair's state, where the less advanced configurations read them
   (an undecided word is a draw).

The distances are those of the passes over the whole pair, by the same rules in the same
order of levels (``tests/tablebase/test_solve_men.py`` compares both on every pair of
three and four pieces they share, in four variants). What it saves: the whole pair's level
passes read blocks of the state to find their work at each of up to 255 levels, and visit
every man's un-move, a cache miss into a far configuration; here a configuration's levels
run in the cache, and a man's step is read once per position, from a configuration whose
entries lie in the same order as the reader's (mostly in cache lines just read).

Used for pairs of two different slices with men, without king runs, and from
:data:`MIN_KING_ENTRIES` to :data:`MAX_KING_ENTRIES` king placements per configuration
(below, the work per configuration is too small to pay for its set-up; above, its scratch
grows past what was measured: :func:`applies`). A configuration's levels visit its words in
the order of their lists, which a large configuration's cache does not follow, so they are
prefetched: a list's positions a few ahead, and the predecessors of a batch of
expansions before they are updated. A slice that is its own mirror keeps the passes over
the whole pair: its colour flip swaps configurations.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
from numba import njit, prange

from tablebase.material.index import (
    BINOM,
    cursor_at,
    cursor_boards,
    cursor_next,
    cursor_start,
    lowest_square,
    men_rank,
    rank_among_free,
    reverse_board,
    unrank_colex,
)
from tablebase.material.slices import Slice
from tablebase.rules.variants import Variant
from tablebase.solve.atomics import cas, prefetch
from tablebase.solve.levels import (
    UNMOVE_ROWS,
    VISIT_BATCH,
    count_down,
    exit_decides,
    predecessor_indices,
)
from tablebase.solve.records import Entries, PairWords, Shape, Tables, Words
from tablebase.solve.whole import OVERFLOW, combine, init_range, init_scratch, max_decided

LOCAL_VB = 16  # a configuration's own state words: four bytes, nothing overflows
# King placements per configuration below which the pair is solved whole: a configuration
# of one (English 2040+4020, men only) costs its set-up for two entries, 14.7 s by men
# against 6.4 s whole; one king of either side (26 to 29 placements in English) is faster
# by men (1140+4011: 6.8 s against 10.7 s; 2130+3021: 13.3 s against 15.6 s; one thread)
MIN_KING_ENTRIES = 16
# ... and from which it is solved whole. Short kings: up to the largest English 7-piece
# configurations by men, although their words (8 bytes per king placement) leave the
# cache, since the levels prefetch them (one thread, the other core busy: 0411+1104, 850 K
# placements, 11.1 s against 12.4-12.8 s whole; 0213+1302, 1.7 M, 22.2 s against
# 24.7-25.6 s; 0115+1501, 4.4 M, 56.7 s against 92.0 s; 0214+1402, 11 M, 175.8 s against
# 227.3 s; 0313+1303, 14.7 M, 250.8 s against 262.8 s). Flying kings: the same limit,
# measured since the prefetching (one thread, load about 4 on two cores, values
# identical: 1103+0311, 848 K placements, 28.8-35.7 s by men against 33.8-35.6 s whole;
# 1202+0212, 1.07 M, 34.5 s against 33.4-36.1 s; 6 pieces, 0411+1104, 9.5 M, 287.9 s
# against 312.5 s; the limit was 2^18 before the prefetching, 2^21 before this). Above
# it a pair may still go out of core by men
# (:func:`solvable`), where the whole pair does not fit the memory cap
MAX_KING_ENTRIES = 1 << 24
MAX_KING_ENTRIES_FLYING = 1 << 24
# both parts: state words, buckets, two lists; and the kings of an entry (both parts')
SCRATCH_BYTES_PER_KING_ENTRY = 2 * (4 + 4 + 4 + 4) + 16
LIST_AHEAD = 16  # positions of a level's lists whose words and kings are prefetched ahead
MAX_LEVEL = (1 << 16) - 2  # the largest level a configuration's buckets take


@njit(cache=True)
def king_entries(nsq: int, counts: np.ndarray, binom: np.ndarray) -> int:
    """Entries of one men configuration in one part of the pair: its kings' placements
    (compiled, so that the compiled :func:`to_file_order` counts them the same way)."""
    free = nsq - int(counts[0]) - int(counts[2])
    return int(binom[free, counts[1]] * binom[free - counts[1], counts[3]])


def solves(variant: Variant, pair: tuple[Slice, ...]) -> bool:
    """Whether ``pair`` is solved one men configuration at a time in memory: it can be
    (:func:`solvable`) and it is faster so (see :func:`applies`)."""
    return solvable(variant, pair) and applies(
        variant.squares, np.array(tuple(pair[0]), dtype=np.int64), BINOM, len(pair),
        variant.flying_kings,
    )  # fmt: skip


def solvable(variant: Variant, pair: tuple[Slice, ...]) -> bool:
    """Whether ``pair`` can be solved one men configuration at a time, whatever the king
    placements per configuration (what a pair out of core needs,
    :mod:`tablebase.solve.bands`): a variant without king runs, slices with men. A slice
    that is its own mirror (a pair of one) is too: its black-to-move part, laid out by its
    own configurations, is solved beside the white-to-move one as for two slices (twice
    the work of its values; the in-memory passes take it whole), and is its white-to-move
    part once mirrored (:func:`tablebase.build.outofcore.finish` checks it)."""
    return variant.king_move_limit == 0 and len(pair) in (1, 2) and pair[0].men > 0


def applies(nsq: int, counts: np.ndarray, binom: np.ndarray, pair_size: int, flying: bool) -> bool:
    """Whether a pair of two slices of ``counts`` (the first slice's pieces) is solved by
    men configurations in memory, where that is faster (see the module docstring;
    ``flying``: the variant's kings fly); the caller has ruled out king runs."""
    if pair_size != 2 or counts[0] + counts[2] == 0:
        return False
    top = MAX_KING_ENTRIES_FLYING if flying else MAX_KING_ENTRIES
    return MIN_KING_ENTRIES <= king_entries(nsq, counts, binom) < top


def scratch_bytes(nsq: int, counts: np.ndarray, binom: np.ndarray) -> int:
    """Memory one thread's configuration scratch takes (:func:`config_scratch`)."""
    return SCRATCH_BYTES_PER_KING_ENTRY * king_entries(nsq, counts, binom) + (1 << 20)


@njit(cache=True)
def config_order(nsq, width, counts, binom):
    """The men configurations (their rank, the top part of an index) from the most advanced
    down, and where each group of equal advancement starts in that order (one more entry:
    the end). Advancement: the rows of the black men (which step to higher rows) less those
    of the white men."""
    a = nsq - width
    n_bm = binom[a, counts[2]]
    n = binom[a, counts[0]] * n_bm
    rows = nsq // width
    top = rows * (counts[0] + counts[2])  # advancement + top is 0 .. 2 * top
    adv = np.empty(n, dtype=np.int16)  # 2 * top: 2 * 10 rows * 8 men at most
    for r in range(n):
        wm = unrank_colex(np.int64(r // n_bm), counts[0], a, binom) << np.uint64(width)
        bm = unrank_colex(np.int64(r % n_bm), counts[2], a, binom)
        t = top
        while bm:
            t += lowest_square(bm) // width
            bm &= bm - np.uint64(1)
        while wm:
            t -= lowest_square(wm) // width
            wm &= wm - np.uint64(1)
        adv[r] = 2 * top - t  # the most advanced first
    counts_at = np.zeros(2 * top + 2, dtype=np.int64)
    for r in range(n):
        counts_at[adv[r] + 1] += 1
    for t in range(2 * top + 1):
        counts_at[t + 1] += counts_at[t]
    starts = counts_at.copy()
    order = np.empty(n, dtype=np.int64)
    for r in range(n):
        order[counts_at[adv[r]]] = r
        counts_at[adv[r]] += 1
    groups = np.zeros(2 * top + 2, dtype=np.int64)
    ng = 0
    for t in range(2 * top + 1):
        if starts[t + 1] > starts[t]:
            groups[ng] = starts[t]
            ng += 1
    groups[ng] = n
    return order, groups[: ng + 1].copy()


def pool_threads() -> int:
    """The threads of numba's pool (``NUMBA_NUM_THREADS``): the most a parallel pass runs,
    and the rows of a configuration scratch (a thread writes the row of its pool id)."""
    # numba.config sets its names at run time (from the environment): mypy cannot see them
    return numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]


def config_scratch(kk: int, threads: int) -> tuple[np.ndarray, ...]:
    """The scratch of ``threads`` threads for configurations of ``kk`` king placements, row
    ``t`` of each array thread ``t``'s: the state words (both parts), the flag bits of each
    part, the level buckets and their counts, the lists of positions to expand, the
    predecessors of a batch of expansions, the kings of each entry (white, black). Made by
    numpy once per pair, so that a large configuration's words lie on huge pages (numpy
    asks Linux for them; what the compiled code allocates gets small pages, and a
    configuration's levels read its words at random) and are not faulted in again for
    every group of configurations; pages a thread never touches take no memory."""
    n2 = 2 * kk
    nflag = (kk + 7) // 8 + 2
    return (
        np.empty((threads, n2), dtype=np.uint32),
        np.zeros((threads, nflag), dtype=np.uint8),
        np.zeros((threads, nflag), dtype=np.uint8),
        np.empty((threads, n2), dtype=np.int32),
        np.empty((threads, MAX_LEVEL + 2), dtype=np.int64),
        np.empty((threads, n2), dtype=np.int32),
        np.empty((threads, n2), dtype=np.int32),
        np.empty((threads, UNMOVE_ROWS + VISIT_BATCH), dtype=np.int64),
        np.empty((threads, kk), dtype=np.uint64),
        np.empty((threads, kk), dtype=np.uint64),
    )


@njit(cache=True, inline="always")
def _event_level(s, ldec, vmask):
    """The level at which the word ``s`` (after pass 1) has work of its own: a decided
    position's value (expanded then), or an undecided one's exit value less one (its exit
    may decide it then); 0 if none."""
    if s & ldec:
        return s ^ ldec
    ex = s & vmask
    if ex != 0 and ex != vmask:
        return ex - 1
    return 0


@njit(cache=True, inline="always")
def _merge_flags(local, flags, foff, lo, hi):
    """Bits ``lo..hi`` (counted from ``foff``, a multiple of 8) of ``local`` into
    ``flags``; ``local`` is zeroed for the next configuration. The first and last byte
    may be shared with a neighbouring configuration solved by another thread: they are
    set by compare-and-swap."""
    nbytes = ((hi - 1 - foff) >> 3) + 1
    g0 = foff >> 3
    for b in range(nbytes):
        v = local[b]
        if v == 0:
            continue
        local[b] = 0
        if b == 0 or b == nbytes - 1:
            old = flags[g0 + b]
            while True:
                got = cas(flags, g0 + b, old, old | v)
                if got == old:
                    break
                old = got
        else:
            flags[g0 + b] |= v


@njit(cache=True, inline="always")
def _keep_flags(local, flags, foff, lo, hi):
    """:func:`_merge_flags`, or where ``flags`` is empty (a band's solve keeps no flag
    bits) ``local`` zeroed for the next configuration."""
    if flags.shape[0] > 0:
        _merge_flags(local, flags, foff, lo, hi)
    else:
        local[: ((hi - 1 - foff) >> 3) + 1] = 0


@njit(cache=True, inline="always")
def _fold_exit(w, v):
    """The undecided four-byte word ``w`` with one of its counted moves, a man's step to a
    position of value ``v``, made an exit instead: one count less, and its candidate
    folded into the exit (:func:`tablebase.solve.whole.combine`)."""
    vmask = (1 << LOCAL_VB) - 1
    ex = w & vmask
    best = -1 if ex == 0 else (0 if ex == vmask else ex)
    best = combine(best, v)
    return (w - (1 << LOCAL_VB)) & ~vmask | (vmask if best == 0 else best)


@njit(cache=True, inline="always")
def quiet_man_steps(nsq, width, nbr, wm, bm, white, steps):
    """The quiet steps of ``white``'s men (black's if false) in the configuration of men
    ``wm``, ``bm`` that stay men (a step onto the promotion row crowns: it leads to another
    slice), into the rows of ``steps`` (``uint64``: the square stepped to as a bit, then
    the white men and the black men after the step); returns how many."""
    one = np.uint64(1)
    men = wm | bm
    movers = wm if white else bm
    d0 = 0 if white else 2  # white men step towards row 0 (directions 0, 1), black away
    promo = (one << np.uint64(width)) - one
    if not white:
        promo <<= np.uint64(nsq - width)
    n = 0
    while movers:
        f = lowest_square(movers)
        movers &= movers - one
        for d in range(d0, d0 + 2):
            t = nbr[f, d]
            if t < 0:
                continue
            tbit = one << np.uint64(t)
            if (men | promo) & tbit:
                continue
            step = (one << np.uint64(f)) | tbit
            steps[n, 0] = tbit
            steps[n, 1] = wm ^ step if white else wm
            steps[n, 2] = bm if white else bm ^ step
            n += 1
    return n


@njit(cache=True)
def _men_steps(local, poff, pair, goff, rules, shape, config, white):
    """Every quiet step of ``white``'s men (black's if false) in the configuration
    ``config`` (its men ``wm``, ``bm``, its entry ``j``'s kings ``wks[j]``, ``bks[j]``),
    whose part's words start at ``poff`` in ``local``: the step made an exit of the
    undecided positions that have it (:func:`_fold_exit`), its value read from the part of
    ``pair`` (a :class:`~tablebase.solve.records.PairWords`; undecided a draw) at ``goff``,
    in the more advanced configuration the step leads to. For each step the entries are
    taken in order, and so are the entries it leads to (mostly: the kings' ranks among the
    free squares move by one at most); returns the values read."""
    nbr = rules.nbr
    wm, bm, wks, bks = config
    state, gvb, slots = pair.state, pair.vb, pair.slots
    counts, binom = shape
    nsq = rules.nsq
    width = rules.width
    kk = wks.shape[0]
    nwk, nbm, nbk = counts[1], counts[2], counts[3]
    free = nsq - counts[0] - nbm
    d_bk = binom[free - nwk, nbk]
    ldec = 1 << (2 * LOCAL_VB - 1)
    gdec = 1 << (2 * gvb - 1)
    steps = np.empty((2 * nsq, 3), dtype=np.uint64)
    reads = 0
    for i in range(quiet_man_steps(nsq, width, nbr, wm, bm, white, steps)):
        tbit, wm2, bm2 = steps[i, 0], steps[i, 1], steps[i, 2]
        men2 = wm2 | bm2
        base = goff + slots[men_rank(nsq, width, wm2, bm2, nbm, binom)] * kk
        for a in range(0, kk, d_bk):
            wk = wks[a]
            if wk & tbit:
                continue
            rw = rank_among_free(wk, men2, binom) * d_bk
            occ = men2 | wk
            for j in range(a, a + d_bk):
                w = np.int64(local[poff + j])
                if w & ldec:
                    continue
                bk = bks[j]
                if bk & tbit:
                    continue
                s = np.int64(state[base + rw + rank_among_free(bk, occ, binom)])
                local[poff + j] = _fold_exit(w, s ^ gdec if s & gdec else 0)
                reads += 1
    return reads


@njit(cache=True, inline="always")
def _update_local(local, where, m, level, nxt, nn):
    """The predecessors ``where[:m]`` (words of ``local``) of positions of value ``level``
    in a configuration's levels (:func:`tablebase.solve.levels.update_predecessors` on its own
    words): prefetched first, so that their cache misses overlap, then wins at
    ``level + 1`` if the positions were losses, else one move fewer not known to lose;
    those set are appended to ``nxt`` from ``nn`` on; returns the new ``nn``."""
    ldec = 1 << (2 * LOCAL_VB - 1)
    new = level + 1
    for i in range(m):
        prefetch(local, where[i])
    for i in range(m):
        w = where[i]
        old = np.int64(local[w])
        if old & ldec:
            continue
        nv = ldec | new if level % 2 == 1 else count_down(old, new, LOCAL_VB)
        local[w] = nv
        if nv & ldec:
            nxt[nn] = w
            nn += 1
    return nn


@njit(cache=True)
def _solve_config(pair, tables, rules, shape, kk, r_men, sc):
    """Men configuration ``r_men`` (of ``kk`` king placements) of ``pair`` (a
    :class:`~tablebase.solve.records.PairWords`), the configurations it reaches solved,
    reading the solved ``tables``; returns (largest value, :data:`OVERFLOW` if one does not
    fit the pair's state words; tables read; predecessor visits)."""
    local, lfw, lfb, ev, cnt, todo, nxt, where, wks, bks, init_sc = sc
    state, offw, offb, vb, flags_w, flags_b, slots = pair
    counts, binom = shape
    nsq = rules.nsq
    width = rules.width
    lo = r_men * kk
    at = slots[r_men] * kk  # where its words lie in each part
    d_bk = binom[nsq - counts[0] - counts[1] - counts[2], counts[3]]
    head = lo // d_bk  # the men's part of the index times the white kings' placements
    foff = lo - (lo & 7)
    n2 = 2 * kk
    ldec = 1 << (2 * LOCAL_VB - 1)
    vmask = (1 << LOCAL_VB) - 1
    # the configuration's boards (its men, and its kings by entry): decoded once, in order
    cur, boards, free1, free2 = init_sc[2], init_sc[3], init_sc[4], init_sc[5]
    cursor_start(lo, nsq, width, counts, binom, cur)
    cursor_boards(nsq, width, counts, cur, 0, boards, free1, free2)
    wm, bm = boards[0], boards[2]
    if wm & bm:  # not positions: pass 1 over the decoded entries flags them (no stored
        # WDL code); decided draws, nothing to expand
        for part_b in (False, True):
            init_range(
                Words(local, kk - lo if part_b else -lo, LOCAL_VB, lfb if part_b else lfw, foff),
                tables, rules, shape, Entries(lo, lo + kk, part_b, wks[:0], bks[:0], wm, bm),
                init_sc,
            )  # fmt: skip
        for p in range(n2):
            state[offb + at + p - kk if p >= kk else offw + at + p] = 1 << (2 * vb - 1)
        _keep_flags(lfw, flags_w, foff, lo, lo + kk)
        _keep_flags(lfb, flags_b, foff, lo, lo + kk)
        return 0, 0, 0
    for j in range(kk):
        if j > 0:
            ch = cursor_next(nsq, width, counts, cur)
            cursor_boards(nsq, width, counts, cur, ch, boards, free1, free2)
        wks[j] = boards[1]
        bks[j] = boards[3]
    # 1. pass 1 over both parts, every quiet move counted inside (as for the whole pair)
    t, r1 = init_range(
        Words(local, -lo, LOCAL_VB, lfw, foff), tables, rules, shape,
        Entries(lo, lo + kk, False, wks, bks, wm, bm), init_sc,
    )  # fmt: skip
    if t == OVERFLOW:
        return OVERFLOW, 0, 0
    t, r2 = init_range(
        Words(local, kk - lo, LOCAL_VB, lfb, foff), tables, rules, shape,
        Entries(lo, lo + kk, True, wks, bks, wm, bm), init_sc,
    )  # fmt: skip
    if t == OVERFLOW:
        return OVERFLOW, 0, 0
    # the men's steps: from counted moves to exits, read from the configurations they reach
    config = (wm, bm, wks, bks)
    r3 = _men_steps(local, 0, pair, offb, rules, shape, config, True)
    r3 += _men_steps(local, kk, pair, offw, rules, shape, config, False)
    # 2. levels: the words with work of their own at a level, in buckets by level (an
    # exit's event tagged with a 1 bit), then the positions set at the level before
    maxlev = 0
    for p in range(n2):  # each word's level, kept in the list not yet in use
        lv = _event_level(np.int64(local[p]), ldec, vmask)
        todo[p] = min(lv, MAX_LEVEL + 1)
        maxlev = max(maxlev, lv)
    if maxlev > MAX_LEVEL:
        return OVERFLOW, 0, 0
    cnt[: maxlev + 2] = 0
    for p in range(n2):
        cnt[todo[p] + 1] += 1
    cnt[1] = 0  # level 0: no work of its own
    for lv in range(maxlev + 1):
        cnt[lv + 1] += cnt[lv]
    for p in range(n2):
        lv = todo[p]
        if lv > 0:
            ev[cnt[lv]] = 2 * p + (0 if local[p] & ldec else 1)
            cnt[lv] += 1
    # now the bucket of level L is ev[cnt[L - 1]:cnt[L]]
    visits = 0
    ncur = 0
    level = 1
    while level <= maxlev or ncur > 0:
        new = level + 1
        nn = 0
        nq = 0  # predecessors queued in where
        e0 = cnt[level - 1] if level <= maxlev else 0
        e1 = cnt[level] if level <= maxlev else 0
        for e in range(e0, e1 + ncur):
            # the word and kings of a position further down the lists, requested now: the
            # lists visit a large configuration's entries in no order the cache follows
            a = e + LIST_AHEAD
            pa = np.int64(ev[a]) >> 1 if a < e1 else (todo[a - e1] if a < e1 + ncur else -1)
            if pa >= 0:
                ja = pa - kk if pa >= kk else pa  # its entry in its part
                prefetch(local, pa)
                prefetch(wks, ja)
                prefetch(bks, ja)
            if e < e1:
                x = np.int64(ev[e])
                p = x >> 1
                if x & 1:  # an exit's event
                    s = np.int64(local[p])
                    if (s & ldec) == 0 and exit_decides(s, level, LOCAL_VB):
                        local[p] = ldec | new
                        nxt[nn] = p
                        nn += 1
                    continue
            else:
                p = np.int64(todo[e - e1])
            # expand p (value level): its predecessors by a king's un-move, in the other part
            part_b = p >= kk
            j = p - kk if part_b else p
            moff = -lo if part_b else kk - lo
            r_wk = j // d_bk
            k = predecessor_indices(
                rules, shape, (wm, wks[j], bm, bks[j]), (head, r_wk, j - r_wk * d_bk),
                (part_b, False), moff, where[nq:],
            )  # fmt: skip
            visits += k
            nq += k
            if nq >= VISIT_BATCH:
                nn = _update_local(local, where, nq, level, nxt, nn)
                nq = 0
        nn = _update_local(local, where, nq, level, nxt, nn)
        todo, nxt = nxt, todo
        ncur = nn
        level += 1
    # 3. the values into the pair's state (undecided: a draw)
    gdec = 1 << (2 * vb - 1)
    dmax = max_decided(vb)
    top = 0
    for p in range(n2):
        s = np.int64(local[p])
        g = offb + at + p - kk if p >= kk else offw + at + p
        if s & ldec:
            v = s ^ ldec
            if v > dmax:
                return OVERFLOW, 0, 0
            state[g] = gdec | v
            top = max(top, v)
        else:
            state[g] = 0
    _keep_flags(lfw, flags_w, foff, lo, lo + kk)
    _keep_flags(lfb, flags_b, foff, lo, lo + kk)
    return top, r1 + r2 + r3, visits


@njit(cache=True)
def _next_config(taken):
    """The next configuration of a group for the calling thread: ``taken[0]`` counted up by
    one, atomically; returns its value before."""
    while True:
        i = taken[0]
        if cas(taken, 0, i, i + 1) == i:
            return i


@njit(cache=True, parallel=True)
def solve_group(pair, tables, rules, shape, kk, configs, threads, scratch):
    """The men configurations ``configs`` (of ``kk`` king placements each, of equal
    advancement, the more advanced ones
    solved) of ``pair`` (a :class:`~tablebase.solve.records.PairWords`), reading the solved
    ``tables``, in parallel on ``threads``
    threads (at most the rows of ``scratch``, :func:`config_scratch`), each taking the next
    configuration left as it finishes one; returns (largest value, :data:`OVERFLOW` if one
    does not fit the state word; tables read; predecessor visits)."""
    n = configs.shape[0]
    nth = max(1, min(n, threads, scratch[0].shape[0]))
    out = np.zeros((nth, 3), dtype=np.int64)
    taken = np.zeros(1, dtype=np.int64)
    for c in prange(nth):  # one scratch row per iteration, whichever thread runs it
        sc = (
            scratch[0][c], scratch[1][c], scratch[2][c], scratch[3][c], scratch[4][c],
            scratch[5][c], scratch[6][c], scratch[7][c], scratch[8][c], scratch[9][c],
            init_scratch(),
        )  # fmt: skip
        while True:
            i = _next_config(taken)
            if i >= n:
                break
            t, r, v = _solve_config(pair, tables, rules, shape, kk, configs[i], sc)
            if t == OVERFLOW:
                out[c, 0] = OVERFLOW
                taken[0] = n  # the others stop after their configuration
                break
            out[c, 0] = max(out[c, 0], t)
            out[c, 1] += r
            out[c, 2] += v
    return out[:, 0].max(), out[:, 1].sum(), out[:, 2].sum()


def solve_pair(
    state: np.ndarray,
    offw: int,
    offb: int,
    vals: np.ndarray,
    offsets: np.ndarray,
    variant: Variant,
    pair: tuple[Slice, ...],
    vb: int,
    flags_w: np.ndarray,
    flags_b: np.ndarray,
    threads: Callable[[], int],
) -> tuple[int, int]:
    """Solve ``pair`` (its parts at ``offw``, ``offb`` in ``state``)
    into ``state`` one men configuration at a time, group by group
    (:func:`config_order`); ``threads()`` sets and returns the threads of the next group.
    Returns (largest value, random accesses); raises OverflowError where a value does not
    fit the state word."""
    nsq, width = variant.squares, variant.per_row
    counts = np.array(tuple(pair[0]), dtype=np.int64)
    order, groups = config_order(nsq, width, counts, BINOM)
    kk = king_entries(nsq, counts, BINOM)
    scratch = config_scratch(kk, pool_threads())
    slots = np.arange(len(order), dtype=np.int64)  # all of the pair, in index order
    words = PairWords(state, offw, offb, vb, flags_w, flags_b, slots)
    top = reads = 0
    for g in range(len(groups) - 1):
        n = threads()
        t, r, v = solve_group(
            words, Tables(vals, offsets), variant.rules,
            Shape(counts, BINOM), kk, order[groups[g] : groups[g + 1]], n, scratch,
        )  # fmt: skip
        if t >= OVERFLOW:
            raise OverflowError(
                f"a value does not fit the {2 * vb}-bit state word in {pair[0].name}"
            )
        top, reads = max(top, int(t)), reads + int(r) + int(v)
    return top, reads


@njit(cache=True, parallel=True)
def to_file_order(part, out, flags, geometry, shape, nchunks, c0=0, c1=-1):
    """:func:`tablebase.solve.whole.to_file_order` for a pair solved by men configurations (the
    same result): the colour mirror's part ``part`` (entry ``i``: board ``i`` of the slice of
    ``shape``, black to move; ``geometry``: the board's squares and squares per row) into
    the mirror slice's index order in ``out``, with its flag bits (``flags`` =
    ``(part_flags, out_flags)``, ``out_flags`` zeroed; none where ``part_flags`` is empty);
    only the men configurations ``c0..c1`` (``c1`` -1: to the last). Configuration by configuration:
    the colour flip takes a men configuration to one of the mirror's, a run of as many
    entries, so the men are ranked once per configuration, each entry's kings only, and the
    writes stay in one run (in the cache where a configuration fits) instead of reading the
    part at random."""
    part_flags, out_flags = flags
    nsq, width = geometry
    counts, binom = shape
    free = nsq - counts[0] - counts[2]
    kk = king_entries(nsq, counts, binom)
    n_conf = part.shape[0] // kk if c1 < 0 else c1
    keep = part_flags.shape[0] > 0
    d_bk = binom[free - counts[3], counts[1]]  # the mirror's black kings are our white ones
    step = (n_conf - c0 + nchunks - 1) // nchunks
    for c in prange(nchunks):  # a run of configurations each, the cursor walking on
        r0 = c0 + c * step
        r1 = min(n_conf, r0 + step)
        if r0 >= r1:
            continue
        cur, boards, free1, free2 = cursor_at(r0 * kk, nsq, width, counts, binom)
        local = np.zeros((kk + 7) // 8 + 2, dtype=np.uint8)
        for r in range(r0, r1):  # the cursor at the configuration's first entry
            lo = r * kk
            wm, bm = boards[0], boards[2]
            fwm, fbm = reverse_board(bm, nsq), reverse_board(wm, nsq)
            base = men_rank(nsq, width, fwm, fbm, counts[0], binom) * kk
            foff = base - (base & 7)
            if wm & bm:  # not positions, nor are their mirrors: 0, flagged
                out[base : base + kk] = 0
                for k in range(kk if keep else 0):
                    b = base + k - foff
                    local[b >> 3] |= np.uint8(1 << (b & 7))
                _keep_flags(local, out_flags, foff, base, base + kk)
                if r + 1 < r1:  # over its entries, to the next configuration
                    cursor_start(lo + kk, nsq, width, counts, binom, cur)
                    cursor_boards(nsq, width, counts, cur, 0, boards, free1, free2)
                continue
            fmen = fwm | fbm
            for j in range(kk):
                if j > 0:
                    ch = cursor_next(nsq, width, counts, cur)
                    cursor_boards(nsq, width, counts, cur, ch, boards, free1, free2)
                fwk = reverse_board(boards[3], nsq)
                fbk = reverse_board(boards[1], nsq)
                k = rank_among_free(fwk, fmen, binom) * d_bk + rank_among_free(
                    fbk, fmen | fwk, binom
                )
                out[base + k] = part[lo + j]
                i = lo + j
                if keep and (part_flags[i >> 3] >> (i & 7)) & 1:
                    b = base + k - foff
                    local[b >> 3] |= np.uint8(1 << (b & 7))
            _keep_flags(local, out_flags, foff, base, base + kk)
            if r + 1 < r1:  # on to the next configuration's first entry
                ch = cursor_next(nsq, width, counts, cur)
                cursor_boards(nsq, width, counts, cur, ch, boards, free1, free2)
