"""Copying a database into the current format: the full copy, or the WDL-only distribution copy.

``tablebase export SRC DST`` rewrites every slice file of ``SRC`` into ``DST`` in format
version 2 (both parts), converting version 1 files on the way; ``--wdl-only`` writes only the
compact win/draw/loss part and the slice attributes (counts, longest win, distance
histogram), the copy to download or ship. Every file is read and checked before it is
copied and written under a temporary name, checked and renamed (:mod:`tablebase.storage`),
so a file with its final name in ``DST`` is complete.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import h5py

from tablebase.rules.variants import get_variant
from tablebase.slices import Slice, parse_slice
from tablebase.storage import (
    DATASET,
    WDL_DATASET,
    SliceStats,
    TableFileError,
    has_values,
    read_attrs,
    read_slice,
    read_wdl,
    slice_attrs,
    slice_path,
    write_parts,
)
from tablebase.values import dtw_histogram

# attributes describing the file rather than the slice: written afresh by write_parts
_FILE_KEYS = ("format_version", "parts", "value_bits")


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote: slices, positions, and the bytes of each part in ``DST``."""

    slices: int
    positions: int
    wdl_bytes: int
    values_bytes: int


def slice_files(db: Path) -> list[tuple[Slice, Path]]:
    """The slice files of a database directory, in name order (other files left out)."""
    out = []
    for f in sorted(db.glob("*.h5")):
        try:
            out.append((parse_slice(f.stem), f))
        except ValueError:
            continue
    return out


def part_bytes(path: Path | str) -> tuple[int, int]:
    """Bytes stored for the (wdl, values) parts of a slice file (0 for a part it lacks, as
    the WDL part of a version 1 file)."""
    with h5py.File(path, "r") as f:
        return tuple(
            int(f[name].id.get_storage_size()) if name in f else 0
            for name in (WDL_DATASET, DATASET)
        )  # type: ignore[return-value]


def export_database(
    src: Path | str,
    dst: Path | str,
    wdl_only: bool = False,
    on_slice: Callable[[Slice], None] | None = None,
) -> ExportReport:
    """Copy every slice of ``src`` into ``dst`` (format version 2; ``wdl_only``: the WDL part
    alone). Raises ValueError if ``src`` has no slice files or ``dst`` already has some, and
    :class:`TableFileError` for a damaged source file (nothing half-written is left)."""
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
    positions = wdl_bytes = values_bytes = 0
    for s, path in files:
        attrs = read_attrs(path)
        variant = get_variant(attrs["variant"])
        if not wdl_only and not has_values(attrs):
            raise TableFileError(path, "holds win/draw/loss only: use --wdl-only to copy it")
        need_values = not wdl_only or attrs["format_version"] == 1
        values = read_slice(path, variant, s) if need_values else None
        if values is not None and attrs["format_version"] == 1:
            from tablebase.wdl import encode_wdl

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
            packed = encode_wdl(variant, s, values)
        else:
            new_attrs = {k: v for k, v in attrs.items() if k not in _FILE_KEYS}
            packed = read_wdl(path, variant, s)
        out = write_parts(dst, variant, s, new_attrs, packed, None if wdl_only else values)
        w, v = part_bytes(out)
        positions += int(new_attrs["positions"])
        wdl_bytes += w
        values_bytes += v
        if on_slice is not None:
            on_slice(s)
    assert all(slice_path(dst, s).exists() for s, _ in files)
    return ExportReport(len(files), positions, wdl_bytes, values_bytes)
