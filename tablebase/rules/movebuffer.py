"""The move buffer: its layout, its compiled accessors, and the searches' scratch space.

Moves are written into a ``uint64[MAX_MOVES, MOVE_FIELDS]`` buffer, one row per move:
``from, to, captured-bitboard, number captured, path length, crowns, path squares...``. A
capture is one move per distinct (from, to, captured set, crowns); the path kept is the first
route found. ``crowns`` is 1 when a man becomes a king by the move: by ending on its
promotion row, or (Russian) by reaching it during a capture and going on as a king.

Callers read the buffer through the compiled accessors (:func:`move_from`, :func:`move_to`,
:func:`move_captured`, :func:`move_capture_count`, :func:`move_path_length`,
:func:`move_path_square`, :func:`move_crowns`, :func:`find_move`) and apply a row with
:func:`tablebase.rules.makemove.play_row`, never by column number;
:class:`tablebase.rules.moves.MoveList` is their face for Python callers. The capture
search's workspace (:func:`new_workspace`) and the solver's successor buffer
(:func:`new_successor_buffer`) are allocated here too, each with a twin for compiled callers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.rules.geometry import ZERO
from tablebase.rules.kernel import kernel

MAX_MOVES = 512
MAX_PATH = 32
F_FROM, F_TO, F_CAP, F_NCAP, F_PLEN, F_CROWN, F_PATH = 0, 1, 2, 3, 4, 5, 6
MOVE_FIELDS = F_PATH + MAX_PATH
MAX_NODES = 1 << 15  # capture-search tree nodes per position
WS_ROWS = 5  # capture-search node: square, captured, count, parent + 1, king bit | direction in


def new_move_buffer(depth: int = 1) -> np.ndarray:
    """A move buffer (or a stack of ``depth`` buffers for recursive searches)."""
    if depth == 1:
        return np.zeros((MAX_MOVES, MOVE_FIELDS), dtype=np.uint64)
    return np.zeros((depth, MAX_MOVES, MOVE_FIELDS), dtype=np.uint64)


def new_workspace() -> np.ndarray:
    """Scratch space for the capture search (see :data:`WS_ROWS`)."""
    return np.zeros((MAX_NODES, WS_ROWS), dtype=np.uint64)


def new_successor_buffer() -> np.ndarray:
    """A buffer for :func:`tablebase.rules.captures.capture_successors` (one row of four
    boards per result)."""
    return np.zeros((MAX_MOVES, 4), dtype=np.uint64)


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


# --- compiled accessors --------------------------------------------------------------------
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
