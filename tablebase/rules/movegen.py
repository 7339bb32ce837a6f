"""Compiled move generation, make-move and quiet-unmove generation on bitboards.

Everything here is ``numba.njit(cache=True)`` and works side-relative: ``own_m, own_k``
are the men and kings of the side to move, ``opp_m, opp_k`` those of its opponent, and
``white`` says whether the side to move is white (men move towards row 0). Bit ``i`` of a
bitboard is PDN square ``i + 1``. ``rules`` is the variant's record
(:class:`tablebase.rules.variants.Rules`: the neighbour table ``rules.nbr`` and the rule
fields by name).

Piece sets are moved a diagonal step at a time with shifts (``GEO_MASK``/``GEO_SHIFT``, built
from the variant geometry), so capture detection works on whole bitboards; only the pieces
that can capture are searched, and loops visit set bits rather than every square. Where the
variant also captures straight (Frisian, ``rules.straight``), captures search the eight
directions of its 8-column ``rules.nbr`` (quiet moves stay diagonal, columns 0-3), and with
``rules.value`` the capture of greatest value is kept (:func:`capture_key`).

Frisian's king-move limit is state outside the bitboards: :func:`generate_moves_barred`
leaves out the quiet moves of one barred king, :func:`king_barred` says which king that is,
:func:`king_run_after` and :func:`king_run_kept` carry a side's run over a move.

Moves are written into a ``uint64[MAX_MOVES, MOVE_FIELDS]`` buffer, one row per move:
``from, to, captured-bitboard, number captured, path length, crowns, path squares...``. A
capture is one move per distinct (from, to, captured set, crowns); the path kept is the first
route found. ``crowns`` is 1 when a man becomes a king by the move: by ending on its
promotion row, or (Russian) by reaching it during a capture and going on as a king.

Callers read the buffer through the compiled accessors (:func:`move_from`, :func:`move_to`,
:func:`move_captured`, :func:`move_capture_count`, :func:`move_path_length`,
:func:`move_path_square`, :func:`move_crowns`, :func:`find_move`) and apply a row with
:func:`play_row`, never by column number; :class:`tablebase.rules.moves.MoveList` is their
face for Python callers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.rules import board
from tablebase.rules.bits import highest_square, popcount
from tablebase.rules.bits import lowest_square as _lowest
from tablebase.rules.kernel import kernel

MAX_MOVES = 512
MAX_PATH = 32
F_FROM, F_TO, F_CAP, F_NCAP, F_PLEN, F_CROWN, F_PATH = 0, 1, 2, 3, 4, 5, 6
MOVE_FIELDS = F_PATH + MAX_PATH
MAX_NODES = 1 << 15  # capture-search tree nodes per position

# ``rules.crowning``, mirrored from variants.CROWNING: what a man reaching its promotion row
# in the middle of a capture does
CROWN_PASSES, CROWN_STOPS, CROWN_CONTINUES = 0, 1, 2

ONE = np.uint64(1)
ZERO = np.uint64(0)


def _geometry_tables() -> tuple[np.ndarray, np.ndarray]:
    """Bitboard steps of every board width (squares per row) 1..5, from the neighbour tables.

    In PDN numbering a diagonal step is a shift whose size depends on the row's parity, so
    ``GEO_MASK[w, d, k]`` holds the squares whose neighbour in direction ``d`` lies
    ``GEO_SHIFT[w, d, k]`` bits away (down for directions 2, 3, 6, 7; up for 0, 1, 4, 5).
    A straight step (directions 4-7) is one shift: a row down or up is ``2 * w`` bits, a
    square left or right one bit.
    """
    masks = np.zeros((6, 8, 2), dtype=np.uint64)
    shifts = np.zeros((6, 8, 2), dtype=np.int64)
    for width in range(1, 6):
        by_shift: list[dict[int, int]] = [{} for _ in range(8)]
        for i, row in enumerate(board.neighbours(2 * width, straight=True)):
            for d, j in enumerate(row):
                if j >= 0:
                    by_shift[d][abs(j - i)] = by_shift[d].get(abs(j - i), 0) | (1 << i)
        for d in range(8):
            assert len(by_shift[d]) <= 2
            for k, (shift, mask) in enumerate(sorted(by_shift[d].items())):
                masks[width, d, k] = mask
                shifts[width, d, k] = shift
    return masks, shifts


GEO_MASK, GEO_SHIFT = _geometry_tables()


def _ray_tables() -> np.ndarray:
    """``RAYS[w, sq, d]``: the squares from ``sq`` (excluded) to the board's edge in direction
    ``d`` on a board of width ``w``, so that a flying piece finds the first piece in its way
    with one bit scan (:func:`_first_on_ray`) instead of a walk square by square."""
    rays = np.zeros((6, 64, 8), dtype=np.uint64)
    for width in range(1, 6):
        nbr = board.neighbours(2 * width, straight=True)
        for sq in range(nbr.shape[0]):
            for d in range(8):
                t = nbr[sq, d]
                while t >= 0:
                    rays[width, sq, d] |= np.uint64(1 << int(t))
                    t = nbr[t, d]
    return rays


RAYS = _ray_tables()


@njit(cache=True, inline="always")
def _first_on_ray(width, sq, d, occupied):
    """The first square of ``occupied`` from ``sq`` in direction ``d`` (-1: none). Directions
    2, 3, 6, 7 run to higher squares, 0, 1, 4, 5 to lower ones (see :func:`_geometry_tables`)."""
    hit = RAYS[width, sq, d] & occupied
    if hit == ZERO:
        return -1
    if d == 2 or d == 3 or d >= 6:
        return _lowest(hit)
    return highest_square(hit)


def new_move_buffer(depth: int = 1) -> np.ndarray:
    """A move buffer (or a stack of ``depth`` buffers for recursive searches)."""
    if depth == 1:
        return np.zeros((MAX_MOVES, MOVE_FIELDS), dtype=np.uint64)
    return np.zeros((depth, MAX_MOVES, MOVE_FIELDS), dtype=np.uint64)


WS_ROWS = 5  # capture-search node: square, captured, count, parent + 1, king bit | direction in


def new_workspace() -> np.ndarray:
    """Scratch space for the capture search (see :data:`WS_ROWS`)."""
    return np.zeros((MAX_NODES, WS_ROWS), dtype=np.uint64)


@njit(cache=True, inline="always")
def bit(sq):
    return ONE << np.uint64(sq)


@njit(cache=True, inline="always")
def step(b, width, d):
    """Every square of ``b`` moved one step in direction ``d`` (off-board steps vanish)."""
    lo = (b & GEO_MASK[width, d, 0], np.uint64(GEO_SHIFT[width, d, 0]))
    hi = (b & GEO_MASK[width, d, 1], np.uint64(GEO_SHIFT[width, d, 1]))
    if d < 2:
        return (lo[0] >> lo[1]) | (hi[0] >> hi[1])
    return (lo[0] << lo[1]) | (hi[0] << hi[1])


@njit(cache=True, inline="always")
def _step_straight(b, width, d):
    """Every square of ``b`` moved one straight step in direction ``d`` (4-7)."""
    mask = b & GEO_MASK[width, d, 0]
    shift = np.uint64(GEO_SHIFT[width, d, 0])
    if d < 6:
        return mask >> shift
    return mask << shift


@njit(cache=True, inline="always")
def king_reach(width, flying, sq, empty):
    """The squares of ``empty`` a king on ``sq`` reaches by a quiet move (and so the squares
    a king now on ``sq`` may have come from): one step each way, or every square up to the
    first piece in its way for a flying king. A bitboard, so that callers loop over its
    squares instead of branching on each way."""
    tb = bit(sq)
    if not flying:
        around = step(tb, width, 0) | step(tb, width, 1)
        return (around | step(tb, width, 2) | step(tb, width, 3)) & empty
    occupied = ~empty
    out = ZERO
    for d in range(4):
        span = RAYS[width, sq, d]
        t = _first_on_ray(width, sq, d, occupied)
        if t >= 0:
            span &= ~(RAYS[width, t, d] | bit(t))
        out |= span
    return out


@njit(cache=True, inline="always")
def king_quiet_count(rules, kings, empty):
    """Number of quiet moves of the kings on ``kings`` onto squares of ``empty``: one step
    each way, or every square up to the first piece in its way for flying kings (counted
    per ray with a bit scan and a popcount)."""
    width = rules.width
    n = 0
    if not rules.flying:
        for d in range(4):
            n += popcount(step(kings, width, d) & empty)
        return n
    while kings:
        sq = _lowest(kings)
        kings &= kings - ONE
        n += popcount(king_reach(width, True, sq, empty))
    return n


@kernel
def promotion_row(rules, white):
    """Bitboard of the row where men of the given colour are crowned."""
    width = rules.width
    row = (ONE << np.uint64(width)) - ONE
    if white:
        return row
    return row << np.uint64(rules.nsq - width)


@njit(cache=True, inline="always")
def _forward(d, white):
    # directions 0,1 go up (white's forward), 2,3 go down (black's forward)
    if white:
        return d < 2
    return d >= 2


@kernel
def _king_can_capture(nbr, sq, flying, opp, empty, ndir, width):
    """True if the king on ``sq`` can capture in one of the first ``ndir`` directions
    (``width``: the board's squares per row, for the ray tables)."""
    for d in range(ndir):
        if flying:
            t = _first_on_ray(width, sq, d, ~empty)
        else:
            t = nbr[sq, d]
        if t < 0 or not (opp & bit(t)):
            continue
        n2 = nbr[t, d]
        if n2 >= 0 and (empty & bit(n2)):
            return True
    return False


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
        movers = own_m if (men_back or _forward(d, white)) else ZERO
        if not rules.flying:
            movers |= own_k
        if step(step(movers, width, d) & opp, width, d) & empty:
            return True
    if own_k and rules.flying:
        kings = own_k
        while kings:  # the first piece in each of a king's ways, found by a ray's bit scan
            sq = _lowest(kings)
            kings &= kings - ONE
            for d in range(4):
                t = _first_on_ray(width, sq, d, occupied)
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
        if _step_straight(_step_straight(short, width, d) & opp, width, d) & empty:
            return True
    if own_k and flying:
        for d in range(4, 8):
            ray = _step_straight(own_k, width, d)
            hit = ray & occupied
            ray &= empty
            while ray:
                ray = _step_straight(ray, width, d)
                hit |= ray & occupied
                ray &= empty
            if _step_straight(hit & opp, width, d) & empty:
                return True
    return False


@kernel
def _capturers(rules, white, own_m, own_k, opp, empty):
    """Bitboard of the pieces of the side to move that can capture."""
    nbr = rules.nbr
    width = rules.width
    men_back = rules.men_back
    flying = rules.flying
    short = own_m if flying else own_m | own_k
    found = ZERO
    for d in range(4):
        movers = short if (men_back or _forward(d, white)) else short & ~own_m
        landing = step(step(movers, width, d) & opp, width, d) & empty
        if landing:
            back = 3 - d  # the opposite direction
            found |= step(step(landing, width, back), width, back)
    straight = rules.straight
    if straight:  # men capture straight in all four ways
        for d in range(4, 8):
            landing = _step_straight(_step_straight(short, width, d) & opp, width, d) & empty
            if landing:
                back = 11 - d
                found |= _step_straight(_step_straight(landing, width, back), width, back)
    if flying:
        ndir = 8 if straight else 4
        kings = own_k
        while kings:
            sq = _lowest(kings)
            kings ^= bit(sq)
            if _king_can_capture(nbr, sq, True, opp, empty, ndir, rules.width):
                found |= bit(sq)
    return found


@njit(cache=True, inline="always")
def _short_capturers(width, white, men_back, own_m, own_k, opp, empty):
    """:func:`_capturers` for short kings capturing diagonally only (English checkers):
    without the rules' other branches, which cost the solver's pass 1 more than the test
    itself, since it asks every position whether it has a capture."""
    found = ZERO
    short = own_m | own_k
    for d in range(4):
        movers = short if (men_back or _forward(d, white)) else own_k
        landing = step(step(movers, width, d) & opp, width, d) & empty
        if landing:
            back = 3 - d
            found |= step(step(landing, width, back), width, back)
    return found


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
def _emit(moves, n, move, ws, node):
    """Record the capture ``move`` = ``(from, to, captured, number captured, crowns)``
    ending at ``node`` unless the same (from, to, captured, crowns) exists."""
    frm, to, cap, ncap, crowns = move
    for i in range(n):
        if (
            moves[i, F_FROM] == frm
            and moves[i, F_TO] == to
            and moves[i, F_CAP] == cap
            and moves[i, F_CROWN] == crowns
        ):
            return n
    if n >= MAX_MOVES:
        raise RuntimeError("move buffer overflow")
    moves[n, F_FROM] = frm
    moves[n, F_TO] = to
    moves[n, F_CAP] = cap
    moves[n, F_NCAP] = ncap
    moves[n, F_CROWN] = crowns
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


@kernel
def _captures_from(rules, white, piece, board, buffers, n, best):
    """Search of every capture sequence of the piece ``piece`` = ``(frm, is_king)`` (breadth
    first) on ``board`` = ``(opp, opp_k, occupied)``, into ``buffers`` = ``(moves, ws)``.

    ``occupied`` excludes the moving piece (its start square is empty during the move);
    captured pieces stay in ``occupied`` so they block until the move ends. A man landing on
    its promotion row mid-capture passes it (International), stops there crowned (English)
    or is crowned and searches on as a king (Russian), as ``rules.crowning`` says. Returns
    the new move count and the largest :func:`capture_key` so far (``opp_k``, the
    opponent's kings, prices a Frisian capture).
    """
    frm, is_king = piece
    opp, opp_k, occupied = board
    moves, ws = buffers
    nbr = rules.nbr
    nsq = rules.nsq
    width = rules.width
    full = (ONE << np.uint64(nsq)) - ONE
    flying = rules.flying
    men_back = rules.men_back
    crowning = rules.crowning
    majority = rules.majority
    promo = promotion_row(rules, white)
    empty = full & ~occupied
    ndir = 8 if rules.straight else 4
    # node table, one row per node: square, captured, count, parent + 1, is king (bit 0)
    # and the direction the node was reached in, plus one (bits 1-4; 0 at the root)
    ws[0, 0] = np.uint64(frm)
    ws[0, 1] = ZERO
    ws[0, 2] = ZERO
    ws[0, 3] = ZERO
    ws[0, 4] = ONE if is_king else ZERO
    nodes = 1
    i = -1
    while i + 1 < nodes:  # breadth first: the node table is its own queue
        i += 1
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
                    t = _first_on_ray(width, sq, d, ~empty)
                    if t < 0 or not (opp & bit(t)) or (cap & bit(t)):
                        continue
                    # A king must land where it can capture on if any such square exists
                    # behind the piece (FMJD 4.6); without the majority rule that is a
                    # constraint of its own, with it the shorter routes are dropped anyway.
                    taken = cap | bit(t)
                    first = nbr[t, d]
                    must_go_on = False
                    if not majority:
                        land = first
                        while land >= 0 and (empty & bit(land)):
                            if _king_can_capture(nbr, land, True, opp & ~taken, empty, ndir, width):
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
                        ws[nodes, 3] = np.uint64(i + 1)
                        ws[nodes, 4] = ONE | np.uint64((d + 1) << 1)
                        nodes += 1
                        found = True
                        land = nbr[land, d]
                else:
                    if not king and not men_back and not _forward(d, white):
                        continue
                    t, land = _jump(nbr, sq, d, opp, cap, empty)
                    if land < 0:
                        continue
                    if nodes >= MAX_NODES:
                        raise RuntimeError("capture search overflow")
                    ws[nodes, 0] = np.uint64(land)
                    ws[nodes, 1] = cap | bit(t)
                    ws[nodes, 2] = cnt + ONE
                    ws[nodes, 3] = np.uint64(i + 1)
                    crowned_here = crowning == CROWN_CONTINUES and (promo & bit(land)) != ZERO
                    ws[nodes, 4] = ONE if (king or crowned_here) else ZERO
                    nodes += 1
                    found = True
        if not found and cnt > 0:
            c = capture_key(rules, is_king, np.int64(cnt), np.int64(popcount(cap & opp_k)))
            if majority and c < best:
                continue
            if majority and c > best:
                n = 0  # everything recorded so far captures fewer pieces
                best = c
            elif c > best:
                best = c
            crowns = ONE if (not is_king and (king or (promo & bit(sq)) != ZERO)) else ZERO
            n = _emit(moves, n, (np.uint64(frm), np.uint64(sq), cap, cnt, crowns), ws, i)
    return n, best


@kernel
def generate_moves(rules, white, own_m, own_k, opp_m, opp_k, moves, ws):
    """Fill ``moves`` with every legal move of the side to move; returns the count.

    Captures are compulsory; with the majority rule only the sequences taking the most
    pieces (Frisian: of greatest value) are kept. Without captures, men step forward and
    kings step (or fly) any diagonal way. Frisian's king-move limit is not applied here (it
    needs the king runs): use :func:`generate_moves_barred`.
    """
    return _generate(rules, white, (own_m, own_k, opp_m, opp_k), ZERO, moves, ws)


@kernel
def capture_successors(rules, white, own_m, own_k, opp_m, opp_k, out, ws):
    """The distinct positions after the legal captures of the side to move, for callers that
    need the results and not the moves (the tablebase's solver): row ``i`` of ``out``
    (``uint64[MAX_MOVES, 4]``) gets ``(own_m, own_k, opp_m, opp_k)`` with the *new* side to
    move first, as :func:`play_row` returns them; returns how many (0: no capture).

    The same set as :func:`generate_moves` followed by :func:`play_row` (same rules: the
    majority or value rule, crowning, a flying king landing where it can go on), searched
    depth first without paths or the move buffer, each result once. ``ws`` is a capture
    workspace (:func:`new_workspace`), used as the search stack.
    """
    nbr = rules.nbr
    nsq = rules.nsq
    width = rules.width
    full = (ONE << np.uint64(nsq)) - ONE
    opp = opp_m | opp_k
    own = own_m | own_k
    empty0 = full & ~(own | opp)
    flying = rules.flying
    men_back = rules.men_back
    crowning = rules.crowning
    majority = rules.majority
    if not flying and not majority and not rules.straight and crowning == CROWN_STOPS:
        capturers = _short_capturers(width, white, men_back, own_m, own_k, opp, empty0)
        if capturers == ZERO:
            return 0
        return _short_successors(
            rules, white, (own_m, own_k, opp_m, opp_k), out, ws, capturers, empty0
        )
    capturers = _capturers(rules, white, own_m, own_k, opp, empty0)
    if capturers == ZERO:
        return 0
    promo = promotion_row(rules, white)
    ndir = 8 if rules.straight else 4
    n = 0
    best = 0
    while capturers:
        frm = _lowest(capturers)
        fb = bit(frm)
        capturers ^= fb
        is_king = (own_k & fb) != ZERO
        empty = empty0 | fb  # the moving piece's square is empty during the move
        # stack rows: square, captured, count, king bit | (direction reached in + 1) << 1
        ws[0, 0] = np.uint64(frm)
        ws[0, 1] = ZERO
        ws[0, 2] = ZERO
        ws[0, 3] = ONE if is_king else ZERO
        top = 1
        while top > 0:
            top -= 1
            sq = np.int64(ws[top, 0])
            cap = ws[top, 1]
            cnt = ws[top, 2]
            king = (ws[top, 3] & ONE) != ZERO
            came = np.int64(ws[top, 3] >> ONE) - 1
            back = -1 if came < 0 else (3 - came if came < 4 else 11 - came)
            found = False
            if not (crowning == CROWN_STOPS and not king and cnt > 0 and (promo & bit(sq))):
                for d in range(ndir):
                    if king and flying:
                        if d == back:
                            continue  # the piece just taken is the first in that way
                        t = _first_on_ray(width, sq, d, ~empty)
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
                            if top >= MAX_NODES:
                                raise RuntimeError("capture search overflow")
                            ws[top, 0] = np.uint64(land)
                            ws[top, 1] = taken
                            ws[top, 2] = cnt + ONE
                            ws[top, 3] = ONE | np.uint64((d + 1) << 1)
                            top += 1
                            found = True
                            land = nbr[land, d]
                    else:
                        if not king and not men_back and not _forward(d, white):
                            continue
                        t, land = _jump(nbr, sq, d, opp, cap, empty)
                        if land < 0:
                            continue
                        if top >= MAX_NODES:
                            raise RuntimeError("capture search overflow")
                        crowned = crowning == CROWN_CONTINUES and (promo & bit(land)) != ZERO
                        ws[top, 0] = np.uint64(land)
                        ws[top, 1] = cap | bit(t)
                        ws[top, 2] = cnt + ONE
                        ws[top, 3] = ONE if (king or crowned) else ZERO
                        top += 1
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
            a, b, e, f = apply_move(
                own_m, own_k, opp_m, opp_k, np.uint64(frm), np.uint64(sq), cap, crowns
            )
            n = _add_successor(out, n, a, b, e, f)
    return n


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
def _short_successors(rules, white, pos, out, ws, capturers, empty0):
    """:func:`capture_successors` of ``pos`` = ``(own_m, own_k, opp_m, opp_k)`` for short
    kings capturing diagonally, every sequence legal whatever it takes, a man's capture
    ending where it is crowned (English checkers), from the pieces that can capture
    (``capturers``) and the empty squares ``empty0``:
    the general search without what those rules never need (flying landings, counts and
    values, the way a piece came in, crowning on the way). A capture of one piece (most
    of them) is taken without the search; the stack rows of ``ws`` hold a square and the
    pieces taken to reach it."""
    own_m, own_k, opp_m, opp_k = pos
    nbr = rules.nbr
    men_back = rules.men_back
    promo = promotion_row(rules, white)
    opp = opp_m | opp_k
    m0 = 0 if (men_back or white) else 2  # white men capture towards row 0: ways 0, 1
    m1 = 4 if men_back else m0 + 2
    n = 0
    while capturers:
        frm = _lowest(capturers)
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


def new_successor_buffer() -> np.ndarray:
    """A buffer for :func:`capture_successors` (one row of four boards per result)."""
    return np.zeros((MAX_MOVES, 4), dtype=np.uint64)


@kernel
def generate_moves_barred(rules, white, pos, barred, moves, ws):
    """:func:`generate_moves` of ``pos`` = ``(own_m, own_k, opp_m, opp_k)`` where the king
    on bitboard ``barred`` (0: none) makes no quiet move: under Frisian's king-move limit,
    the king that has made its side's last ``rules.king_limit`` quiet moves
    (:func:`king_barred`). Its captures stay."""
    return _generate(rules, white, pos, barred, moves, ws)


@njit(cache=True, inline="always")
def _generate(rules, white, pos, barred, moves, ws):
    # inlined into both faces: a call here costs International perft about 15 %
    own_m, own_k, opp_m, opp_k = pos
    nbr = rules.nbr
    nsq = rules.nsq
    full = (ONE << np.uint64(nsq)) - ONE
    opp = opp_m | opp_k
    own = own_m | own_k
    occupied = own | opp
    empty = full & ~occupied
    n = 0
    best = 0
    capturers = _capturers(rules, white, own_m, own_k, opp, empty)
    if capturers:
        while capturers:
            sq = _lowest(capturers)
            b = bit(sq)
            capturers ^= b
            n, best = _captures_from(
                rules, white, (sq, (own_k & b) != ZERO), (opp, opp_k, occupied & ~b),
                (moves, ws), n, best,
            )  # fmt: skip
        return n
    flying = rules.flying
    promo = promotion_row(rules, white)
    rest = own & ~barred
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
                moves[n, F_CROWN] = ONE if (not king and (promo & bit(t)) != ZERO) else ZERO
                moves[n, F_PATH] = np.uint64(sq)
                moves[n, F_PATH + 1] = np.uint64(t)
                n += 1
                if not (king and flying):
                    break
                t = nbr[t, d]
    return n


# --- Frisian's king-move limit ------------------------------------------------------------
# A side's run is (square, n): the king on 0-based ``square`` made the side's last ``n``
# quiet moves; (-1, 0) is no run. Only a side with men has runs (the limit does not bind a
# side of kings only, and men never come back), so every helper answers (-1, 0) for a side
# without men; without a limit (``rules.king_limit`` 0) every run is (-1, 0).


@kernel
def king_barred(rules, own_m, own_k, sq, n):
    """Bitboard of the king that may not make a quiet move (0 if none): the side has men, the
    variant has a limit and the king on ``sq`` made the side's last ``limit`` quiet moves."""
    limit = rules.king_limit
    if limit <= 0 or n < limit or sq < 0 or own_m == ZERO:
        return ZERO
    return own_k & (ONE << np.uint64(sq))


@kernel
def king_run_after(rules, own_m, own_k, sq, n, frm, to, is_capture):
    """The mover's run ``(square, n)`` after its move ``frm`` -> ``to`` (0-based squares;
    ``own_m``/``own_k`` before the move): a quiet move of the king that made the run goes on
    with it, a quiet move of another king starts a run of one, a man's move or a capture
    ends it."""
    if rules.king_limit <= 0 or own_m == ZERO or is_capture:
        return -1, 0
    if not (own_k >> np.uint64(frm)) & ONE:
        return -1, 0
    if n > 0 and sq == np.int64(frm):
        return np.int64(to), n + 1
    return np.int64(to), 1


@kernel
def king_run_kept(rules, own_m, own_k, sq, n):
    """A side's run after its opponent's move (the side's boards after it): kept, unless the
    opponent captured that king or the side's last man."""
    if rules.king_limit <= 0 or n <= 0 or sq < 0 or own_m == ZERO:
        return -1, 0
    if not (own_k >> np.uint64(sq)) & ONE:
        return -1, 0
    return sq, n


@kernel
def apply_move(own_m, own_k, opp_m, opp_k, frm, to, cap, crowns):
    """The position after moving the piece on ``frm`` to ``to`` and removing ``cap``, a man
    becoming a king when ``crowns``; the new side to move's boards first."""
    fb = ONE << frm
    tb = ONE << to
    if own_m & fb:
        own_m = own_m & ~fb
        if crowns:
            own_k = own_k | tb
        else:
            own_m = own_m | tb
    else:
        own_k = (own_k & ~fb) | tb
    opp_m = opp_m & ~cap
    opp_k = opp_k & ~cap
    return opp_m, opp_k, own_m, own_k


@kernel
def make_move(rules, white, pos, frm, to, cap):
    """Apply a move given by its squares to ``pos`` = ``(own_m, own_k, opp_m, opp_k)``;
    returns the position from the opponent's side.

    The result is ``(own_m, own_k, opp_m, opp_k)`` with the *new* side to move first. A man
    ending on its promotion row is crowned. A Russian man crowned in the middle of a capture
    and ending elsewhere is not known from the squares alone: apply generated moves with
    :func:`play_row`, which reads the move's ``crowns`` field.
    """
    own_m, own_k, opp_m, opp_k = pos
    crowns = (own_m & (ONE << frm)) != ZERO and (promotion_row(rules, white) & (ONE << to)) != ZERO
    return apply_move(own_m, own_k, opp_m, opp_k, frm, to, cap, crowns)


@kernel
def play_row(own_m, own_k, opp_m, opp_k, moves, i):
    """Apply move ``i`` of a buffer filled by :func:`generate_moves` for this position;
    returns ``(own_m, own_k, opp_m, opp_k)`` with the *new* side to move first."""
    return apply_move(
        own_m,
        own_k,
        opp_m,
        opp_k,
        moves[i, F_FROM],
        moves[i, F_TO],
        moves[i, F_CAP],
        moves[i, F_CROWN] != ZERO,
    )


# --- the move buffer's public face: compiled accessors ------------------------------------
@njit(cache=True, inline="always")
def move_from(moves, i):
    """0-based from-square of move ``i``."""
    return np.int64(moves[i, F_FROM])


@njit(cache=True, inline="always")
def move_to(moves, i):
    """0-based to-square of move ``i``."""
    return np.int64(moves[i, F_TO])


@njit(cache=True, inline="always")
def move_captured(moves, i):
    """Bitboard of the pieces move ``i`` captures (0 for a quiet move)."""
    return moves[i, F_CAP]


@njit(cache=True, inline="always")
def move_capture_count(moves, i):
    """Number of pieces move ``i`` captures."""
    return np.int64(moves[i, F_NCAP])


@njit(cache=True, inline="always")
def move_crowns(moves, i):
    """True when move ``i`` turns a man into a king (at its end, or mid-capture in Russian)."""
    return moves[i, F_CROWN] != ZERO


@njit(cache=True, inline="always")
def move_path_length(moves, i):
    """Number of squares on move ``i``'s route (from and to included; at most MAX_PATH)."""
    return np.int64(moves[i, F_PLEN])


@njit(cache=True, inline="always")
def move_path_square(moves, i, j):
    """0-based ``j``-th square of move ``i``'s route (0 = from)."""
    return np.int64(moves[i, F_PATH + j])


@kernel
def find_move(moves, n, frm, to, capture):
    """Index of the one move among ``n`` going ``frm`` -> ``to`` (0-based) that is a capture
    iff ``capture``; -1 when there is none, -2 when there are several."""
    hit = -1
    for i in range(n):
        if (
            moves[i, F_FROM] == frm
            and moves[i, F_TO] == to
            and (moves[i, F_NCAP] != ZERO) == capture
        ):
            if hit >= 0:
                return -2
            hit = i
    return hit


@kernel
def quiet_unmoves(rules, white, own_m, own_k, opp_m, opp_k, out, legal_only):
    """Every position that reaches this one by one quiet (non-capture) move.

    The side to move here is ``white``; the previous mover is its opponent. Each
    predecessor is written to ``out[k] = (mover_m, mover_k, other_m, other_k, from, to,
    unpromoted)`` from the previous mover's point of view. Un-promotion is included: a king
    on the opponent's promotion row may have been a man one step back. With ``legal_only``
    predecessors where the mover had a capture (so a quiet move was illegal) are dropped.
    """
    nbr = rules.nbr
    nsq = rules.nsq
    full = (ONE << np.uint64(nsq)) - ONE
    occupied = own_m | own_k | opp_m | opp_k
    empty = full & ~occupied
    flying = rules.flying
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
                    if not legal_only or not has_capture(rules, mover_white, pm, pk, own_m, own_k):
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
                            rules, mover_white, pm, pk, own_m, own_k
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
                            rules, mover_white, pm, pk, own_m, own_k
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


@kernel
def perft(rules, white, pos, depth, stack, ws):
    """Number of leaf nodes of the legal-move tree of ``pos`` = ``(own_m, own_k, opp_m,
    opp_k)`` ``depth`` plies deep (bulk-counted)."""
    if depth == 0:
        return 1
    own_m, own_k, opp_m, opp_k = pos
    moves = stack[depth - 1]
    n = generate_moves(rules, white, own_m, own_k, opp_m, opp_k, moves, ws)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        a, b, c, e = play_row(own_m, own_k, opp_m, opp_k, moves, i)
        total += perft(rules, not white, (a, b, c, e), depth - 1, stack, ws)
    return total


@kernel
def perft_runs(rules, white, pos, runs, depth, stack, ws):
    """:func:`perft` under a king-move limit: each side's run (``runs`` = ``(own_sq, own_n,
    opp_sq, opp_n)``: 0-based square, n; -1, 0 for none) bars its king's quiet moves and is
    carried over every move."""
    if depth == 0:
        return 1
    own_m, own_k, opp_m, opp_k = pos
    own_sq, own_n, opp_sq, opp_n = runs
    moves = stack[depth - 1]
    barred = king_barred(rules, own_m, own_k, own_sq, own_n)
    n = generate_moves_barred(rules, white, pos, barred, moves, ws)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        a, b, c, e = play_row(own_m, own_k, opp_m, opp_k, moves, i)
        sq, k = king_run_after(
            rules,
            own_m,
            own_k,
            own_sq,
            own_n,
            moves[i, F_FROM],
            moves[i, F_TO],
            moves[i, F_NCAP] != ZERO,
        )
        osq, ok = king_run_kept(rules, a, b, opp_sq, opp_n)
        total += perft_runs(rules, not white, (a, b, c, e), (osq, ok, sq, k), depth - 1, stack, ws)
    return total


@njit(cache=True)
def new_move_buffer_nb():
    """:func:`new_move_buffer` for compiled callers."""
    return np.zeros((MAX_MOVES, MOVE_FIELDS), dtype=np.uint64)


@njit(cache=True)
def new_successor_buffer_nb():
    """:func:`new_successor_buffer` for compiled callers."""
    return np.zeros((MAX_MOVES, 4), dtype=np.uint64)


@njit(cache=True)
def new_workspace_nb():
    """:func:`new_workspace` for compiled callers."""
    return np.zeros((MAX_NODES, WS_ROWS), dtype=np.uint64)
