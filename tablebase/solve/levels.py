"""Pass 2 of the retrograde solver, by levels: its kernels and its schedule.

The state words and the passes as a whole are described in :mod:`tablebase.solve.whole`;
:mod:`tablebase.solve.skeleton` (a whole pair) and :mod:`tablebase.solve.men` (one men
configuration at a time) drive these kernels. A level ``L`` expands every position of value
``L``: its quiet predecessors (:func:`predecessor_indices`, un-moves in the other part) are
set or counted down by compare-and-swap (:func:`update_predecessors`,
:data:`VISIT_BATCH` at a time with their state prefetched). The schedule: a level reads
only the blocks of :data:`WORK_BLOCK` entries with work at it, a block's *due* level (from
its own words, :func:`block_due`) or a mark that one of its positions was set during the
level before (:func:`block_is_due`); the due blocks are found :data:`DUE_AHEAD` blocks
ahead and read before their positions are expanded (:func:`level_stretch`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.material.index import index_of_counted, lowest_square, popcount, rank_among_free
from tablebase.rules.geometry import ONE, king_reach
from tablebase.solve.atomics import cas, prefetch

WORK_BLOCK = 32  # entries of one block of the level passes' schedule (64 bytes of state)

UNMOVE_ROWS = 512  # predecessors of one position (6 kings fly to at most 6 * 17)
VISIT_BATCH = 64  # predecessors the level passes update together (their misses overlap)
DUE_AHEAD = 256  # blocks the level passes look ahead for due ones (to prefetch their state)
STRETCH_ENTRIES = DUE_AHEAD * WORK_BLOCK  # entries of those blocks: the most to expand


@njit(cache=True, inline="always")
def predecessor_indices(rules, shape, board, parts, who, moff, out):
    """Indices (``moff`` + board index, of the slice of ``shape``) of the boards from which
    one of ``white``'s pieces (``who`` = ``(white, with_men)``: white's if true, else
    black's) came to ``board`` (white men, white kings, black men, black kings) by a quiet
    move: the same board with that piece put back; returns how many were written to
    ``out``.

    These are the quiet un-moves of :func:`tablebase.rules.unmoves.quiet_unmoves` without
    the un-promotions (whose predecessors have one man more, in another slice), enumerated
    square by square straight into indices instead of into a buffer of boards. The board's
    own index, in its parts ``parts`` = ``(head, r_wk, r_bk)`` (:func:`index_parts`), comes
    from the caller, who decoded the board from it. A king's un-move leaves the men's part
    of the index as it was, and a black king's the white kings' too. The moved king's group:
    where no king of its group lies between the square it stands on and the one it came
    from, it keeps its place among them, and only its own term of the colex rank changes
    (a white king's un-move leaves the black kings' rank as it was unless one of them lies
    between those squares); else the group is ranked anew. Predecessors in which the
    mover had a capture (so the quiet move was illegal) are included; their state is
    decided, so the caller skips them. Without ``with_men``, only the kings' un-moves (the
    men's lead to another men configuration, :mod:`tablebase.solve.men`)."""
    nbr = rules.nbr
    wm, wk, bm, bk = board
    head, r_wk, r_bk = parts
    white, with_men = who
    counts, binom = shape
    nsq = rules.nsq
    width = rules.width
    flying = rules.flying
    wm, wk, bm, bk = np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk)
    full = (ONE << np.uint64(nsq)) - ONE
    empty = full & ~(wm | wk | bm | bk)
    nwm, nwk, nbm, nbk = counts[0], counts[1], counts[2], counts[3]
    group = wk if white else bk
    kings = group
    m = 0
    if kings:  # a king came from any empty square of its rays (one step if short)
        men = wm | bm
        d_bk = binom[nsq - nwm - nbm - nwk, nbk]
        occ = men if white else men | wk  # the squares the group is ranked around
        r_group = r_wk if white else r_bk
        while kings:
            to = lowest_square(kings)
            tb = ONE << np.uint64(to)
            kings &= kings - ONE
            rest = group ^ tb
            i = popcount(rest & (tb - ONE)) + 1  # its place among its group, from 1
            r_rest = r_group - binom[to - popcount(occ & (tb - ONE)), i]
            came = king_reach(width, flying, to, empty)
            while came:
                f = lowest_square(came)
                fb = ONE << np.uint64(f)
                came &= came - ONE
                lo_b, hi_b = min(tb, fb), max(tb, fb)
                between = (hi_b - ONE) & ~((lo_b << ONE) - ONE)
                if rest & between:
                    r_new = rank_among_free(rest | fb, occ, binom)
                else:
                    r_new = r_rest + binom[f - popcount(occ & (fb - ONE)), i]
                if white:
                    r_b = r_bk
                    if bk & between:
                        r_b = rank_among_free(bk, men | rest | fb, binom)
                    out[m] = moff + (head + r_new) * d_bk + r_b
                else:
                    out[m] = moff + (head + r_wk) * d_bk + r_new
                m += 1
    if not with_men:
        return m
    men = wm if white else bm
    d0 = 2 if white else 0  # white men step towards row 0, so came from directions 2, 3
    while men:  # a man came one step back
        to = lowest_square(men)
        men &= men - ONE
        for d in range(d0, d0 + 2):
            f = nbr[to, d]
            if f >= 0 and (empty >> np.uint64(f)) & ONE:
                back = (ONE << np.uint64(f)) | (ONE << np.uint64(to))
                pwm = wm ^ back if white else wm
                pbm = bm if white else bm ^ back
                out[m] = moff + index_of_counted(nsq, width, (pwm, wk, pbm, bk), counts, binom)
                m += 1
    return m


NEVER = 0xFFFF  # a block's due level when nothing in it has work at any later level


@njit(cache=True)
def work_blocks(size: int) -> int:
    """Blocks of :data:`WORK_BLOCK` entries covering a slice of ``size`` entries."""
    return -(-size // WORK_BLOCK)


@njit(cache=True, inline="always")
def block_is_due(due, touched, b, level):
    """Whether block ``b`` has work at ``level``: its own due level has come, or a position
    in it was set during the level before (``touched[level & 1]``)."""
    return due[b] <= level or touched[level & 1, b] != 0


@njit(cache=True, inline="always")
def block_hits(state, b0, b1, target, mask, new, hits):
    """The offsets from ``b0`` of the words of ``state[b0:b1]`` that have work at this level
    into ``hits``; returns how many. Work: a position of the level's value ``target`` to
    expand, or an undecided one whose exit value is ``new`` (``mask`` keeps the decided bit
    and the exit). Written without branches: decided and undecided words alternate in no
    pattern, so a branch per word would be mispredicted about every other word."""
    t = state.dtype.type(target)
    m = state.dtype.type(mask)
    n = state.dtype.type(new)
    nh = 0
    for i in range(b0, b1):
        s = state[np.uint64(i)]  # an unsigned index: no check for a negative one
        hits[nh] = i - b0
        nh += (s == t) | ((s & m) == n)
    return nh


@njit(cache=True, inline="always")
def block_due(state, b0, b1, level, vb):
    """The next level after ``level`` at which a word of ``state[b0:b1]`` has work of its
    own: a decided position expanded at its value, or an undecided one whose exit may
    decide it (exit value ``ex`` at level ``ex - 1``); :data:`NEVER` if none. Positions set
    later from outside the block are announced by ``touched`` instead."""
    dec = 1 << (2 * vb - 1)
    vmask = (1 << vb) - 1
    exit_draw = vmask
    due = NEVER
    for i in range(b0, b1):
        s = np.int64(state[np.uint64(i)])  # an unsigned index: the loop is vectorised
        v = s & vmask
        if s & dec:
            c = s ^ dec if (s ^ dec) > level else NEVER
        else:
            c = v - 1 if v > level + 1 and v != exit_draw else NEVER
        due = min(due, c)
    return due


@njit(cache=True, inline="always")
def open_block(part, b, level, vb, hits):
    """Block ``b`` of ``part`` (a :class:`~tablebase.solve.records.Part`) at ``level``:
    ``(-1, 0, 0)`` if it is not due; else its mark is cleared and the result is ``(words
    with work, listed in hits, first entry, end entry)`` (:func:`block_hits`)."""
    if not block_is_due(part.due, part.touched, part.sbo + b, level):
        return -1, 0, 0
    part.touched[level & 1, part.sbo + b] = 0
    dec = 1 << (2 * vb - 1)
    vmask = (1 << vb) - 1
    b0 = b * WORK_BLOCK
    b1 = min(part.size, b0 + WORK_BLOCK)
    soff = part.soff
    nh = block_hits(part.state, soff + b0, soff + b1, dec | level, dec | vmask, level + 1, hits)
    return nh, b0, b1


@njit(cache=True, inline="always")
def decide_by_exit(state, i, s, level, vb):
    """The undecided word ``s`` of ``state[i]`` at ``level``: set to ``level + 1`` if its
    exit decides it then (a win through the exit, or a loss once no inside move is left);
    returns 1 if this call set it."""
    if exit_decides(s, level, vb):
        if cas(state, i, s, (1 << (2 * vb - 1)) | (level + 1)) == s:
            return 1
    return 0


@njit(cache=True, inline="always")
def exit_decides(s, level, vb):
    """Whether the undecided word ``s`` is decided at ``level + 1`` by its exit: a win
    through the exit then, or a loss then once no inside move is left."""
    ex = s & ((1 << vb) - 1)
    return ex == level + 1 and (ex % 2 == 0 or (s >> vb) == 0)


@njit(cache=True, inline="always")
def update_if_full(upd, where, m, level):
    """The level passes' batch of predecessors ``where[:m]``: updated
    (:func:`update_predecessors`) once it holds :data:`VISIT_BATCH`; returns ``(m left
    queued, positions set)``."""
    if m < VISIT_BATCH:
        return m, 0
    return 0, update_predecessors(upd, where, m, level)


@njit(cache=True)
def level_scratch(rows):
    """Scratch space of one caller of :func:`tablebase.solve.skeleton._level_range` (a
    kernel): ``where`` for ``rows``
    predecessors of one position and a batch, ``hits``, ``dues`` and ``expand``."""
    return (
        np.zeros(rows + VISIT_BATCH, dtype=np.int64),
        np.zeros(WORK_BLOCK, dtype=np.int64),
        np.zeros(DUE_AHEAD, dtype=np.int64),
        np.zeros(STRETCH_ENTRIES, dtype=np.int64),
    )


@njit(cache=True, inline="always")
def level_stretch(part, c0, c1, level, vb, scratch):
    """Blocks ``c0..c1`` (at most :data:`DUE_AHEAD`) of ``part`` (a
    :class:`~tablebase.solve.records.Part`) at ``level``, all but the expansions, listed in
    ``expand`` of ``scratch`` (:func:`level_scratch`); returns ``(positions set, entries to
    expand)``. The due blocks
    are listed first and their state prefetched (a due block has not been read for a
    while: its state is rarely in cache); then each is read: the undecided words whose exit
    decides them now are set, the entries of value ``level`` go to ``expand``, and the
    block gets its next due level.

    Reading the blocks ahead of the expansions is exact: whether a block is due does not
    change during its level (the marks set in it are the next level's), and the expansions
    change its words only by setting them for the next level, which ``touched`` announces,
    or by one count less, which leaves their due level as it was."""
    _, hits, dues, expand = scratch
    state, due, soff, sbo = part.state, part.due, part.soff, part.sbo
    nd = 0
    for b in range(c0, c1):
        if block_is_due(due, part.touched, sbo + b, level):
            dues[nd] = b
            nd += 1
            prefetch(state, soff + b * WORK_BLOCK)
    dec = 1 << (2 * vb - 1)
    target = dec | level
    nset = 0
    ne = 0
    for i in range(nd):
        b = dues[i]
        nh, b0, b1 = open_block(part, b, level, vb, hits)
        for h in range(nh):
            idx = b0 + hits[h]
            s = np.int64(state[soff + idx])
            if s & dec == 0:
                nset += decide_by_exit(state, soff + idx, s, level, vb)
            elif s == target:
                expand[ne] = idx
                ne += 1
        due[sbo + b] = block_due(state, soff + b0, soff + b1, level, vb)
    return nset, ne


@njit(cache=True, inline="always")
def count_down(old, new, vb):
    """The undecided word ``old`` of a predecessor of a win found at level ``new - 1``: one
    move fewer not known to lose, or a loss at ``new`` if that was its last one and its
    exit is no better (none, or a loss no later)."""
    ex = old & ((1 << vb) - 1)
    if (old >> vb) == 1 and (ex == 0 or (ex % 2 == 1 and ex <= new)):
        return (1 << (2 * vb - 1)) | new  # every move now leads to an opponent win
    return old - (1 << vb)


@njit(cache=True, inline="always")
def update_predecessors(upd, where, m, level):
    """The predecessors ``where[:m]`` (state indices in the part at ``upd.moff``, a
    :class:`~tablebase.solve.records.Updates`) of a position of value ``level``: wins at
    ``level + 1`` if it is a loss; if it is a win, each undecided one has one move fewer
    not known to lose, and is a loss at ``level + 1`` once none is left (exits permitting).
    Marks the blocks of the positions set in ``touched`` for the next level; returns how
    many were set. Count decrements are compare-and-swaps when ``upd.atomic`` (several
    threads), plain stores otherwise."""
    state, touched, moff, mbo, vb, atomic = upd
    dec = 1 << (2 * vb - 1)
    new = level + 1
    nxt = new & 1
    nset = 0
    for j in range(m):
        prefetch(state, where[j])
    for j in range(m):
        p = where[j]
        old = np.int64(state[p])
        if old & dec:
            continue
        if level % 2 == 1:  # predecessors of a loss are wins
            # A plain store is safe even against another thread: the only other change a
            # predecessor of a loss can see at this level is a count decrement, and the win
            # overrides it.
            state[p] = dec | new
            touched[nxt, mbo + (p - moff) // WORK_BLOCK] = 1
            nset += 1
            continue
        while True:
            nv = count_down(old, new, vb)
            if atomic:
                got = np.int64(cas(state, p, old, nv))
            else:
                got = old
                state[p] = nv
            if got == old:
                if nv & dec:
                    touched[nxt, mbo + (p - moff) // WORK_BLOCK] = 1
                    nset += 1
                break
            old = got  # another thread changed it first: try again
            if old & dec:
                break
    return nset
