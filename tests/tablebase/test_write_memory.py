"""Writing a slice holds little besides its values: the WDL part is packed in one compiled
pass from the solver's don't-care bits, and the value histogram is counted without widening
the values (``np.bincount`` would make an 8-byte copy of every entry: 19 GB for the largest
6-piece slice). The output is the same as the plain definitions give."""

from __future__ import annotations

import os
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


def _slice_values(s, variant):
    """Values for every entry of ``s`` (random, a third of them draws: they compress
    little, so a file image in memory would show) and stats that agree with them."""
    from tablebase.storage.slicefile import SliceStats

    v = _values(s.size(variant), np.uint8, 11)
    wins = int(((v > 0) & (v % 2 == 1)).sum())
    losses = int(((v > 0) & (v % 2 == 0)).sum())
    draws = v.shape[0] - wins - losses
    return v, SliceStats(v.shape[0], wins, draws, losses, 58, int(np.argmax(v == 59)))


@pytest.mark.slow  # 8-30 s in the quick tier (issue 51): CI's slow tier runs it
def test_a_slice_written_with_a_scratch_folder_holds_nothing_of_its_size(
    tmp_path, monkeypatch
) -> None:
    """``write_slice(..., scratch=...)`` (the out-of-core writer), the check reading 2^16
    entries at a time, on a slice of 0.1 M entries and one of 38 M: each file is the one
    written in memory (every dataset and attribute: ISA-L's deflate is not always byte for
    byte the same), the scratch folder is left empty, and what the writing
    allocates (Python and numpy: ``tracemalloc``) grows with the slice by less than a
    sixteenth of a byte per entry (a few bytes per 16 KiB chunk; the value histogram's
    per-thread counts are the most of it), where the writer in memory holds the file's
    image and reads the values back whole."""
    from tablebase.material.slices import parse_slice
    from tablebase.rules.variants import INTERNATIONAL
    from tablebase.storage import checks, writer
    from tablebase.storage.reader import read_slice
    from tablebase.storage.slicefile import slice_path
    from tests.tablebase.conftest import same_table

    monkeypatch.setattr(checks, "CHECK_BLOCK_ENTRIES", 1 << 16)
    small = parse_slice("1010")  # both writers compiled first: compiling allocates too
    for how in ("memory", "scratch"):
        (tmp_path / "warm" / how).mkdir(parents=True)
        kw = {"scratch": tmp_path / "warm" / how} if how == "scratch" else {}
        writer.write_slice(tmp_path / "warm" / how, INTERNATIONAL, small,
                          *_slice_values(small, INTERNATIONAL), "", **kw)  # fmt: skip
    peaks = {}
    for name in ("1011", "1103"):
        s = parse_slice(name)
        values, stats = _slice_values(s, INTERNATIONAL)
        for how in ("memory", "scratch"):
            db, scratch = tmp_path / how, tmp_path / f"{how}-scratch"
            db.mkdir(exist_ok=True)
            scratch.mkdir(exist_ok=True)
            kw = {"scratch": scratch} if how == "scratch" else {}
            runs = []
            for _ in range(2):  # the least of two: other threads of the process (left by
                tracemalloc.start()  # earlier tests) may allocate while one runs
                writer.write_slice(db, INTERNATIONAL, s, values, stats, "", **kw)
                runs.append(tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
            peaks[name, how] = min(runs)
            assert not any(scratch.iterdir())
        path = slice_path(tmp_path / "scratch", s)
        assert same_table(slice_path(tmp_path / "memory", s), path)
        assert np.array_equal(read_slice(path, INTERNATIONAL, s), values)
        assert peaks[name, "memory"] > values.shape[0], peaks  # the values read back whole
    # the smallest part the writer could hold, the bits of the entries that are not
    # positions, is an eighth of a byte per entry: what grows is far less (a few bytes per
    # 16 KiB chunk, and the noise of other threads)
    n = {name: parse_slice(name).size(INTERNATIONAL) for name in ("1011", "1103")}
    grown = peaks["1103", "scratch"] - peaks["1011", "scratch"]
    assert grown < (n["1103"] - n["1011"]) // 16 and peaks["1103", "scratch"] < n["1103"] // 8


def test_the_writer_on_disk_meets_a_full_disk_with_oserror_and_leaves_nothing(
    tmp_path, monkeypatch
) -> None:
    """The disk fills up while the writer on disk builds the file (the file refuses bytes
    past 200 kB with ENOSPC, as a full disk does): ``write_slice`` raises that ``OSError``,
    and no file, temporary or final, nor any scratch file is left."""
    import errno

    from tablebase.material.slices import parse_slice
    from tablebase.rules.variants import INTERNATIONAL
    from tablebase.storage import writer

    class Full:
        """A file on a disk that fills up at 200 kB."""

        def __init__(self, path) -> None:
            self.file = open(path, "w+b")  # noqa: SIM115

        def __getattr__(self, name: str):
            return getattr(self.file, name)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc) -> None:
            self.file.close()

        def write(self, b) -> int:
            if self.file.tell() + len(b) > 200_000:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return self.file.write(b)

    s = parse_slice("1111")
    values, stats = _slice_values(s, INTERNATIONAL)
    monkeypatch.setattr(writer, "_image_file", Full)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(OSError) as e:
        writer.write_slice(tmp_path, INTERNATIONAL, s, values, stats, "", scratch=scratch)
    assert e.value.errno == errno.ENOSPC
    assert [p.name for p in tmp_path.iterdir()] == ["scratch"]
    assert not any(scratch.iterdir())
