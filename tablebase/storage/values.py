"""The meaning of a stored value: one home for win/draw/loss and distance-to-win codes.

A *value* (a ``values`` entry, ``docs/FORMAT.md``) is, for the side to move:

- ``0``: draw;
- ``v > 0``: the game ends in ``dtw = v - 1`` plies with best play; ``dtw`` odd is a win,
  even a loss (``v = 1``: no legal move now, lost).

Values are stored one byte each (``uint8``, distances up to :data:`MAX_DTW_8` plies) or, in
a slice flagged ``value_bits = 16``, two bytes each (``uint16``, up to :data:`MAX_DTW_16`).
The meaning is the same at both widths.

A *WDL code* (a ``wdl`` entry) is the result alone, two bits: :data:`WDL_DRAW`,
:data:`WDL_WIN`, :data:`WDL_LOSS`.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

DRAW = 0  # the value of a drawn position
LOST_NOW = 1  # the value of a position whose side to move has no legal move

MAX_DTW_8 = 254  # longest distance a uint8 value holds (value 255)
MAX_DTW_16 = 65534  # longest distance a uint16 value holds (value 65535)

WDL_DRAW, WDL_WIN, WDL_LOSS = 0, 1, 2  # two-bit result codes of the compact WDL part
WDL_CODE_OF_RESULT = {0: WDL_DRAW, 1: WDL_WIN, -1: WDL_LOSS}
RESULT_OF_WDL_CODE = {WDL_DRAW: 0, WDL_WIN: 1, WDL_LOSS: -1}


def decode(value: int) -> tuple[int, int | None]:
    """``(wdl, dtw)`` of a stored value: wdl +1 win, 0 draw, -1 loss for the side to move;
    dtw in plies, None for a draw."""
    if value == DRAW:
        return 0, None
    dtw = int(value) - 1
    return (1 if dtw % 2 else -1), dtw


def encode(wdl: int, dtw: int | None) -> int:
    """The value of a result and distance (the inverse of :func:`decode`)."""
    if wdl == 0:
        return DRAW
    if dtw is None or dtw < 0 or (dtw % 2 == 1) != (wdl > 0):
        raise ValueError(f"dtw {dtw} does not fit result {wdl} (wins odd, losses even)")
    return dtw + 1


def value_dtype(longest_dtw: int) -> np.dtype:
    """The narrowest value type holding distances up to ``longest_dtw`` plies; raises
    OverflowError beyond :data:`MAX_DTW_16` (no value is ever wrapped)."""
    if longest_dtw <= MAX_DTW_8:
        return np.dtype(np.uint8)
    if longest_dtw <= MAX_DTW_16:
        return np.dtype(np.uint16)
    raise OverflowError(f"distance-to-win {longest_dtw} plies exceeds {MAX_DTW_16}")


def narrowed(values: np.ndarray) -> np.ndarray:
    """``values`` in the narrowest type that holds them (:func:`value_dtype` of their
    longest distance): two-byte values that all fit one byte come back as a one-byte copy,
    anything else as given. Of a pair whose values came out two bytes each (a distance past
    one byte, or the four-byte state words), each slice whose values fit is stored with one
    byte, so that the slices depending on it read one byte per entry."""
    if values.dtype == np.uint8 or values.size == 0:
        return values
    if value_dtype(int(values.max()) - 1) == np.uint8:
        return values.astype(np.uint8)
    return values


def value_bits(values: np.ndarray) -> int:
    """8 or 16: the width of a values array; TypeError for any other type."""
    if values.dtype == np.uint8:
        return 8
    if values.dtype == np.uint16:
        return 16
    raise TypeError(f"values must be uint8 or uint16, not {values.dtype}")


@njit(cache=True, inline="always")
def wdl_code(value):
    """Two-bit WDL code of a value (compiled): draw for 0, else win for an even value and
    loss for an odd one, computed without a branch (wins and losses alternate in no
    pattern over a slice)."""
    v = np.int64(value)
    return (v != 0) * (WDL_WIN + (v & 1) * (WDL_LOSS - WDL_WIN))


@njit(cache=True, inline="always")
def result_of_code(code):
    """+1 / 0 / -1 of a two-bit WDL code (compiled)."""
    if code == WDL_WIN:
        return 1
    if code == WDL_LOSS:
        return -1
    return 0


def wdl_counts(values: np.ndarray) -> tuple[int, int, int]:
    """(wins, draws, losses) among ``values`` (all entries counted)."""
    nz = values[values != 0]
    wins = int(np.count_nonzero(nz % 2 == 0))
    return wins, int(values.shape[0] - nz.shape[0]), int(nz.shape[0] - wins)


def dtw_histogram(values: np.ndarray) -> np.ndarray:
    """``h[v]`` = number of entries holding value ``v`` (trailing zeros trimmed)."""
    h = _histogram(values.ravel(), 1 << (8 * values.dtype.itemsize), get_num_threads())
    nz = np.flatnonzero(h)
    return h[: int(nz[-1]) + 1] if nz.shape[0] else h[:1]


@njit(cache=True, parallel=True)
def _histogram(values, bins, parts):
    # compiled: np.bincount would first widen every value to 8 bytes (a 16 GB temporary
    # for a two-billion-entry slice); one histogram per part, counted in parallel
    n = values.shape[0]
    parts = max(1, min(parts, n >> 16))
    h = np.zeros((parts, bins), dtype=np.int64)
    for p in prange(parts):
        for i in range(p * n // parts, (p + 1) * n // parts):
            h[p, values[i]] += 1
    return h.sum(axis=0)


__all__ = [
    "DRAW",
    "LOST_NOW",
    "MAX_DTW_8",
    "MAX_DTW_16",
    "WDL_DRAW",
    "WDL_LOSS",
    "WDL_WIN",
    "decode",
    "dtw_histogram",
    "encode",
    "value_bits",
    "value_dtype",
    "wdl_code",
    "wdl_counts",
]
