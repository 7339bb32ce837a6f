"""A sampled check of a slice without its pair and dependencies in memory.

:func:`tablebase.build.verify.verify_database` loads a pair and the slices it depends on
whole to re-derive its values (the 7-piece kings-only pair 0403+0304 took 11.5 GiB); a
pair whose tables exceed the check's memory is checked here instead, on its sample:

* the sampled entries' successors are generated and placed in the layout the loaded check
  uses (:func:`tablebase.solve.skeleton.sample_successors`), without the tables;
* the values at those places, and the sampled entries' own, are read block by block from
  the files (:func:`tablebase.probe.blocks.open_part`: one ``pread``, one inflate and one
  CRC-32 per block, each block read once per slice and sample chunk, in threads);
* each sampled entry's value is re-derived from them
  (:func:`tablebase.solve.skeleton.sample_disagreements`), exactly as the loaded check does;
* its file's parts are read in runs of blocks against their CRC-32s and the whole-part
  SHA-256 (:func:`tablebase.storage.checks.check_part_in_blocks`), and its WDL part is
  compared with the values at the sampled entries: a position's code must be its value's
  (entries that are no position, and capture positions where the file leaves them to the
  prober, hold a filler no probe reads).

Memory: the sample's places (about ten per entry, 8 bytes each), :data:`SAMPLE_CHUNK`
entries at a time, and a block per reading thread; nothing of a slice's size.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tablebase.build.task import _counts, entry_position
from tablebase.material.index import BINOM
from tablebase.material.slices import Slice, flat_offsets
from tablebase.probe.blocks import PartSource, open_part
from tablebase.rules.variants import Variant
from tablebase.solve import skeleton
from tablebase.solve.records import Shape
from tablebase.storage.checks import check_part_in_blocks
from tablebase.storage.chunkio import BLOCK_BYTES
from tablebase.storage.reader import read_attrs
from tablebase.storage.slicefile import DATASET, WDL_DATASET, slice_path
from tablebase.storage.wdl import codes_of

SAMPLE_CHUNK = 1 << 20  # sampled entries placed and read at a time
READ_THREADS = 4  # threads reading (inflating) blocks


def tables_bytes(variant: Variant, members: tuple[Slice, ...], width: int) -> int:
    """Bytes of the flat tables of ``members`` at ``width`` bytes per value (what the loaded
    check holds)."""
    return width * sum(s.size(variant) for s in members)


def check_sample(
    db: Path,
    variant: Variant,
    s: Slice,
    members: tuple[Slice, ...],
    indices: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, int, tuple[str, ...]]:
    """The sampled ``indices`` of slice ``s`` (of a pair whose tables are ``members``: the
    pair then its dependencies) re-derived from values read by blocks, and its parts
    checked (see the module docstring): the indices found inconsistent, and the number and
    first 20 positions (FEN) of the sampled entries whose WDL code disagrees with their
    value. Raises :class:`~tablebase.storage.slicefile.TableFileError` for a damaged file."""
    path = slice_path(db, s)
    wdl = read_attrs(path)["format_version"] > 1  # a version 1 file's codes are its values'
    for part in (DATASET, WDL_DATASET) if wdl else (DATASET,):
        check_part_in_blocks(path, variant, s, part)
    offsets, _ = flat_offsets({m.code: m.size(variant) for m in members})
    counts = _counts(s)
    off = int(offsets[s.code])
    nchunks = max(1, threads) * 4
    bad: list[np.ndarray] = [indices[:0]]
    wdl_bad: list[np.ndarray] = [indices[:0]]
    for a in range(0, indices.shape[0], SAMPLE_CHUNK):
        idx = indices[a : a + SAMPLE_CHUNK]
        starts, places, kinds = skeleton.sample_successors(
            offsets, variant.rules, Shape(counts, BINOM), idx, nchunks
        )
        got = read_places(db, variant, members, offsets, places)
        stored = read_places(db, variant, members, offsets, idx + off)
        wrong = skeleton.sample_disagreements(starts, places, got, stored, kinds, nchunks)
        bad.append(idx[wrong])
        if wdl:
            wdl_bad.append(idx[_wdl_disagrees(db, variant, s, idx, stored, kinds)])
    wdl_wrong = np.concatenate(wdl_bad)
    fens = tuple(entry_position(variant, s, int(i)).fen() for i in wdl_wrong[:20])
    return np.concatenate(bad), int(wdl_wrong.shape[0]), fens


def read_places(
    db: Path,
    variant: Variant,
    members: tuple[Slice, ...],
    offsets: np.ndarray,
    places: np.ndarray,
) -> np.ndarray:
    """The values (``int64``) at ``places`` of the flat layout ``offsets`` of ``members``,
    read from each slice's ``values`` part by blocks, each block once; 0 at a place that
    is a sentinel (negative)."""
    got = np.zeros(places.shape[0], dtype=np.int64)
    for m in members:
        lo = int(offsets[m.code])
        hi = lo + m.size(variant)
        sel = np.flatnonzero((places >= lo) & (places < hi))
        if sel.shape[0]:
            _read_slice_places(slice_path(db, m), variant, m, places[sel] - lo, sel, got)
    return got


def _read_slice_places(
    path: Path, variant: Variant, s: Slice, entries: np.ndarray, into: np.ndarray, got: np.ndarray
) -> None:
    """``got[into] =`` the values of ``entries`` of slice ``s``, read by blocks."""
    source = open_part(path, variant, s, DATASET)
    try:
        got[into] = gather(source, entries)
    finally:
        source.close()


def gather(source: PartSource, entries: np.ndarray) -> np.ndarray:
    """The words (``source.width`` bytes, little-endian) at ``entries`` of a part, read by
    blocks, each block once, in up to :data:`READ_THREADS` threads."""
    width = source.width
    byte = entries * width
    block = byte // BLOCK_BYTES
    order = np.argsort(block, kind="stable")
    block, at = block[order], (byte[order] % BLOCK_BYTES) // width
    out = np.zeros(entries.shape[0], dtype=np.int64)
    if not entries.shape[0]:
        return out
    cut = np.flatnonzero(np.diff(block)) + 1
    bounds = np.concatenate(([0], cut, [block.shape[0]]))
    runs = np.array_split(np.arange(bounds.shape[0] - 1), min(READ_THREADS, bounds.shape[0] - 1))
    dtype = np.dtype("<u2") if width == 2 else np.dtype(np.uint8)
    words = np.empty(entries.shape[0], dtype=np.int64)

    def read(run: np.ndarray) -> None:
        buf = np.empty(BLOCK_BYTES, dtype=np.uint8)
        view = buf.view(dtype)
        for k in run.tolist():
            lo, hi = bounds[k], bounds[k + 1]
            source.read(int(block[lo]), buf)
            words[lo:hi] = view[at[lo:hi]]

    if len(runs) == 1:
        read(runs[0])
    else:
        with ThreadPoolExecutor(len(runs)) as pool:
            for f in [pool.submit(read, r) for r in runs]:
                f.result()
    out[order] = words
    return out


def _wdl_disagrees(
    db: Path,
    variant: Variant,
    s: Slice,
    idx: np.ndarray,
    values: np.ndarray,
    kinds: np.ndarray,
) -> np.ndarray:
    """Per sampled entry ``idx`` (its value ``values``, its kind from
    :func:`~tablebase.solve.skeleton.sample_successors`): True where it is a position whose
    code the WDL part holds and that code is not its value's."""
    source = open_part(slice_path(db, s), variant, s, WDL_DATASET)
    try:
        read = kinds != skeleton.NOT_A_POSITION
        if not (source.captures_stored or variant.king_move_limit > 0):
            read &= kinds != skeleton.CAPTURING  # the prober works these out
        sel = np.flatnonzero(read)
        packed = gather(source, idx[sel] // 4)
    finally:
        source.close()
    codes = (packed >> (2 * (idx[sel] & 3))) & 3
    out = np.zeros(idx.shape[0], dtype=np.bool_)
    out[sel] = codes != codes_of(values[sel])
    return out
