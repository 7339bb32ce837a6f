"""Which files of a database folder are its slice files, and what a reader takes a
database's variant and parts from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tablebase.material.slices import Slice, parse_material
from tablebase.rules.variants import Variant, get_variant
from tablebase.storage.reader import read_attrs
from tablebase.storage.slicefile import TableFileError, UnknownFormatError


@dataclass(frozen=True)
class SliceFiles:
    """The ``*.h5`` files of a database folder: its slice files (``slices``, ``(slice,
    path)`` in name order) and the others (``others``, ``(path, why it is not one)``)."""

    slices: list[tuple[Slice, Path]]
    others: list[tuple[Path, str]]


def slice_files(db: Path | str) -> SliceFiles:
    """Which files of the folder ``db`` are slice files: those named ``wmwkbmbk.h5`` after a
    slice a database can hold (each side has a piece, at most the pieces supported); any
    other ``*.h5`` file (``0000.h5``, ``0100.h5``, ``notes.h5``) is not one, and readers
    ignore it (``verify`` lists it). The names alone decide: a damaged slice file is a
    slice file whose reading fails. The one home of this rule (prober, ``verify``,
    ``export``, the build and the service list a folder here)."""
    slices, others = [], []
    for f in sorted(Path(db).glob("*.h5")):
        if not f.is_file():
            others.append((f, "not a regular file"))
            continue
        try:
            slices.append((parse_material(f.stem), f))
        except ValueError as e:
            others.append((f, str(e)))
    return SliceFiles(slices, others)


def first_readable_attrs(db: Path | str) -> dict:
    """The attributes (:func:`read_attrs`) of the first slice file of ``db`` that reads,
    damaged ones passed over (they fail alone, when read); ``{}`` if none reads. What a
    reader takes a database's variant and parts from. A file of a format this program does
    not read stops it (:class:`UnknownFormatError`)."""
    for _, f in slice_files(db).slices:
        try:
            return read_attrs(f)
        except UnknownFormatError:
            raise
        except TableFileError:
            continue
    return {}


def database_variant(db: Path | str) -> Variant:
    """The variant of the database folder ``db``, read from its first readable slice file
    (ValueError: none reads, or there is no such folder)."""
    attrs = first_readable_attrs(db)
    if not attrs:
        raise ValueError(f"no readable slice files in {db}")
    return get_variant(attrs["variant"])
