"""The run-length bytes of a Scan bitbase file (learnt from Scan 3.1's ``bb_comp``).

A file is a sequence of bytes and nothing else. Byte ``b`` stands for a run of
``LENGTHS[b // 3]`` entries of value ``b % 3`` (:data:`SCAN_DRAW` 0, :data:`SCAN_LOSS` 1,
:data:`SCAN_WIN` 2, for the side to move), where ``LENGTHS[i] = floor(1.2 ** i + 0.5)`` for
``i`` 0..84 (1, 1, 1, 2, 2, 2, 3, 4, 4, 5, 6, 7, 9, ... 4,479,450); byte 255 (``i`` 85) is a
run of length 0, which a writer never uses. The runs laid end to end give the entries in
index order, and their total must be exactly the id's number of entries: Scan refuses a file
of another decoded length at start-up. Scan finds an entry through a table of the first entry
of every block of 256 bytes, a binary search in it and a walk of at most 256 bytes.

**Writing.** A run of ``n`` entries of one value is written as the longest lengths first
(greedy: the largest ``LENGTHS[i] <= n``, then the rest), which always ends exactly since
``LENGTHS[0]`` is 1; of the indexes of one length (0, 1 and 2 are all 1) the first. Entries
Scan never reads ("don't care", :data:`DONT_CARE` here) take the value of the run they fall
in, the first stored value for a leading stretch: they lengthen runs instead of breaking
them. The encoder is streaming: :func:`encode_runs` takes the codes chunk by chunk with the
open run in ``state``, and :func:`finish_runs` closes it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SCAN_DRAW, SCAN_LOSS, SCAN_WIN = 0, 1, 2  # a value byte's value, for the side to move
DONT_CARE = 3  # an entry Scan never reads (no position, or the side to move can capture)

RUN_CODES = 85  # run lengths a byte can give (byte // 3 = 0..84; byte 255 has length 0)
LENGTHS = np.array([int(np.floor(1.2**i + 0.5)) for i in range(RUN_CODES)], dtype=np.int64)
BYTE_LENGTHS = np.array([LENGTHS[b // 3] if b // 3 < RUN_CODES else 0 for b in range(256)],
                        dtype=np.int64)  # fmt: skip
BLOCK = 256  # bytes per block of Scan's (and this reader's) lookup table

# the most bytes one run can take: the greedy decomposition of n uses n // LENGTHS[-1]
# bytes of the longest length and fewer than RUN_CODES for the rest
MAX_RUN_BYTES_TAIL = 2 * RUN_CODES


def new_state() -> np.ndarray:
    """The encoder's state before the first entry: no value yet, no pending run."""
    return np.array([-1, 0], dtype=np.int64)


def bytes_bound(entries: int, pending: int) -> int:
    """The most bytes :func:`encode_runs` writes for ``entries`` codes after a pending run of
    ``pending`` entries (or :func:`finish_runs` for ``entries`` 0)."""
    return entries + (pending + entries) // int(LENGTHS[-1]) + MAX_RUN_BYTES_TAIL


@njit(cache=True, inline="always")
def _emit(value, n, lengths, out, k):
    """Write a run of ``n`` entries of ``value`` at ``out[k:]``, longest lengths first;
    returns the new end."""
    i = lengths.shape[0] - 1
    while n > 0:
        while lengths[i] > n:
            i -= 1
        j = i
        while j > 0 and lengths[j - 1] == lengths[j]:  # the first byte of that length
            j -= 1
        out[k] = 3 * j + value
        k += 1
        n -= lengths[j]
    return k


@njit(cache=True)
def encode_runs(codes, state, lengths, out):
    """Encode ``codes`` (values 0..2 or :data:`DONT_CARE`) after the run open in ``state``
    (``[value or -1, length]``, updated); writes the runs that close into ``out`` (at least
    :func:`bytes_bound` long) and returns how many bytes it wrote. The run still open at
    the end stays in ``state``."""
    value = state[0]
    n = state[1]
    k = 0
    for i in range(codes.shape[0]):
        c = np.int64(codes[i])
        if c == DONT_CARE or c == value:
            n += 1
        elif value < 0:  # the first stored value: the leading don't-care entries take it
            value = c
            n += 1
        else:
            k = _emit(value, n, lengths, out, k)
            value = c
            n = 1
    state[0] = value
    state[1] = n
    return k


@njit(cache=True)
def finish_runs(state, lengths, out):
    """Close the open run of ``state`` into ``out`` (a file of don't-care entries only is
    written as draws); returns the bytes written."""
    value = state[0] if state[0] >= 0 else 0
    k = _emit(value, state[1], lengths, out, 0)
    state[1] = 0
    return k


def encode(codes: np.ndarray) -> bytes:
    """The bytes of a whole file of ``codes`` (small inputs: tests and one-off tools)."""
    state = new_state()
    out = np.empty(bytes_bound(codes.shape[0], 0), dtype=np.uint8)
    k = encode_runs(np.ascontiguousarray(codes, dtype=np.uint8), state, LENGTHS, out)
    k2 = finish_runs(state, LENGTHS, out[k:])
    return out[: k + k2].tobytes()


def decoded_length(data: np.ndarray) -> int:
    """The number of entries the bytes ``data`` stand for."""
    return int(BYTE_LENGTHS[data].sum())


@njit(cache=True)
def decode_runs(data, cursor, lengths, out):
    """Fill ``out`` with the next entries of ``data`` from ``cursor`` (``[byte, entries of
    that byte already given]``, updated); returns how many it filled (fewer than
    ``out.shape[0]`` only at the end of the data)."""
    b = cursor[0]
    used = cursor[1]
    k = 0
    n = out.shape[0]
    while k < n and b < data.shape[0]:
        byte = np.int64(data[b])
        length = lengths[byte]
        value = byte % 3
        take = min(length - used, n - k)
        for j in range(take):
            out[k + j] = value
        k += take
        used += take
        if used == length:
            b += 1
            used = 0
    cursor[0] = b
    cursor[1] = used
    return k


def decode(data: np.ndarray | bytes) -> np.ndarray:
    """Every entry's value of a whole file (small inputs: tests and one-off tools)."""
    raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else data
    return np.repeat((raw % 3).astype(np.uint8), BYTE_LENGTHS[raw])


def block_starts(data: np.ndarray) -> np.ndarray:
    """The first entry of every block of :data:`BLOCK` bytes, and the total at the end (the
    table Scan builds when it loads a file)."""
    per_byte = BYTE_LENGTHS[data]
    nblocks = (data.shape[0] + BLOCK - 1) // BLOCK
    padded = np.zeros(nblocks * BLOCK, dtype=np.int64)
    padded[: data.shape[0]] = per_byte
    sums = padded.reshape(nblocks, BLOCK).sum(axis=1)
    out = np.zeros(nblocks + 1, dtype=np.int64)
    np.cumsum(sums, out=out[1:])
    return out


def value_at(data: np.ndarray, starts: np.ndarray, entry: int) -> int:
    """The value of ``entry``: its block by binary search in ``starts``
    (:func:`block_starts`), then a walk through the block's bytes."""
    if not 0 <= entry < int(starts[-1]):
        raise IndexError(f"entry {entry} outside 0..{int(starts[-1]) - 1}")
    block = int(np.searchsorted(starts, entry, side="right")) - 1
    pos = entry - int(starts[block])
    for byte in data[block * BLOCK : (block + 1) * BLOCK]:
        n = int(BYTE_LENGTHS[byte])
        if pos < n:
            return int(byte) % 3
        pos -= n
    raise AssertionError("block table inconsistent with the data")
