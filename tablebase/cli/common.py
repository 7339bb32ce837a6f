"""What the ``tablebase`` commands share: the ``--variant`` and ``--db`` options, one-line
errors with an exit status (never a traceback for user error), FENs read from arguments or
stdin, a database opened for probing, ``--material`` names, and logging."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NoReturn

import click

from tablebase.material.slices import Slice, parse_material
from tablebase.probe.database import Tablebase
from tablebase.rules.position import FenError, Position
from tablebase.rules.variants import VARIANTS
from tablebase.storage.slicefile import TableFileError

VARIANT_OPTION = click.option(
    "--variant",
    "-v",
    type=click.Choice(sorted(VARIANTS)),
    default="international",
    show_default=True,
    help="Rule set.",
)

DB_OPTION = click.option(
    "--db",
    "db",
    type=click.Path(file_okay=False),
    default=None,
    help="Database directory (default: data/<variant>).",
)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error and exit (2 = unusable input)."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def read_fens(fens: Iterable[str]) -> Iterator[str]:
    """The FEN arguments, with ``-`` expanded to one FEN per non-empty stdin line."""
    for fen in fens:
        if fen == "-":
            for line in sys.stdin:
                if line.strip():
                    yield line.strip()
        else:
            yield fen


def parse_fen(fen: str, variant: str) -> Position:
    """The position of ``fen`` (a one-line error for a bad FEN)."""
    try:
        return Position.from_fen(fen, variant)
    except FenError as e:
        fail(str(e))


def db_dir(db: str | None, variant: str) -> Path:
    """The ``--db`` folder, by default ``data/<variant>``."""
    return Path(db) if db else Path("data") / variant


def open_db(db: str | None, variant: str, cache: str | None = None) -> Tablebase:
    """The database of ``--db`` opened for probing, its blocks cached within ``cache``
    (a one-line error for a missing folder, a damaged file or a bad size)."""
    path = db_dir(db, variant)
    if not path.is_dir():
        fail(f"database directory {path} does not exist (run `tablebase generate` first)")
    try:
        return Tablebase(path, variant, cache=cache)
    except TableFileError as e:
        fail(str(e))
    except ValueError as e:  # a bad --cache size
        fail(f"--cache: {e}")


def parse_materials(names: tuple[str, ...]) -> list[Slice]:
    """The slices named by ``--material`` (a one-line error for a bad name)."""
    out = []
    for name in names:
        try:
            out.append(parse_material(name))
        except ValueError as e:
            fail(f"--material: {e}")
    return out


def setup_logging(verbose: bool = False, handler: logging.Handler | None = None) -> None:
    """Log to stderr, through ``handler`` if given (the build's: above its progress bar)."""
    handler = handler or logging.StreamHandler(sys.stderr)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
        handlers=[handler],
    )
