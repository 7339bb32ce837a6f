"""Scan's run-length bytes (``tablebase.scanbb.codec``): the run lengths, concrete runs coded
by hand, don't-care entries, streaming across chunks, the block table, length checks."""

from __future__ import annotations

import numpy as np
import pytest

from tablebase.scanbb.codec import (
    BYTE_LENGTHS,
    DONT_CARE,
    LENGTHS,
    SCAN_LOSS,
    SCAN_WIN,
    block_starts,
    bytes_bound,
    decode,
    decode_runs,
    decoded_length,
    encode,
    encode_runs,
    finish_runs,
    new_state,
    value_at,
)
from tablebase.scanbb.files import ScanFileError, read_bitbase, write_bitbase

D, L, W, X = 0, SCAN_LOSS, SCAN_WIN, DONT_CARE


def test_run_lengths_are_powers_of_1_2_rounded() -> None:
    # 1.2^i rounded half up: 1, 1.2, 1.44, 1.728, 2.07, 2.49, 2.99, 3.58, 4.30, 5.16,
    # 6.19, 7.43, 8.92 -> 1 1 1 2 2 2 3 4 4 5 6 7 9
    assert list(LENGTHS[:13]) == [1, 1, 1, 2, 2, 2, 3, 4, 4, 5, 6, 7, 9]
    assert LENGTHS[84] == 4_479_450  # 1.2^84 = 4479449.8...
    assert len(LENGTHS) == 85
    assert BYTE_LENGTHS[254] == 4_479_450 and BYTE_LENGTHS[255] == 0  # byte 255: no entries
    assert BYTE_LENGTHS[28] == 5  # byte 28: 28 // 3 = 9 -> 5 entries of 28 % 3 = 1 (loss)


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        ([D], [0]),  # one draw: length index 0
        ([W, W, W], [3 * 6 + 2]),  # three wins: length 3 is index 6
        ([L] * 5, [3 * 9 + 1]),  # five losses: index 9
        ([D] * 10, [3 * 12, 0]),  # ten draws: 9 then 1
        ([W] * 7 + [L] * 2, [3 * 11 + 2, 3 * 3 + 1]),  # 7 wins (index 11), 2 losses (index 3)
        ([X, X, W, W, X, D], [3 * 9 + 2, 0]),  # leading don't-care takes the first value
        ([D, X, X, D, L, X], [3 * 7 + 0, 3 * 3 + 1]),  # don't-care continues the run it is in
        ([X, X, X], [3 * 6 + 0]),  # nothing stored: draws
    ],
)
def test_concrete_runs(codes: list[int], expected: list[int]) -> None:
    data = encode(np.array(codes, dtype=np.uint8))
    assert list(data) == expected
    stored = [c for c in codes if c != X]
    first = stored[0] if stored else D
    filled, prev = [], first
    for c in codes:
        prev = prev if c == X else c
        filled.append(prev)
    assert list(decode(data)) == filled


def test_a_long_run_is_longest_lengths_first() -> None:
    n = 2 * 4_479_450 + 10
    data = encode(np.full(n, W, dtype=np.uint8))
    assert list(data) == [3 * 84 + 2, 3 * 84 + 2, 3 * 12 + 2, 3 * 0 + 2]  # 9 + 1 = 10
    assert decoded_length(np.frombuffer(data, dtype=np.uint8)) == n


def test_streaming_in_chunks_gives_the_bytes_of_the_whole() -> None:
    rng = np.random.default_rng(5)
    runs = rng.integers(1, 400, size=300)
    codes = np.repeat(rng.integers(0, 4, size=300).astype(np.uint8), runs)
    whole = encode(codes)
    state = new_state()
    parts = []
    for lo in range(0, codes.shape[0], 777):
        chunk = codes[lo : lo + 777]
        out = np.empty(bytes_bound(chunk.shape[0], int(state[1])), dtype=np.uint8)
        parts.append(out[: encode_runs(chunk, state, LENGTHS, out)].tobytes())
    out = np.empty(bytes_bound(0, int(state[1])), dtype=np.uint8)
    parts.append(out[: finish_runs(state, LENGTHS, out)].tobytes())
    assert b"".join(parts) == whole
    values = decode(whole)
    care = codes != X
    assert np.array_equal(values[care], codes[care])
    # decoding in pieces with a cursor gives the same values
    raw = np.frombuffer(whole, dtype=np.uint8)
    cursor = np.zeros(2, dtype=np.int64)
    got = []
    buf = np.empty(1000, dtype=np.uint8)
    while True:
        k = decode_runs(raw, cursor, BYTE_LENGTHS, buf)
        got.append(buf[:k].copy())
        if k < buf.shape[0]:
            break
    assert np.array_equal(np.concatenate(got), values)


def test_block_table_finds_every_entry() -> None:
    rng = np.random.default_rng(7)
    codes = np.repeat(rng.integers(0, 3, size=2000).astype(np.uint8), rng.integers(1, 50, 2000))
    raw = np.frombuffer(encode(codes), dtype=np.uint8)
    assert raw.shape[0] > 3 * 256  # several blocks
    starts = block_starts(raw)
    assert starts[0] == 0 and starts[-1] == codes.shape[0]
    for entry in [0, 1, 255, 256, 5000, codes.shape[0] - 1, *rng.integers(0, codes.shape[0], 300)]:
        assert value_at(raw, starts, int(entry)) == codes[entry]
    with pytest.raises(IndexError):
        value_at(raw, starts, codes.shape[0])


def test_files_of_the_wrong_length_are_refused(tmp_path) -> None:
    path = tmp_path / "bb" / "2" / "0011"
    with pytest.raises(ScanFileError, match="decodes to 3 entries, expected 4"):
        write_bitbase(path, [np.array([3 * 6], dtype=np.uint8)], 4)
    assert not path.exists() and not list(path.parent.iterdir())  # nothing half-written
    assert write_bitbase(path, [np.array([3 * 6, 1], dtype=np.uint8)], 4) == 2
    assert list(read_bitbase(path, 4)) == [18, 1]
    with pytest.raises(ScanFileError, match="decodes to 4 entries, Scan expects 5"):
        read_bitbase(path, 5)
    with pytest.raises(ScanFileError, match="missing"):
        read_bitbase(tmp_path / "nothing", 5)
