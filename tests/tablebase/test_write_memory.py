"""Writing a slice holds little besides its values: the WDL part is packed in one compiled
pass from the solver's don't-care bits, and the value histogram is counted without widening
the values (``np.bincount`` would make an 8-byte copy of every entry: 19 GB for the largest
6-piece slice). The output is the same as the plain definitions give."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from tablebase.storage.values import dtw_histogram
from tablebase.storage.wdl import DONT_CARE, codes_of, encode_wdl, fill_dont_care, pack, pack_filled


def _values(n: int, dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 60, n).astype(dtype)
    v[rng.random(n) < 0.3] = 0  # draws in runs of various lengths
    return v


def test_pack_filled_is_the_definition():
    rng = np.random.default_rng(3)
    for n in (1, 5, 8, 1001, 40_000):
        for dtype in (np.uint8, np.uint16):
            values = _values(n, dtype, n)
            care = rng.random(n) < 0.4
            care[: rng.integers(0, 4)] = True  # sometimes a leading run of don't-care
            codes = codes_of(values)
            codes[care] = DONT_CARE
            fill_dont_care(codes)
            bits = np.packbits(care, bitorder="little")
            assert np.array_equal(pack_filled(values, bits), pack(codes))
    # blocks packed in parallel: runs of don't-care entries across block boundaries
    for block in (8, 16, 64):
        for n in (7, 8, 9, 300, 1000):
            values = _values(n, np.uint16, n + block)
            care = rng.random(n) < 0.9
            care[n // 3 : n // 3 + 3 * block] = True
            codes = codes_of(values)
            codes[care] = DONT_CARE
            fill_dont_care(codes)
            bits = np.packbits(care, bitorder="little")
            assert np.array_equal(pack_filled(values, bits, block), pack(codes)), (block, n)
    # nothing stored at all: every code is a draw
    assert not pack_filled(_values(9, np.uint8, 0), np.full(2, 255, np.uint8)).any()


def test_encode_wdl_takes_bits_or_bools():
    from tablebase.material.slices import Slice
    from tablebase.rules.variants import INTERNATIONAL

    s = Slice(0, 1, 0, 1)  # only the size matters with dont_care given
    n = s.size(INTERNATIONAL)
    values = _values(n, np.uint8, 1)
    care = np.random.default_rng(2).random(n) < 0.2
    a = encode_wdl(INTERNATIONAL, s, values, 1, care, captures=False)
    b = encode_wdl(INTERNATIONAL, s, values, 1, np.packbits(care, bitorder="little"), False)
    codes = codes_of(values)
    codes[care] = DONT_CARE
    fill_dont_care(codes)
    assert np.array_equal(a, pack(codes)) and np.array_equal(b, pack(codes))
    # values that are not the slice's: refused, not packed from bits read past the end
    with pytest.raises(ValueError, match="values for 2450 entries"):
        encode_wdl(INTERNATIONAL, s, _values(10_000, np.uint8, 1))


def test_histogram_counts_without_a_wide_copy():
    for dtype in (np.uint8, np.uint16):
        peaks = []
        for n in (2_000_000, 8_000_000):
            values = _values(n, dtype, 5)
            want = np.bincount(values)
            dtw_histogram(values[:10])  # compiled first: compiling allocates too
            runs = []
            for _ in range(3):  # the least of three: other threads of the process may
                tracemalloc.start()  # allocate while one runs (seen in the whole suite)
                got = dtw_histogram(values)
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                runs.append(peak)
            assert np.array_equal(got, want[: got.shape[0]]) and not want[got.shape[0] :].any()
            peaks.append(min(runs))
        # a few histograms (one per thread), not a copy of the values: the same for 4x the
        # entries, and far below the 64 MB np.bincount would make of 8 M entries
        assert peaks[1] <= peaks[0] + 4096, peaks
        assert peaks[1] < 8_000_000, peaks
