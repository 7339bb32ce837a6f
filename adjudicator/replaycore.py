"""The compiled replay loop: legality, repetition and the move counts, one game per call.

A game's moves come as three arrays: ``squares`` (the written square numbers of every move,
one after another), ``offsets`` (move ``i`` is ``squares[offsets[i]:offsets[i + 1]]``) and
``captures`` (1 where the move is written with ``x``). :func:`run` plays moves
``first .. last - 1`` from the state in ``boards``/``state``/``history`` and updates them:

- per ply it generates the legal moves once; that one list says whether the side to move
  has lost (no pieces, no legal move) *and* which legal move the next text names;
- a text of two squares naming exactly one legal move with the written separator is played
  here; anything else (paths, a wrong separator, ambiguity, an illegal move) returns
  ``NEED`` with the ply, and the Python side (:mod:`adjudicator.replay`) decides, then calls
  :func:`run` again with that move in ``forced``;
- after each ply, in this order: the side to move has no pieces or no legal move (it has
  lost: winning takes precedence), threefold repetition (when the rules have it), the running
  count expired. The first event is kept in ``state``; with ``stop`` the loop ends there.

The king-move limit (Frisian, ``rules.king_limit`` > 0) is part of the state: per side
the 0-based square of the king that made the side's last ``n`` quiet moves in a row (``n``
0: none), carried over each move by the engine's ``king_run_after``/``king_run_kept``.
While a side has men, a king whose run has reached the limit has no quiet move (the
engine's ``generate_moves_barred`` leaves them out, so a text naming one is illegal). A count
that starts in a position may be settled at once there
(:func:`~tablebase.rules.drawrules.settle_start`: Frisian king against king is drawn unless a
capture is forced now or next move).

The count is the triple (rule, limit, elapsed) of :mod:`tablebase.rules.drawrules`, moved by
its compiled :func:`~tablebase.rules.drawrules.count_after`. The repetition history holds
the positions since the last capture or man move (no earlier one can recur), so a linear
scan of it is short.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tablebase.rules.drawrules import (
    E_UNLESS_CAPTURE,
    T_ENDING_FIELDS,
    T_ENDINGS,
    T_THREEFOLD,
    count_after,
    material_ending,
    settle_start,
)
from tablebase.rules.kingruns import king_barred, king_run_after, king_run_kept
from tablebase.rules.makemove import apply_move
from tablebase.rules.movebuffer import find_move, move_captured, move_crowns, move_from, move_to
from tablebase.rules.movegen import generate_moves_barred

# state[] layout; S_RUN_* per side: king-run square (0-based) and length (0: no run)
S_WHITE, S_RULE, S_LIMIT, S_ELAPSED, S_NHIST, S_EVENT, S_EVENT_PLY, S_EVENT_RULE = range(8)
S_RUN_WHITE_SQ, S_RUN_WHITE_N, S_RUN_BLACK_SQ, S_RUN_BLACK_N = range(8, 12)
STATE_FIELDS = 12
# events
EV_NONE, EV_NO_PIECES, EV_NO_MOVES, EV_THREEFOLD, EV_COUNT = range(5)
# run() return codes
DONE, NEED, EVENT = 0, 1, 2

_ONE = np.uint64(1)


class Game(NamedTuple):
    """A game being replayed, as the compiled loop reads and changes it: the variant's
    draw-rule table, the boards, the state fields (``S_*``) and the positions seen since
    the last irreversible move."""

    table: np.ndarray
    boards: np.ndarray
    state: np.ndarray
    history: np.ndarray


class MoveText(NamedTuple):
    """The game's moves as parsed text (:func:`parse_moves`): move ``i``'s squares
    ``squares[offsets[i]:offsets[i + 1]]``, and whether it was written as a capture."""

    squares: np.ndarray
    offsets: np.ndarray
    captures: np.ndarray


@njit(cache=True)
def parse_moves(text, nmoves):
    """(ok, squares, offsets, captures) of ``nmoves`` move texts joined by single spaces
    (ASCII bytes), each ``a-b`` or ``axbx...`` with squares of 1 to 4 digits, not 0, and one
    kind of separator. ``ok`` is False when the text is anything else (the caller then
    reads the moves one by one and reports the bad one precisely)."""
    squares = np.empty(text.shape[0] // 2 + 1, dtype=np.int64)
    offsets = np.zeros(nmoves + 1, dtype=np.int64)
    captures = np.zeros(nmoves, dtype=np.uint8)
    k = 0  # squares so far
    m = 0  # moves so far
    i = 0
    n = text.shape[0]
    while i <= n:
        if m >= nmoves:
            return False, squares[:k], offsets, captures
        count = 0  # squares of this move
        sep = 0
        while True:
            value = 0
            digits = 0
            while i < n and 48 <= text[i] <= 57:
                value = value * 10 + (text[i] - 48)
                digits += 1
                i += 1
            if digits == 0 or digits > 4 or value == 0:
                return False, squares[:k], offsets, captures
            squares[k] = value
            k += 1
            count += 1
            if i >= n or text[i] == 32:  # end of the move
                break
            c = text[i]
            if c != 45 and c != 120:  # '-' or 'x'
                return False, squares[:k], offsets, captures
            if sep != 0 and c != sep:
                return False, squares[:k], offsets, captures
            sep = c
            i += 1
        if count < 2 or (sep == 45 and count != 2):
            return False, squares[:k], offsets, captures
        captures[m] = 1 if sep == 120 else 0
        m += 1
        offsets[m] = k
        i += 1  # the space
    return m == nmoves, squares[:k], offsets, captures


@njit(cache=True)
def _side(boards, white):
    if white:
        return boards[0], boards[1], boards[2], boards[3]
    return boards[2], boards[3], boards[0], boards[1]


@njit(cache=True)
def _run_at(white):
    return S_RUN_WHITE_SQ if white else S_RUN_BLACK_SQ


@njit(cache=True)
def _generate(rules, boards, white, buf, ws, state):
    """The legal moves of the side to move, without the quiet moves of a king the king-move
    limit bars (:func:`tablebase.rules.kingruns.king_barred`)."""
    own_m, own_k, opp_m, opp_k = _side(boards, white)
    at = _run_at(white)
    barred = king_barred(rules, own_m, own_k, state[at], state[at + 1])
    return generate_moves_barred(rules, white, (own_m, own_k, opp_m, opp_k), barred, buf, ws)


@njit(cache=True)
def _record(state, event, ply):
    if state[S_EVENT] == EV_NONE:
        state[S_EVENT] = event
        state[S_EVENT_PLY] = ply
        state[S_EVENT_RULE] = state[S_RULE]


@njit(cache=True)
def position_event(boards, state, nmoves):
    """The side to move's loss in the current position (``nmoves`` legal moves), or none."""
    white = state[S_WHITE] != 0
    own_m, own_k, _, _ = _side(boards, white)
    if own_m | own_k == 0:
        return EV_NO_PIECES
    if nmoves == 0:
        return EV_NO_MOVES
    return EV_NONE


@njit(cache=True)
def _settle(rules, table, boards, state, buf, ws):
    rule, limit, elapsed = settle_start(
        rules,
        table,
        (state[S_RULE], state[S_LIMIT], state[S_ELAPSED]),
        (boards[0], boards[1], boards[2], boards[3]),
        state[S_WHITE] != 0,
        (buf, ws),
    )
    state[S_RULE], state[S_LIMIT], state[S_ELAPSED] = rule, limit, elapsed


@njit(cache=True)
def start_event(rules, table, boards, state, buf, ws):
    """The event of the start position itself (a finished game, or a count run out)."""
    _settle(rules, table, boards, state, buf, ws)
    n = _generate(rules, boards, state[S_WHITE] != 0, buf, ws, state)
    event = position_event(boards, state, n)
    if event == EV_NONE and state[S_ELAPSED] >= state[S_LIMIT]:
        event = EV_COUNT
    if event != EV_NONE:
        _record(state, event, 0)
    return event


@njit(cache=True)
def _play(rules, game, move, buf, ws):
    """Make ``move`` = ``(from, to, captured, crowns)`` in ``game`` (a :class:`Game`) and
    advance the king runs, the count and the history; True if threefold. ``buf``/``ws``
    may be overwritten (the caller generates afresh)."""
    table, boards, state, history = game
    frm, to, cap, crowns = move
    white = state[S_WHITE] != 0
    own_m, own_k, opp_m, opp_k = _side(boards, white)
    man_moved = (own_m >> frm) & _ONE != 0
    old_end = material_ending(table, boards[0], boards[1], boards[2], boards[3])
    at, other = _run_at(white), _run_at(not white)
    state[at], state[at + 1] = king_run_after(
        rules, own_m, own_k, state[at], state[at + 1], frm, to, cap != 0
    )
    a, b, c, d = apply_move(own_m, own_k, opp_m, opp_k, frm, to, cap, crowns)
    # apply_move answers with the new side to move (the opponent) first
    state[other], state[other + 1] = king_run_kept(rules, a, b, state[other], state[other + 1])
    if white:  # make_move answers with the new side to move first
        boards[0], boards[1], boards[2], boards[3] = c, d, a, b
    else:
        boards[0], boards[1], boards[2], boards[3] = a, b, c, d
    state[S_WHITE] = 0 if white else 1
    crowned = man_moved and crowns
    new_end = material_ending(table, boards[0], boards[1], boards[2], boards[3])
    rule, limit, elapsed = count_after(
        table,
        (state[S_RULE], state[S_LIMIT], state[S_ELAPSED]),
        (old_end, new_end),
        (man_moved, cap != 0, crowned),
    )
    state[S_RULE], state[S_LIMIT], state[S_ELAPSED] = rule, limit, elapsed
    if elapsed == 0 and rule >= 0 and table[T_ENDINGS + rule * T_ENDING_FIELDS + E_UNLESS_CAPTURE]:
        _settle(rules, table, boards, state, buf, ws)  # only such an ending: kept cheap
    if cap != 0 or man_moved:
        state[S_NHIST] = 0
    k = state[S_NHIST]
    side = np.uint64(state[S_WHITE])
    seen = 1
    for j in range(k):
        if (
            history[j, 0] == boards[0]
            and history[j, 1] == boards[1]
            and history[j, 2] == boards[2]
            and history[j, 3] == boards[3]
            and history[j, 4] == side
        ):
            seen += 1
    history[k, 0], history[k, 1], history[k, 2], history[k, 3] = (
        boards[0],
        boards[1],
        boards[2],
        boards[3],
    )
    history[k, 4] = side
    state[S_NHIST] = k + 1
    return table[T_THREEFOLD] != 0 and seen >= 3


@njit(cache=True)
def run(rules, game, text, span, stop, forced, buffers):
    """Play moves ``span`` = ``(first, last)``, ``first .. last-1``, of ``text`` (a
    :class:`MoveText`) in ``game`` (a :class:`Game`) with ``buffers`` = ``(move buffer,
    capture workspace)``; returns (code, ply index): ``DONE`` (all played), ``NEED`` (move
    ``ply`` needs the Python side) or ``EVENT`` (stopped at an event).

    ``forced`` = (1, from, to, captured bitboard, crowns) plays that move (0-based
    squares) for move ``first`` instead of matching its text; (0, ...) for none.
    """
    table, boards, state, history = game
    squares, offsets, captures = text
    first, last = span
    buf, ws = buffers
    white = state[S_WHITE] != 0
    n = _generate(rules, boards, white, buf, ws, state)
    for i in range(first, last):
        if i == first and forced[0] != 0:
            frm, to, cap, crowns = forced[1], forced[2], forced[3], forced[4] != 0
        else:
            lo, hi = offsets[i], offsets[i + 1]
            if hi - lo != 2:
                return NEED, i
            hit = find_move(
                buf,
                n,
                np.uint64(squares[lo] - 1),
                np.uint64(squares[lo + 1] - 1),
                captures[i] != 0,
            )
            if hit < 0:
                return NEED, i
            frm = np.uint64(move_from(buf, hit))
            to = np.uint64(move_to(buf, hit))
            cap = move_captured(buf, hit)
            crowns = move_crowns(buf, hit)
        threefold = _play(rules, game, (frm, to, cap, crowns), buf, ws)
        n = _generate(rules, boards, state[S_WHITE] != 0, buf, ws, state)
        event = position_event(boards, state, n)
        if event == EV_NONE:
            if threefold:
                event = EV_THREEFOLD
            elif state[S_ELAPSED] >= state[S_LIMIT]:
                event = EV_COUNT
        if event != EV_NONE:
            _record(state, event, i + 1)
            if stop:
                return EVENT, i + 1
    return DONE, last
