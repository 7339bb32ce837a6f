"""Captures: whether the side to move must capture, and the one search of its captures.

Captures are compulsory. Only the pieces that can capture are searched
(:func:`capturing_pieces`, on whole bitboards with :mod:`tablebase.rules.geometry`'s
steps); where the variant also captures straight (Frisian, ``rules.straight``), captures
search the eight directions of its 8-column ``rules.nbr``, and with ``rules.value`` the
capture of greatest value is kept (:func:`capture_key`).

The search (:func:`_walk`) visits every capture sequence of every capturing piece in a node
table, expanding each node the same way, and at each sequence's end hands the capture to one
of two policies, chosen by a constant so that the compiled code of each holds only its own:
:data:`EMIT_MOVES` takes the nodes breadth first (the table its own queue, every node kept
with its parent) and writes a move with its route into a move buffer
(:func:`capture_moves`, for :func:`tablebase.rules.movegen.generate_moves`), one per
distinct (from, to, captured set, crowns), the route the first found;
:data:`EMIT_SUCCESSORS` takes them depth first (the table a stack, rows reused: 5-10 %
faster than the queue on International captures) and writes the position after the capture,
each once (:func:`capture_successors`, for the solver, which needs the results and not the
moves). The order differs, the set of captures is the same.
English rules (short kings, every sequence legal, a man stopping where it is crowned) have a
shortcut for the successors (:func:`_short_successors`): most captures there take one
piece, and it takes them without the search.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.rules.bits import lowest_square, popcount
from tablebase.rules.geometry import (
    ONE,
    ZERO,
    bit,
    first_on_ray,
    forward,
    promotion_row,
    step,
    step_straight,
)
from tablebase.rules.kernel import kernel
from tablebase.rules.makemove import apply_move
from tablebase.rules.movebuffer import (
    F_CAP,
    F_CROWN,
    F_FROM,
    F_NCAP,
    F_PATH,
    F_PLEN,
    F_TO,
    MAX_MOVES,
    MAX_NODES,
    MAX_PATH,
)

# ``rules.crowning``, mirrored from variants.CROWNING: what a man reaching its promotion row
# in the middle of a capture does
CROWN_PASSES, CROWN_STOPS, CROWN_CONTINUES = 0, 1, 2

# what the capture search emits at the end of each capture (see the module docstring)
EMIT_MOVES, EMIT_SUCCESSORS = 0, 1


@kernel
def has_capture(rules, white, own_m, own_k, opp_m, opp_k):
    """True if the side to move has a capture (and so must capture)."""
    nsq = rules.nsq
    width = rules.width
    full = (ONE << np.uint64(nsq)) - ONE
    opp = opp_m | opp_k
    occupied = own_m | own_k | opp
    empty = full & ~occupied
    men_back = rules.men_back
    for d in range(4):
        # a man (or a short king) next to an opponent piece with an empty square behind it
        movers = own_m if (men_back or forward(d, white)) else ZERO
        if not rules.flying:
            movers |= own_k
        if step(step(movers, width, d) & opp, width, d) & empty:
            return True
    if own_k and rules.flying:
        kings = own_k
        while kings:  # the first piece in each of a king's ways, found by a ray's bit scan
            sq = lowest_square(kings)
            kings &= kings - ONE
            for d in range(4):
                t = first_on_ray(width, sq, d, occupied)
                if t >= 0 and (opp & bit(t)) and (step(bit(t), width, d) & empty):
                    return True
    if rules.straight:
        return _has_straight_capture(rules, own_m, own_k, opp, occupied, empty)
    return False


@kernel
def _has_straight_capture(rules, own_m, own_k, opp, occupied, empty):
    """True if a piece can capture straight along a row or column (men in all four ways)."""
    width = rules.width
    flying = rules.flying
    short = own_m if flying else own_m | own_k
    for d in range(4, 8):
        if step_straight(step_straight(short, width, d) & opp, width, d) & empty:
            return True
    if own_k and flying:
        for d in range(4, 8):
            ray = step_straight(own_k, width, d)
            hit = ray & occupied
            ray &= empty
            while ray:
                ray = step_straight(ray, width, d)
                hit |= ray & occupied
                ray &= empty
            if step_straight(hit & opp, width, d) & empty:
                return True
    return False


@kernel
def capturing_pieces(rules, white, own_m, own_k, opp, empty):
    """Bitboard of the pieces of the side to move that can capture."""
    nbr = rules.nbr
    width = rules.width
    men_back = rules.men_back
    flying = rules.flying
    short = own_m if flying else own_m | own_k
    found = ZERO
    for d in range(4):
        movers = short if (men_back or forward(d, white)) else short & ~own_m
        landing = step(step(movers, width, d) & opp, width, d) & empty
        if landing:
            back = 3 - d  # the opposite direction
            found |= step(step(landing, width, back), width, back)
    straight = rules.straight
    if straight:  # men capture straight in all four ways
        for d in range(4, 8):
            landing = step_straight(step_straight(short, width, d) & opp, width, d) & empty
            if landing:
                back = 11 - d
                found |= step_straight(step_straight(landing, width, back), width, back)
    if flying:
        ndir = 8 if straight else 4
        kings = own_k
        while kings:
            sq = lowest_square(kings)
            kings ^= bit(sq)
            if _king_can_capture(nbr, sq, True, opp, empty, ndir, rules.width):
                found |= bit(sq)
    return found


@njit(cache=True, inline="always")
def _short_capturers(width, white, men_back, own_m, own_k, opp, empty):
    """:func:`capturing_pieces` for short kings capturing diagonally only (English checkers):
    without the rules' other branches, which cost the solver's pass 1 more than the test
    itself, since it asks every position whether it has a capture."""
    found = ZERO
    short = own_m | own_k
    for d in range(4):
        movers = short if (men_back or forward(d, white)) else own_k
        landing = step(step(movers, width, d) & opp, width, d) & empty
        if landing:
            back = 3 - d
            found |= step(step(landing, width, back), width, back)
    return found


@kernel
def _king_can_capture(nbr, sq, flying, opp, empty, ndir, width):
    """True if the king on ``sq`` can capture in one of the first ``ndir`` directions
    (``width``: the board's squares per row, for the ray tables)."""
    for d in range(ndir):
        if flying:
            t = first_on_ray(width, sq, d, ~empty)
        else:
            t = nbr[sq, d]
        if t < 0 or not (opp & bit(t)):
            continue
        n2 = nbr[t, d]
        if n2 >= 0 and (empty & bit(n2)):
            return True
    return False


@njit(cache=True, inline="always")
def _jump(nbr, sq, d, opp, taken, empty):
    """A short capture from ``sq`` in direction ``d``: ``(square taken, landing square)``
    over an opponent piece (``opp``) not yet taken (``taken``) to an empty square; the
    landing square is -1 where there is none."""
    t = nbr[sq, d]
    if t < 0 or not (opp & bit(t)) or (taken & bit(t)):
        return t, -1
    land = nbr[t, d]
    if land < 0 or not (empty & bit(land)):
        return t, -1
    return t, land


@njit(cache=True, inline="always")
def capture_key(rules, is_king, count, kings_taken):
    """The order of captures under the majority rule: the largest key must be played.

    Without ``rules.value`` the key is the number of pieces taken. With it (Frisian) it is
    the capture's value, doubled, plus one for a capture made with a king, which takes
    precedence at equal value. The value of taking ``m`` men and ``k`` kings is
    ``(m + 2k) * 64 - k``: a king is worth just under two men, so ``n`` kings are worth more
    than ``2n - 1`` men and less than ``2n`` (exact while fewer than 64 kings are taken; the
    reading and its sources are in docs/RULES-VARIANTS.md). This is the value's one home.
    """
    if not rules.value:
        return count
    men = count - kings_taken
    value = (men + 2 * kings_taken) * 64 - kings_taken
    return 2 * value + (1 if is_king else 0)


@kernel
def capture_moves(rules, white, own_m, own_k, opp_m, opp_k, moves, ws):
    """Write the legal captures of the side to move into ``moves`` (a move buffer) with their
    routes; returns how many (0: no capture, and then ``moves`` is untouched). ``ws`` is a
    capture workspace (:func:`tablebase.rules.movebuffer.new_workspace`)."""
    full = (ONE << np.uint64(rules.nsq)) - ONE
    opp = opp_m | opp_k
    empty = full & ~(own_m | own_k | opp)
    capturers = capturing_pieces(rules, white, own_m, own_k, opp, empty)
    if capturers == ZERO:
        return 0
    return _walk(rules, white, (own_m, own_k, opp_m, opp_k), capturers, moves, ws, EMIT_MOVES)


@kernel
def capture_successors(rules, white, own_m, own_k, opp_m, opp_k, out, ws):
    """The distinct positions after the legal captures of the side to move, for callers that
    need the results and not the moves (the tablebase's solver): row ``i`` of ``out``
    (:func:`tablebase.rules.movebuffer.new_successor_buffer`) gets ``(own_m, own_k, opp_m,
    opp_k)`` with the *new* side to move first, as
    :func:`tablebase.rules.makemove.play_row` returns them; returns how many (0: no
    capture). The same set as :func:`capture_moves` followed by ``play_row``, from the same
    search (:func:`_walk`), each result once; ``ws`` is a capture workspace."""
    full = (ONE << np.uint64(rules.nsq)) - ONE
    opp = opp_m | opp_k
    empty = full & ~(own_m | own_k | opp)
    pos = (own_m, own_k, opp_m, opp_k)
    if (
        not rules.flying
        and not rules.majority
        and not rules.straight
        and rules.crowning == CROWN_STOPS
    ):
        capturers = _short_capturers(rules.width, white, rules.men_back, own_m, own_k, opp, empty)
        if capturers == ZERO:
            return 0
        return _short_successors(rules, white, pos, capturers, out, ws)
    capturers = capturing_pieces(rules, white, own_m, own_k, opp, empty)
    if capturers == ZERO:
        return 0
    return _walk(rules, white, pos, capturers, out, ws, EMIT_SUCCESSORS)


@njit(cache=True, inline="always")
def _walk(rules, white, pos, capturers, out, ws, emit):
    """Search every capture sequence of the pieces on ``capturers`` in the position ``pos`` =
    ``(own_m, own_k, opp_m, opp_k)`` and emit each legal capture into ``out`` as ``emit``
    says; returns the rows of ``out`` used.

    The moving piece's start square is empty during the move; captured pieces stay on the
    board, blocking, until it ends. A man landing on its promotion row mid-capture passes it
    (International), stops there crowned (English) or is crowned and searches on as a king
    (Russian), as ``rules.crowning`` says. A flying king must land where it can capture on
    if any such square exists behind the piece (FMJD 4.6); without the majority rule that is
    a constraint of its own, with it the shorter routes are dropped anyway. With the majority
    rule only the captures of the largest :func:`capture_key` are kept.

    ``ws`` (:func:`tablebase.rules.movebuffer.new_workspace`) is the node table, one row per
    node: square, captured, count, parent + 1 (breadth first only), is king (bit 0) and the
    direction the node was reached in, plus one (bits 1-4; 0 at the root). Breadth first
    (:data:`EMIT_MOVES`) a node stays once taken, so a route is read back through the
    parents; depth first (:data:`EMIT_SUCCESSORS`) the node taken is popped and its first
    child overwrites its row.
    """
    own_m, own_k, opp_m, opp_k = pos
    nbr = rules.nbr
    width = rules.width
    full = (ONE << np.uint64(rules.nsq)) - ONE
    flying = rules.flying
    men_back = rules.men_back
    crowning = rules.crowning
    majority = rules.majority
    promo = promotion_row(rules, white)
    ndir = 8 if rules.straight else 4
    opp = opp_m | opp_k
    empty0 = full & ~(own_m | own_k | opp)
    n = 0
    best = 0
    while capturers:
        frm = lowest_square(capturers)
        fb = bit(frm)
        capturers ^= fb
        is_king = (own_k & fb) != ZERO
        empty = empty0 | fb  # the moving piece's square is empty during the move
        ws[0, 0] = np.uint64(frm)
        ws[0, 1] = ZERO
        ws[0, 2] = ZERO
        ws[0, 3] = ZERO
        ws[0, 4] = ONE if is_king else ZERO
        nodes = 1
        i = -1
        while True:
            if emit == EMIT_MOVES:  # breadth first, the node table its own queue
                if i + 1 == nodes:
                    break
                i += 1
            else:  # depth first, the node table a stack (no routes to keep)
                if nodes == 0:
                    break
                nodes -= 1
                i = nodes
            sq = np.int64(ws[i, 0])
            cap = ws[i, 1]
            cnt = ws[i, 2]
            king = (ws[i, 4] & ONE) != ZERO
            came = np.int64(ws[i, 4] >> ONE) - 1  # the direction this node was reached in
            back = -1 if came < 0 else (3 - came if came < 4 else 11 - came)
            found = False
            if not (crowning == CROWN_STOPS and not king and cnt > 0 and (promo & bit(sq))):
                for d in range(ndir):
                    if king and flying:
                        if d == back:
                            continue  # the piece just taken is the first in that way
                        t = first_on_ray(width, sq, d, ~empty)
                        if t < 0 or not (opp & bit(t)) or (cap & bit(t)):
                            continue
                        taken = cap | bit(t)
                        first = nbr[t, d]
                        must_go_on = False
                        if not majority:  # FMJD 4.6: land where the capture goes on
                            land = first
                            while land >= 0 and (empty & bit(land)):
                                if _king_can_capture(
                                    nbr, land, True, opp & ~taken, empty, ndir, width
                                ):
                                    must_go_on = True
                                    break
                                land = nbr[land, d]
                        land = first
                        while land >= 0 and (empty & bit(land)):
                            if must_go_on and not _king_can_capture(
                                nbr, land, True, opp & ~taken, empty, ndir, width
                            ):
                                land = nbr[land, d]
                                continue
                            if nodes >= MAX_NODES:
                                raise RuntimeError("capture search overflow")
                            ws[nodes, 0] = np.uint64(land)
                            ws[nodes, 1] = taken
                            ws[nodes, 2] = cnt + ONE
                            if emit == EMIT_MOVES:
                                ws[nodes, 3] = np.uint64(i + 1)
                            ws[nodes, 4] = ONE | np.uint64((d + 1) << 1)
                            nodes += 1
                            found = True
                            land = nbr[land, d]
                    else:
                        if not king and not men_back and not forward(d, white):
                            continue
                        t, land = _jump(nbr, sq, d, opp, cap, empty)
                        if land < 0:
                            continue
                        if nodes >= MAX_NODES:
                            raise RuntimeError("capture search overflow")
                        crowned = crowning == CROWN_CONTINUES and (promo & bit(land)) != ZERO
                        ws[nodes, 0] = np.uint64(land)
                        ws[nodes, 1] = cap | bit(t)
                        ws[nodes, 2] = cnt + ONE
                        if emit == EMIT_MOVES:
                            ws[nodes, 3] = np.uint64(i + 1)
                        ws[nodes, 4] = ONE if (king or crowned) else ZERO
                        nodes += 1
                        found = True
            if found or cnt == ZERO:
                continue
            c = capture_key(rules, is_king, np.int64(cnt), np.int64(popcount(cap & opp_k)))
            if majority and c < best:
                continue
            if majority and c > best:
                n = 0  # everything found so far captures less
            if c > best:
                best = c
            crowns = not is_king and (king or (promo & bit(sq)) != ZERO)
            if emit == EMIT_MOVES:
                n = _add_move(out, n, np.uint64(frm), np.uint64(sq), cap, crowns, ws, i)
            else:
                a, b, e, f = apply_move(
                    own_m, own_k, opp_m, opp_k, np.uint64(frm), np.uint64(sq), cap, crowns
                )
                n = _add_successor(out, n, a, b, e, f)
    return n


@kernel
def _add_move(moves, n, frm, to, cap, crowns, ws, node):
    """Row ``n`` of ``moves`` set to the capture ending at node ``node`` of the search (its
    route read back through the parents) unless an earlier row holds the same (from, to,
    captured, crowns); returns the rows used."""
    crown = ONE if crowns else ZERO
    for i in range(n):
        if (
            moves[i, F_FROM] == frm
            and moves[i, F_TO] == to
            and moves[i, F_CAP] == cap
            and moves[i, F_CROWN] == crown
        ):
            return n
    if n >= MAX_MOVES:
        raise RuntimeError("move buffer overflow")
    moves[n, F_FROM] = frm
    moves[n, F_TO] = to
    moves[n, F_CAP] = cap
    moves[n, F_NCAP] = np.uint64(popcount(cap))
    moves[n, F_CROWN] = crown
    # path: walk parents back to the root
    length = 0
    k = node
    while k >= 0:
        length += 1
        k = np.int64(ws[k, 3]) - 1
    if length > MAX_PATH:
        length = MAX_PATH  # keep the start of very long paths; (from, to, cap) stay exact
    moves[n, F_PLEN] = length
    k = node
    j = length - 1
    while k >= 0:
        if j < length:
            moves[n, F_PATH + j] = ws[k, 0]
        j -= 1
        k = np.int64(ws[k, 3]) - 1
    return n + 1


@njit(cache=True, inline="always")
def _add_successor(out, n, a, b, e, f):
    """Row ``n`` of ``out`` set to the position ``(a, b, e, f)`` unless an earlier row
    holds it (two ways of capturing the same pieces to the same square); returns the
    rows used."""
    for i in range(n):
        if out[i, 0] == a and out[i, 1] == b and out[i, 2] == e and out[i, 3] == f:
            return n
    if n >= MAX_MOVES:
        raise RuntimeError("move buffer overflow")
    out[n, 0] = a
    out[n, 1] = b
    out[n, 2] = e
    out[n, 3] = f
    return n + 1


@njit(cache=True, inline="always")
def _short_successors(rules, white, pos, capturers, out, ws):
    """:func:`capture_successors` of ``pos`` = ``(own_m, own_k, opp_m, opp_k)`` for short
    kings capturing diagonally, every sequence legal whatever it takes, a man's capture
    ending where it is crowned (English checkers), from the pieces that can capture
    (``capturers``): the search of :func:`_walk` without what those rules never need
    (flying landings, counts and values, the way a piece came in, crowning on the way,
    routes), depth first. A capture of one piece (most of them) is taken without the
    search; the stack rows of ``ws`` hold a square and the pieces taken to reach it."""
    own_m, own_k, opp_m, opp_k = pos
    nbr = rules.nbr
    men_back = rules.men_back
    promo = promotion_row(rules, white)
    opp = opp_m | opp_k
    empty0 = ((ONE << np.uint64(rules.nsq)) - ONE) & ~(own_m | own_k | opp)
    m0 = 0 if (men_back or white) else 2  # white men capture towards row 0: ways 0, 1
    m1 = 4 if men_back else m0 + 2
    n = 0
    while capturers:
        frm = lowest_square(capturers)
        fb = bit(frm)
        capturers ^= fb
        king = (own_k & fb) != ZERO
        d0 = 0 if king else m0
        d1 = 4 if king else m1
        empty = empty0 | fb  # the moving piece's square is empty during the move
        top = 0
        for d in range(d0, d1):  # the first jumps; a capture that ends there is taken now
            t, land = _jump(nbr, frm, d, opp, ZERO, empty)
            if land < 0:
                continue
            cap = bit(t)
            crowned = not king and (promo & bit(land)) != ZERO
            goes_on = False
            if not crowned:
                for d2 in range(d0, d1):
                    if _jump(nbr, land, d2, opp, cap, empty)[1] >= 0:
                        goes_on = True
                        break
            if goes_on:  # searched below, from the square it reached
                ws[top, 0] = np.uint64(land)
                ws[top, 1] = cap
                top += 1
                continue
            a, b, e, f = apply_move(
                own_m, own_k, opp_m, opp_k, np.uint64(frm), np.uint64(land), cap, crowned
            )
            n = _add_successor(out, n, a, b, e, f)
        while top > 0:
            top -= 1
            sq = np.int64(ws[top, 0])
            cap = ws[top, 1]
            crowned = not king and (promo & bit(sq)) != ZERO  # only after a capture
            found = False
            if not crowned:
                for d in range(d0, d1):
                    t, land = _jump(nbr, sq, d, opp, cap, empty)
                    if land < 0:
                        continue
                    if top >= MAX_NODES:
                        raise RuntimeError("capture search overflow")
                    ws[top, 0] = np.uint64(land)
                    ws[top, 1] = cap | bit(t)
                    top += 1
                    found = True
            if found:
                continue
            a, b, e, f = apply_move(
                own_m, own_k, opp_m, opp_k, np.uint64(frm), np.uint64(sq), cap, crowned
            )
            n = _add_successor(out, n, a, b, e, f)
    return n
