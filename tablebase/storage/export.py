"""Copying a database into the current format: the full copy, or the WDL-only distribution copy.

``tablebase export SRC DST`` rewrites every slice file of ``SRC`` into ``DST`` in the current
format version (3: both parts, the metadata digest), converting version 1 and 2 files on
the way; ``--wdl-only`` writes only the
compact win/draw/loss part and the slice attributes (counts, longest win, distance
histogram), the copy to download or ship. Every file is read and checked before it is
copied and written under a temporary name, checked and renamed (:mod:`tablebase.storage.writer`),
so a file with its final name in ``DST`` is complete. A source file whose WDL part
disagrees with its values (:func:`tablebase.storage.checks.check_wdl_part`) is refused; every
copy records in its attributes the SHA-256 of the values its WDL part was checked against
(``values_sha256``), which ``verify`` of a WDL-only copy compares with the full database's.

**Which form of the WDL part.** A slice's part either stores its capture positions' codes
(every probe reads one code) or leaves them to the prober (smaller: a probe of a capture
position resolves it through its captures, which lie in smaller slices). The WDL-only copy
stores them in the slices of up to :data:`STORE_CAPTURES_UP_TO` (5) pieces and leaves them
to the prober above (``store_up_to``, ``--store-captures-up-to N``): the small slices cost
little stored (2-5 International: 88.7 MB against 33.3 MB) and then probe at one read each,
while a six-piece part takes about a third of its stored size (all 70 six-piece slices:
0.167 bits per position against 0.502), and each of its capture positions resolves in one
step, its captures landing in slices that store theirs. ``store_captures``
(``--store-captures``) stores them in every slice, ``resolve_captures``
(``--resolve-captures``) in none. The full copy stores them everywhere by default, as the
generator writes them. A part is converted when the source has the other form: to the
smaller form by making capture positions don't-care; to the stored form from the values
where the file has them, and in a WDL-only file by finding each capture position's result
through its captures in ``SRC`` itself (the smaller slices its captures reach must be there,
as a probe of it needs them). In a slice with king runs (Frisian) the solver always kept
capture positions' codes, so the part is copied and flagged stored whatever is asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tablebase.material.slices import Slice
from tablebase.probe.database import Tablebase
from tablebase.rules.variants import Variant, get_variant
from tablebase.storage.checks import check_wdl_part
from tablebase.storage.listing import slice_files as list_slice_files
from tablebase.storage.reader import has_values, open_slice_file, read_attrs, read_slice, read_wdl
from tablebase.storage.slicefile import (
    DATASET,
    WDL_DATASET,
    SliceStats,
    TableFileError,
    checksum,
    slice_path,
)
from tablebase.storage.values import WDL_CODE_OF_RESULT, dtw_histogram
from tablebase.storage.wdl import capture_entries, encode_wdl, non_positions, refill, set_codes
from tablebase.storage.writer import slice_attrs, write_parts

# attributes describing the file rather than the slice: written afresh by write_parts
_FILE_KEYS = ("format_version", "parts", "value_bits", "wdl_captures_stored")
RESOLVE_BLOCK = 1 << 22  # entries per block when resolving a WDL-only file's captures
STORE_CAPTURES_UP_TO = 5  # the WDL-only copy stores capture codes in slices this small


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote: slices, positions, the bytes of each part in ``DST``, and how
    many slices' WDL parts store capture positions' codes."""

    slices: int
    positions: int
    wdl_bytes: int
    values_bytes: int
    captures_stored: int


def slice_files(db: Path) -> list[tuple[Slice, Path]]:
    """The slice files of a database directory, in name order (other files left out;
    :func:`tablebase.storage.listing.slice_files`)."""
    return list_slice_files(db).slices


def part_bytes(path: Path | str) -> tuple[int, int]:
    """Bytes stored for the (wdl, values) parts of a slice file (0 for a part it lacks, as
    the WDL part of a version 1 file); :class:`TableFileError` for a damaged file."""
    with open_slice_file(path) as f:

        def stored(name: str) -> int:
            return int(f[name].id.get_storage_size()) if name in f else 0

        return stored(WDL_DATASET), stored(DATASET)


def export_database(
    src: Path | str,
    dst: Path | str,
    wdl_only: bool = False,
    on_slice: Callable[[Slice], None] | None = None,
    resolve_captures: bool = False,
    store_captures: bool = False,
    store_up_to: int | None = None,
) -> ExportReport:
    """Copy every slice of ``src`` into ``dst`` (format version 2; ``wdl_only``: the WDL part
    alone). The WDL part stores capture positions' codes in slices of up to ``store_up_to``
    pieces and leaves them to the prober in larger ones; ``store_up_to`` defaults to
    :data:`STORE_CAPTURES_UP_TO` in a WDL-only copy and to every slice in a full copy.
    ``store_captures`` (every slice) or ``resolve_captures`` (none) asks for one form
    throughout; at most one of the three may be given. Raises ValueError if ``src`` has no
    slice files or ``dst`` already has some, or more than one form is asked for, and
    :class:`TableFileError` for a damaged source file (nothing half-written is left)."""
    limit = captures_stored_up_to(wdl_only, resolve_captures, store_captures, store_up_to)
    src, dst = Path(src), Path(dst)
    if not src.is_dir():
        raise ValueError(f"database directory {src} does not exist")
    files = slice_files(src)
    if not files:
        raise ValueError(f"no slice files in {src}")
    if dst.resolve() == src.resolve():
        raise ValueError("the destination must be another directory than the source")
    if dst.exists() and slice_files(dst):
        raise ValueError(f"{dst} already holds slice files: export into a new directory")
    dst.mkdir(parents=True, exist_ok=True)
    positions = wdl_bytes = values_bytes = stored_parts = 0
    source = None  # src opened for probing, to resolve a WDL-only file's captures

    for s, path in files:
        attrs = read_attrs(path)
        variant = get_variant(attrs["variant"])
        if not wdl_only and not has_values(attrs):
            raise TableFileError(path, "holds win/draw/loss only: use --wdl-only to copy it")
        runs = variant.king_move_limit > 0
        store = runs or s.pieces <= limit  # the solver keeps captures where runs are
        # the WDL part is encoded afresh from the values unless it can be copied
        same_form = attrs["wdl_captures_stored"] == store or runs
        reencode = attrs["format_version"] == 1 or (not same_form and has_values(attrs))
        need_values = has_values(attrs)  # to check the WDL part against them
        values = read_slice(path, variant, s) if need_values else None
        if values is not None and attrs["format_version"] != 1:
            check_wdl_part(path, variant, s, values)  # refuses a forged or damaged part
        if values is not None and attrs["format_version"] == 1:
            stats = SliceStats(
                attrs["positions"],
                attrs["wins"],
                attrs["draws"],
                attrs["losses"],
                attrs["longest_win"],
                attrs["longest_win_index"],
            )
            new_attrs = slice_attrs(
                variant, s, stats, attrs["longest_win_fen"], dtw_histogram(values)
            )
        else:
            new_attrs = {k: v for k, v in attrs.items() if k not in _FILE_KEYS}
        if values is not None:
            new_attrs["values_sha256"] = checksum(values)
        if reencode:  # every version 1 file, whose values were read above
            assert values is not None  # reencode: version 1 (values only) or has_values
            packed = encode_wdl(variant, s, values, captures=store)
        else:
            packed = read_wdl(path, variant, s)
            if not same_form and store:  # a WDL-only file leaving captures to the prober
                if source is None:
                    source = Tablebase(src, variant, wdl_only=True)
                packed = _with_captures(source, variant, s, packed)
            elif not same_form:  # stored -> the older form: captures made don't-care
                packed = _without_captures(variant, s, packed)
        out = write_parts(
            dst, variant, s, new_attrs, packed, None if wdl_only else values, store,
                )  # fmt: skip
        del values
        w, v = part_bytes(out)
        positions += int(new_attrs["positions"])
        wdl_bytes += w
        values_bytes += v
        stored_parts += int(store)
        if on_slice is not None:
            on_slice(s)
    assert all(slice_path(dst, s).exists() for s, _ in files)
    return ExportReport(len(files), positions, wdl_bytes, values_bytes, stored_parts)


def captures_stored_up_to(
    wdl_only: bool, resolve_captures: bool, store_captures: bool, store_up_to: int | None
) -> int:
    """The largest piece count whose slices an export writes with capture codes stored
    (0: none), from its options (see :func:`export_database`); ValueError if more than one
    form is asked for or ``store_up_to`` is negative."""
    asked = [resolve_captures, store_captures, store_up_to is not None]
    if sum(asked) > 1:
        raise ValueError("store_captures, resolve_captures and store_up_to ask for different forms")
    if store_up_to is not None:
        if store_up_to < 0:
            raise ValueError(f"store_up_to must be 0 or more, not {store_up_to}")
        return store_up_to
    if resolve_captures:
        return 0
    if store_captures or not wdl_only:
        return 1 << 30
    return STORE_CAPTURES_UP_TO


def _capture_blocks(variant: Variant, s: Slice) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The capture positions of slice ``s`` (no king runs) block by block: their entries
    and bitboards (:func:`tablebase.storage.wdl.capture_entries`)."""

    counts = np.array(tuple(s), dtype=np.int64)
    size = s.size(variant)
    for lo in range(0, size, RESOLVE_BLOCK):
        hi = min(size, lo + RESOLVE_BLOCK)
        yield capture_entries(lo, hi, variant.squares, variant.per_row, counts, variant.rules)


def _without_captures(variant: Variant, s: Slice, packed: np.ndarray) -> np.ndarray:
    """The WDL part ``packed`` of slice ``s`` in the older form: capture positions and the
    entries that are not positions take the code before them, as the writer fills them."""

    unstored = non_positions(variant, s)
    for idx, _ in _capture_blocks(variant, s):
        np.bitwise_or.at(unstored, idx >> 3, (1 << (idx & 7)).astype(np.uint8))
    out = packed.copy()
    refill(out, unstored, s.size(variant))
    return out


def _with_captures(source: Tablebase, variant: Variant, s: Slice, packed: np.ndarray) -> np.ndarray:
    """The WDL part ``packed`` of slice ``s``, which leaves capture positions to the
    prober, with each capture position's own code (probed through its captures in
    ``source``, a :class:`tablebase.probe.database.Tablebase`) and the entries that are not
    positions filled again with the code before them."""

    out = packed.copy()
    lut = np.zeros(3, dtype=np.uint8)  # result + 1 -> code
    for r, c in WDL_CODE_OF_RESULT.items():
        lut[r + 1] = c
    for idx, boards in _capture_blocks(variant, s):
        if idx.shape[0]:
            res = source.probe_batch_wdl(boards[0], boards[1], boards[2], boards[3], True)
            set_codes(out, idx, lut[res.astype(np.int64) + 1])
    refill(out, non_positions(variant, s), s.size(variant))
    return out
