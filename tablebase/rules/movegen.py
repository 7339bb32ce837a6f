"""Compiled move generation, make-move and quiet-unmove generation on bitboards.

Everything here is ``numba.njit(cache=True)`` and works side-relative: ``own_m, own_k``
are the men and kings of the side to move, ``opp_m, opp_k`` those of its opponent, and
``white`` says whether the side to move is white (men move towards row 0). Bit ``i`` of a
bitboard is PDN square ``i + 1``. ``nbr`` and ``rules`` come from :class:`Variant`.

Piece sets are moved a diagonal step at a time with shifts (``GEO_MASK``/``GEO_SHIFT``, built
from the variant geometry), so capture detection works on whole bitboards; only the pieces
that can capture are searched, and loops visit set bits rather than every square.

Moves are written into a ``uint64[MAX_MOVES, MOVE_FIELDS]`` buffer, one row per move:
``from, to, captured-bitboard, number captured, path length, path squares...``. A capture is
one move per distinct (from, to, captured set); the path kept is the first route found.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from tablebase.index import lowest_square as _lowest

MAX_MOVES = 512
MAX_PATH = 32
F_FROM, F_TO, F_CAP, F_NCAP, F_PLEN, F_PATH = 0, 1, 2, 3, 4, 5
MOVE_FIELDS = F_PATH + MAX_PATH
MAX_NODES = 1 << 15  # capture-search tree nodes per position

# rules[] layout, mirrored from variants.R_*
_NSQ, _FLYING, _MEN_BACK, _MAJORITY, _CROWN_STOPS, _WIDTH = 0, 1, 2, 3, 4, 5

ONE = np.uint64(1)
ZERO = np.uint64(0)


def _geometry_tables() -> tuple[np.ndarray, np.ndarray]:
    """Bitboard steps of every board width (squares per row) 1..5, from the neighbour tables.

    In PDN numbering a diagonal step is a shift whose size depends on the row's parity, so
    ``GEO_MASK[w, d, k]`` holds the squares whose neighbour in direction ``d`` lies
    ``GEO_SHIFT[w, d, k]`` bits away (down for directions 2, 3; up for 0, 1).
    """
    from tablebase.rules.variants import INTERNATIONAL

    masks = np.zeros((6, 4, 2), dtype=np.uint64)
    shifts = np.zeros((6, 4, 2), dtype=np.int64)
    for width in range(1, 6):
        v = dataclasses.replace(INTERNATIONAL, name=f"width{width}", size=2 * width)
        by_shift: list[dict[int, int]] = [{} for _ in range(4)]
        for i, row in enumerate(v.neighbours):
            for d, j in enumerate(row):
                if j >= 0:
                    by_shift[d][abs(j - i)] = by_shift[d].get(abs(j - i), 0) | (1 << i)
        for d in range(4):
            assert len(by_shift[d]) <= 2
            for k, (shift, mask) in enumerate(sorted(by_shift[d].items())):
                masks[width, d, k] = mask
                shifts[width, d, k] = shift
    return masks, shifts


GEO_MASK, GEO_SHIFT = _geometry_tables()


def new_move_buffer(depth: int = 1) -> np.ndarray:
    """A move buffer (or a stack of ``depth`` buffers for recursive searches)."""
    if depth == 1:
        return np.zeros((MAX_MOVES, MOVE_FIELDS), dtype=np.uint64)
    return np.zeros((depth, MAX_MOVES, MOVE_FIELDS), dtype=np.uint64)


def new_workspace() -> np.ndarray:
    """Scratch space for the capture search: rows are square, captured, count, parent."""
    return np.zeros((4, MAX_NODES), dtype=np.uint64)


@njit(cache=True, inline="always")
def bit(sq):
    return ONE << np.uint64(sq)


@njit(cache=True, inline="always")
def _step(b, width, d):
    """Every square of ``b`` moved one step in direction ``d`` (off-board steps vanish)."""
    lo = (b & GEO_MASK[width, d, 0], np.uint64(GEO_SHIFT[width, d, 0]))
    hi = (b & GEO_MASK[width, d, 1], np.uint64(GEO_SHIFT[width, d, 1]))
    if d < 2:
        return (lo[0] >> lo[1]) | (hi[0] >> hi[1])
    return (lo[0] << lo[1]) | (hi[0] << hi[1])


@njit(cache=True)
def promotion_row(rules, white):
    """Bitboard of the row where men of the given colour are crowned."""
    width = rules[_WIDTH]
    row = (ONE << np.uint64(width)) - ONE
    if white:
        return row
    return row << np.uint64(rules[_NSQ] - width)


@njit(cache=True, inline="always")
def _forward(d, white):
    # directions 0,1 go up (white's forward), 2,3 go down (black's forward)
    if white:
        return d < 2
    return d >= 2


@njit(cache=True)
def _king_can_capture(nbr, sq, flying, opp, empty):
    for d in range(4):
        t = nbr[sq, d]
        if flying:
            while t >= 0 and (empty & bit(t)):
                t = nbr[t, d]
        if t < 0 or not (opp & bit(t)):
            continue
        n2 = nbr[t, d]
        if n2 >= 0 and (empty & bit(n2)):
            return True
    return False


@njit(cache=True)
def has_capture(nbr, rules, white, own_m, own_k, opp_m, opp_k):
    """True if the side to move has a capture (and so must capture)."""
    nsq = rules[_NSQ]
    width = rules[_WIDTH]
    full = (ONE << np.uint64(nsq)) - ONE
    opp = opp_m | opp_k
    occupied = own_m | own_k | opp
    empty = full & ~occupied
    men_back = rules[_MEN_BACK] != 0
    for d in range(4):
        # a man (or a short king) next to an opponent piece with an empty square behind it
        movers = own_m if (men_back or _forward(d, white)) else ZERO
        if rules[_FLYING] == 0:
            movers |= own_k
        if _step(_step(movers, width, d) & opp, width, d) & empty:
            return True
    if own_k and rules[_FLYING] != 0:
        for d in range(4):
            ray = _step(own_k, width, d)
            hit = ray & occupied
            ray &= empty
            while ray:
                ray = _step(ray, width, d)
                hit |= ray & occupied
                ray &= empty
            if _step(hit & opp, width, d) & empty:
                return True
    return False


@njit(cache=True)
def _capturers(nbr, rules, white, own_m, own_k, opp, empty):
    """Bitboard of the pieces of the side to move that can capture."""
    width = rules[_WIDTH]
    men_back = rules[_MEN_BACK] != 0
    flying = rules[_FLYING] != 0
    short = own_m if flying else own_m | own_k
    found = ZERO
    for d in range(4):
        movers = short if (men_back or _forward(d, white)) else short & ~own_m
        landing = _step(_step(movers, width, d) & opp, width, d) & empty
        if landing:
            back = 3 - d  # the opposite direction
            found |= _step(_step(landing, width, back), width, back)
    if flying:
        kings = own_k
        while kings:
            sq = _lowest(kings)
            kings ^= bit(sq)
            if _king_can_capture(nbr, sq, True, opp, empty):
                found |= bit(sq)
    return found


@njit(cache=True)
def _emit(moves, n, frm, to, cap, ncap, ws, node):
    """Record a capture ending at ``node`` unless the same (from, to, captured) exists."""
    for i in range(n):
        if moves[i, F_FROM] == frm and moves[i, F_TO] == to and moves[i, F_CAP] == cap:
            return n
    if n >= MAX_MOVES:
        raise RuntimeError("move buffer overflow")
    moves[n, F_FROM] = frm
    moves[n, F_TO] = to
    moves[n, F_CAP] = cap
    moves[n, F_NCAP] = ncap
    # path: walk parents back to the root
    length = 0
    k = node
    while k >= 0:
        length += 1
        k = np.int64(ws[3, k]) - 1
    if length > MAX_PATH:
        length = MAX_PATH  # keep the start of very long paths; (from, to, cap) stay exact
    moves[n, F_PLEN] = length
    k = node
    j = length - 1
    while k >= 0:
        if j < length:
            moves[n, F_PATH + j] = ws[0, k]
        j -= 1
        k = np.int64(ws[3, k]) - 1
    return n + 1


@njit(cache=True)
def _captures_from(nbr, rules, white, frm, is_king, opp, occupied, moves, n, ws, best):
    """Search of every capture sequence of the piece on ``frm`` (breadth first).

    ``occupied`` excludes the moving piece (its start square is empty during the move);
    captured pieces stay in ``occupied`` so they block until the move ends. Returns the new
    move count and the largest number of pieces captured so far.
    """
    nsq = rules[_NSQ]
    full = (ONE << np.uint64(nsq)) - ONE
    flying = rules[_FLYING] != 0
    men_back = rules[_MEN_BACK] != 0
    stops = rules[_CROWN_STOPS] != 0
    majority = rules[_MAJORITY] != 0
    promo = promotion_row(rules, white)
    # node table: ws[0]=square, ws[1]=captured, ws[2]=count, ws[3]=parent+1
    ws[0, 0] = np.uint64(frm)
    ws[1, 0] = ZERO
    ws[2, 0] = ZERO
    ws[3, 0] = ZERO
    nodes = 1
    i = -1
    while i + 1 < nodes:  # breadth first: the node table is its own queue
        i += 1
        sq = np.int64(ws[0, i])
        cap = ws[1, i]
        cnt = ws[2, i]
        found = False
        if not (stops and not is_king and cnt > 0 and (promo & bit(sq))):
            empty = full & ~occupied
            for d in range(4):
                if is_king and flying:
                    t = nbr[sq, d]
                    while t >= 0 and (empty & bit(t)):
                        t = nbr[t, d]
                    if t < 0 or not (opp & bit(t)) or (cap & bit(t)):
                        continue
                    land = nbr[t, d]
                    while land >= 0 and (empty & bit(land)):
                        if nodes >= MAX_NODES:
                            raise RuntimeError("capture search overflow")
                        ws[0, nodes] = np.uint64(land)
                        ws[1, nodes] = cap | bit(t)
                        ws[2, nodes] = cnt + ONE
                        ws[3, nodes] = np.uint64(i + 1)
                        nodes += 1
                        found = True
                        land = nbr[land, d]
                else:
                    if not is_king and not men_back and not _forward(d, white):
                        continue
                    t = nbr[sq, d]
                    if t < 0 or not (opp & bit(t)) or (cap & bit(t)):
                        continue
                    land = nbr[t, d]
                    if land < 0 or not (empty & bit(land)):
                        continue
                    if nodes >= MAX_NODES:
                        raise RuntimeError("capture search overflow")
                    ws[0, nodes] = np.uint64(land)
                    ws[1, nodes] = cap | bit(t)
                    ws[2, nodes] = cnt + ONE
                    ws[3, nodes] = np.uint64(i + 1)
                    nodes += 1
                    found = True
        if not found and cnt > 0:
            c = np.int64(cnt)
            if majority and c < best:
                continue
            if majority and c > best:
                n = 0  # everything recorded so far captures fewer pieces
                best = c
            elif c > best:
                best = c
            n = _emit(moves, n, np.uint64(frm), np.uint64(sq), cap, cnt, ws, i)
    return n, best


@njit(cache=True)
def generate_moves(nbr, rules, white, own_m, own_k, opp_m, opp_k, moves, ws):
    """Fill ``moves`` with every legal move of the side to move; returns the count.

    Captures are compulsory; with the majority rule only the sequences taking the most
    pieces are kept. Without captures, men step forward and kings step (or fly) any way.
    """
    nsq = rules[_NSQ]
    full = (ONE << np.uint64(nsq)) - ONE
    opp = opp_m | opp_k
    own = own_m | own_k
    occupied = own | opp
    empty = full & ~occupied
    n = 0
    best = 0
    capturers = _capturers(nbr, rules, white, own_m, own_k, opp, empty)
    if capturers:
        while capturers:
            sq = _lowest(capturers)
            b = bit(sq)
            capturers ^= b
            n, best = _captures_from(
                nbr, rules, white, sq, (own_k & b) != ZERO, opp, occupied & ~b, moves, n, ws, best
            )
        return n
    flying = rules[_FLYING] != 0
    rest = own
    while rest:
        sq = _lowest(rest)
        b = bit(sq)
        rest ^= b
        king = (own_k & b) != ZERO
        for d in range(4):
            if not king and not _forward(d, white):
                continue
            t = nbr[sq, d]
            while t >= 0 and (empty & bit(t)):
                if n >= MAX_MOVES:
                    raise RuntimeError("move buffer overflow")
                moves[n, F_FROM] = np.uint64(sq)
                moves[n, F_TO] = np.uint64(t)
                moves[n, F_CAP] = ZERO
                moves[n, F_NCAP] = ZERO
                moves[n, F_PLEN] = np.uint64(2)
                moves[n, F_PATH] = np.uint64(sq)
                moves[n, F_PATH + 1] = np.uint64(t)
                n += 1
                if not (king and flying):
                    break
                t = nbr[t, d]
    return n


@njit(cache=True)
def make_move(rules, white, own_m, own_k, opp_m, opp_k, frm, to, cap):
    """Apply a move; returns the position from the opponent's point of view.

    The result is ``(own_m, own_k, opp_m, opp_k)`` with the *new* side to move first. A man
    ending on its promotion row is crowned.
    """
    fb = ONE << frm
    tb = ONE << to
    if own_m & fb:
        own_m = own_m & ~fb
        if promotion_row(rules, white) & tb:
            own_k = own_k | tb
        else:
            own_m = own_m | tb
    else:
        own_k = (own_k & ~fb) | tb
    opp_m = opp_m & ~cap
    opp_k = opp_k & ~cap
    return opp_m, opp_k, own_m, own_k


@njit(cache=True)
def quiet_unmoves(nbr, rules, white, own_m, own_k, opp_m, opp_k, out, legal_only):
    """Every position that reaches this one by one quiet (non-capture) move.

    The side to move here is ``white``; the previous mover is its opponent. Each
    predecessor is written to ``out[k] = (mover_m, mover_k, other_m, other_k, from, to,
    unpromoted)`` from the previous mover's point of view. Un-promotion is included: a king
    on the opponent's promotion row may have been a man one step back. With ``legal_only``
    predecessors where the mover had a capture (so a quiet move was illegal) are dropped.
    """
    nsq = rules[_NSQ]
    full = (ONE << np.uint64(nsq)) - ONE
    occupied = own_m | own_k | opp_m | opp_k
    empty = full & ~occupied
    flying = rules[_FLYING] != 0
    mover_white = not white
    promo = promotion_row(rules, mover_white)
    k = 0
    for to in range(nsq):
        tb = bit(to)
        if not ((opp_m | opp_k) & tb):
            continue
        is_king = (opp_k & tb) != ZERO
        for d in range(4):
            back = not _forward(d, mover_white)
            # the piece arrived moving in direction (3 - d): it came from direction d of 'to'
            f = nbr[to, d]
            while f >= 0 and (empty & bit(f)):
                fb = bit(f)
                if is_king:
                    pm, pk = opp_m, (opp_k & ~tb) | fb
                    if not legal_only or not has_capture(
                        nbr, rules, mover_white, pm, pk, own_m, own_k
                    ):
                        if k >= out.shape[0]:
                            raise RuntimeError("unmove buffer overflow")
                        out[k, 0] = pm
                        out[k, 1] = pk
                        out[k, 2] = own_m
                        out[k, 3] = own_k
                        out[k, 4] = np.uint64(f)
                        out[k, 5] = np.uint64(to)
                        out[k, 6] = ZERO
                        k += 1
                    if back and (promo & tb) and f == nbr[to, d]:
                        pm, pk = opp_m | fb, opp_k & ~tb
                        if not legal_only or not has_capture(
                            nbr, rules, mover_white, pm, pk, own_m, own_k
                        ):
                            if k >= out.shape[0]:
                                raise RuntimeError("unmove buffer overflow")
                            out[k, 0] = pm
                            out[k, 1] = pk
                            out[k, 2] = own_m
                            out[k, 3] = own_k
                            out[k, 4] = np.uint64(f)
                            out[k, 5] = np.uint64(to)
                            out[k, 6] = ONE
                            k += 1
                    if not flying:
                        break
                else:
                    if back:
                        pm, pk = (opp_m & ~tb) | fb, opp_k
                        if not legal_only or not has_capture(
                            nbr, rules, mover_white, pm, pk, own_m, own_k
                        ):
                            if k >= out.shape[0]:
                                raise RuntimeError("unmove buffer overflow")
                            out[k, 0] = pm
                            out[k, 1] = pk
                            out[k, 2] = own_m
                            out[k, 3] = own_k
                            out[k, 4] = np.uint64(f)
                            out[k, 5] = np.uint64(to)
                            out[k, 6] = ZERO
                            k += 1
                    break
                f = nbr[f, d]
    return k


@njit(cache=True)
def perft(nbr, rules, white, own_m, own_k, opp_m, opp_k, depth, stack, ws):
    """Number of leaf nodes of the legal-move tree ``depth`` plies deep (bulk-counted)."""
    if depth == 0:
        return 1
    moves = stack[depth - 1]
    n = generate_moves(nbr, rules, white, own_m, own_k, opp_m, opp_k, moves, ws)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        a, b, c, e = make_move(
            rules,
            white,
            own_m,
            own_k,
            opp_m,
            opp_k,
            moves[i, F_FROM],
            moves[i, F_TO],
            moves[i, F_CAP],
        )
        total += perft(nbr, rules, not white, a, b, c, e, depth - 1, stack, ws)
    return total


@njit(cache=True)
def new_move_buffer_nb():
    """:func:`new_move_buffer` for compiled callers."""
    return np.zeros((MAX_MOVES, MOVE_FIELDS), dtype=np.uint64)


@njit(cache=True)
def new_workspace_nb():
    """:func:`new_workspace` for compiled callers."""
    return np.zeros((4, MAX_NODES), dtype=np.uint64)
