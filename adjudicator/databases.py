"""Where the tables are: ``--db`` means the same for ``adjudicator rule`` and ``serve``.

A database argument is a folder with one subfolder per variant (``data/international``,
``data/english``), or a single variant's folder (its slice files name the variant), or a
mapping from variant names to folders. :func:`resolve_databases` turns it into
``{variant name: folder}``; :func:`open_tables` opens them all for a ruling run, their
blocks read through one bounded cache (:mod:`tablebase.probe.cache`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from tablebase.probe.cache import BlockCache
from tablebase.probe.database import Tablebase
from tablebase.rules.variants import VARIANTS, Variant, get_variant
from tablebase.storage.listing import slice_files

T = TypeVar("T")


def resolve_databases(
    db: Mapping[str, str | os.PathLike[str]] | str | os.PathLike[str] | None,
) -> dict[str, Path]:
    """``{variant name: directory}`` for a mapping, a parent directory with one
    subdirectory per variant, a single variant's directory, or None; raises ``ValueError``
    naming the problem."""
    if db is None:
        return {}
    if isinstance(db, Mapping):
        out = {}
        for name, path in db.items():
            variant = get_variant(name)  # ValueError for an unknown name
            if not Path(path).is_dir():
                raise ValueError(f"database directory {path} does not exist")
            out[variant.name] = Path(path)
        return out
    path = Path(db)
    if not path.is_dir():
        raise ValueError(f"database directory {path} does not exist")
    if any(path.glob("*.h5")):
        return {Tablebase(path).variant.name: path}
    out = {name: path / name for name in VARIANTS if (path / name).is_dir()}
    if not out:
        raise ValueError(
            f"no database in {path}: expected *.h5 slice files, or subdirectories "
            f"named after the variants ({', '.join(sorted(VARIANTS))})"
        )
    return out


@contextlib.contextmanager
def open_tables(
    db: Mapping[str, str | os.PathLike[str]] | str | os.PathLike[str] | None,
    cache: BlockCache | None = None,
) -> Iterator[dict[str, Tablebase]]:
    """``{variant name: open tablebase}`` for a database argument (see
    :func:`resolve_databases`), closed on exit, every variant reading through ``cache``
    (None: the process's default cache); ``ValueError`` naming a bad folder."""
    opened: dict[str, Tablebase] = {}
    try:
        opened.update(open_each(resolve_databases(db), cache))
        yield opened
    finally:
        for tb in opened.values():
            tb.close()


def open_each(
    dirs: Mapping[str, Path],
    cache: BlockCache | None = None,
    opener: Callable[[Path, Variant, BlockCache | None], T] | None = None,
) -> dict[str, T]:
    """Open each variant's directory with ``opener(path, variant, cache)`` (default: a
    :class:`Tablebase` reading through ``cache``; the one place a
    database argument's folders are opened: ``adjudicator rule`` and the service), checking
    that its slice files are that variant's; ``ValueError`` naming a folder of another
    variant's tables."""
    out: dict[str, T] = {}
    for name, path in dirs.items():
        variant = get_variant(name)
        if slice_files(path).slices:  # junk *.h5 files are not slice files
            found = Tablebase(path, cache=cache).variant.name
            if found != variant.name:
                raise ValueError(f"database {path} holds {found} tables, not {variant.name}")
        if opener is None:
            out[variant.name] = Tablebase(path, variant, cache=cache)  # type: ignore[assignment]
        else:
            out[variant.name] = opener(path, variant, cache)
    return out
