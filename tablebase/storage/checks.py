"""Checks of slice files beyond their metadata: a part read a block at a time against its
digest, the group index of the group-coded parts, the WDL part against the values, and a
folder's files that fail their check."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numba
import numpy as np

from tablebase.material.slices import Slice
from tablebase.rules.variants import Variant
from tablebase.storage import integrity
from tablebase.storage.chunkio import check_groups, read_dataset
from tablebase.storage.listing import slice_files
from tablebase.storage.reader import (
    attr_value,
    check_attrs,
    check_header,
    file_attrs,
    open_slice_file,
    read_attrs,
    read_wdl_part,
)
from tablebase.storage.slicefile import DATASET, WDL_DATASET, TableFileError
from tablebase.storage.wdl import encode_wdl, packed_size

CHECK_BLOCK_ENTRIES = 1 << 24  # entries read at a time by check_part_in_blocks


def check_part_in_blocks(path: Path | str, variant: Variant, s: Slice, part: str) -> None:
    """The checks of :func:`read_slice` (``part`` :data:`DATASET`) or :func:`read_wdl`
    (:data:`WDL_DATASET`) of a version 3 file: the file whole, its attributes, the part's
    shape and type, the part against its checksum; with the part read and hashed
    :data:`CHECK_BLOCK_ENTRIES` at a time (each chunk against its CRC-32, in threads, as
    :func:`read_slice` reads), never held whole. Raises
    :class:`TableFileError` as they do."""

    path = Path(path)
    values = part == DATASET
    size = s.size(variant) if values else packed_size(s.size(variant))
    dtypes = (np.uint8, np.uint16) if values else (np.uint8,)
    what = "values were" if values else "wdl part was"
    with open_slice_file(path) as f:
        check_attrs(path, file_attrs(path, f), variant, s)
        if part not in f:
            raise TableFileError(path, f"has no {what.split()[0]} part")
        ds = f[part]
        if ds.dtype not in dtypes or ds.shape != (size,):
            raise TableFileError(path, f"{part} dataset has shape {ds.shape} {ds.dtype}")
        h = hashlib.sha256()
        block = np.empty(min(size, CHECK_BLOCK_ENTRIES), dtype=ds.dtype.newbyteorder("="))
        threads = numba.get_num_threads()
        for a in range(0, size, CHECK_BLOCK_ENTRIES):
            got = block[: min(size, a + CHECK_BLOCK_ENTRIES) - a]
            read_dataset(ds, got, threads, a)  # each chunk against its CRC-32 too
            h.update(got.view(np.uint8).data)  # .data: a Buffer to mypy (slicefile.checksum)
        digest = attr_value(ds.attrs.get("sha256"))
    if h.hexdigest() != digest:
        raise TableFileError(path, f"checksum mismatch: the {what} altered or damaged")


def check_group_index(path: Path | str) -> None:
    """Every group-coded part of a slice file (format 4) decodes group by group, as a probe
    reads it, to exactly its chunks' bytes (:func:`tablebase.storage.chunkio.check_groups`);
    :class:`TableFileError` naming the block that does not."""
    path = Path(path)
    with open_slice_file(path) as f:
        for name in (WDL_DATASET, DATASET):
            if name in f:
                try:
                    check_groups(f[name], numba.get_num_threads())
                except (OSError, ValueError, KeyError) as e:
                    raise TableFileError(path, f"damaged slice file ({e})") from None


def wdl_disagreements(
    variant: Variant, s: Slice, values: np.ndarray, packed: np.ndarray, captures_stored: bool
) -> np.ndarray:
    """The entries of slice ``s`` whose code in the WDL part ``packed`` differs from the one
    its ``values`` give (the part as the writer encodes it from them, in the form the file
    has: every position's code, or capture positions left to the prober); empty when the
    part agrees with the values. Entries that are not read (not positions, or capture
    positions in the older form) hold the writer's filler, so the comparison is exact."""

    stored = captures_stored or variant.king_move_limit > 0  # runs: the solver kept them all
    expected = encode_wdl(variant, s, values, numba.get_num_threads(), None, stored)
    if expected.shape != packed.shape:
        return np.arange(s.size(variant), dtype=np.int64)
    bytes_off = np.flatnonzero(expected != packed)
    if not bytes_off.shape[0]:
        return bytes_off.astype(np.int64)
    diff = expected[bytes_off] ^ packed[bytes_off]
    out = []
    for k in range(4):  # the entries of each differing byte whose two bits differ
        hit = ((diff >> (2 * k)) & 3) != 0
        out.append(bytes_off[hit].astype(np.int64) * 4 + k)
    entries = np.sort(np.concatenate(out))
    return entries[entries < s.size(variant)]


def check_wdl_part(
    path: Path | str, variant: Variant, s: Slice, values: np.ndarray, recheck: bool = False
) -> None:
    """Raise :class:`TableFileError` unless the WDL part of the file of slice ``s`` agrees
    with ``values`` (its values, read and checked) entry for entry
    (:func:`wdl_disagreements`); a version 1 file's WDL codes are its values'."""
    packed, stored = read_wdl_part(path, variant, s, True, recheck)
    if read_attrs(path)["format_version"] == 1:
        return
    bad = wdl_disagreements(variant, s, values, packed, stored)
    if bad.shape[0]:
        raise TableFileError(
            path,
            f"the wdl part disagrees with the values at {bad.shape[0]} entries "
            f"(first: entry {int(bad[0])}): altered or damaged",
        )


def damaged_slice_files(db: Path | str, variant: Variant, legacy: bool = True) -> dict[Path, str]:
    """The slice files of ``db`` whose metadata fails its check (:func:`check_file`) or whose
    attributes describe another slice, with the reason; no data read. ``legacy`` False
    leaves version 1 and 2 files (no digest) to be checked when first read, saving a child
    process each (a service starting on a large older database)."""
    out = {}
    for s, f in slice_files(db).slices:
        try:
            if not legacy and integrity.check_sealed(f) is None:
                continue
            check_header(f, variant, s)
        except TableFileError as e:
            out[f] = e.reason
        except (OSError, integrity.DamagedFile) as e:
            out[f] = str(e)
    return out
