"""The ``tablebase`` commands of Scan's bitbase format: the export, the comparison, a probe.

``tablebase export --format scan SRC DST`` (the ``export`` command's option calls
:func:`export_to_scan`), ``tablebase compare-scan DB SCANDIR`` and ``tablebase probe-scan
SCANDIR FEN``; the format itself lives in :mod:`tablebase.scanbb` (``docs/SCAN.md``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from tablebase.rules.position import FenError, Position
from tablebase.rules.variants import VARIANTS, get_variant
from tablebase.scanbb.export import compare_scan, export_scan
from tablebase.scanbb.files import ScanBitbases, ScanFileError, locate_root
from tablebase.storage.listing import database_variant
from tablebase.storage.slicefile import TableFileError

EXIT_USAGE = 2  # unusable input, as the other commands
EXIT_DIFFERENT = 1  # the comparison found a difference or a bad file


def _fail(message: str, code: int = EXIT_USAGE) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def export_to_scan(src: str, dst: str, form_options: bool = False, resume: bool = False) -> None:
    """Write the database SRC as Scan bitbase files under DST (Scan's ``data`` folder);
    ``form_options``: options of our own format were given too (a usage error); ``resume``:
    keep the whole files of an interrupted export (:func:`export_scan`)."""
    if form_options:
        raise click.UsageError(
            "--format scan takes none of --wdl-only, --resolve-captures, --store-captures, "
            "--store-captures-up-to"
        )

    def done(sid: Any, n: int) -> None:
        click.echo(f"{sid.name} ({sid.pieces} pieces): {n:,} bytes", err=True)

    def kept(sid: Any, n: int) -> None:
        click.echo(f"{sid.name} ({sid.pieces} pieces): {n:,} bytes, kept", err=True)

    try:
        r = export_scan(src, dst, on_file=done, resume=resume, on_kept=kept)
    except (ValueError, TableFileError, ScanFileError) as e:
        _fail(str(e))
        return
    except OSError as e:
        _fail(f"cannot write {dst}: {e}", 1)
        return
    size = f"bb-size {r.bb_size}" if r.bb_size else "no bb-size (a piece count lacks slices)"
    earlier = f" ({r.kept} kept from the interrupted export)" if resume else ""
    click.echo(
        f"{r.files} Scan bitbase files to {dst}{earlier}: {r.entries:,} entries, "
        f"{r.bytes:,} bytes ({8 * r.bytes / max(1, r.entries):.3f} bits/entry) in "
        f"{r.seconds:.1f} s; Scan loads them with {size}"
    )


@click.command("compare-scan")
@click.option("--pieces", "-n", type=click.IntRange(2, 7), default=None,
              help="Only the slices of up to N pieces.")  # fmt: skip
@click.argument("db", type=click.Path(file_okay=False))
@click.argument("scandir", type=click.Path(file_okay=False))
def compare_scan_cmd(pieces: int | None, db: str, scandir: str) -> None:
    """Compare the Scan bitbases in SCANDIR (Scan's folder, its data folder or the bb folder)
    with the database DB on every position Scan reads (no capture for the side to move).
    Exit 0 when all agree, 1 when a value differs or a file is missing or damaged."""

    def line(f: Any) -> None:
        if f.error:
            click.echo(f"{f.sid.name}: {f.error}")
        elif f.differing:
            click.echo(
                f"{f.sid.name}: {f.differing:,} of {f.covered:,} positions differ "
                f"(first: entry {f.first_entry}, {f.first_fen})"
            )
        else:
            click.echo(f"{f.sid.name}: {f.covered:,} positions agree")

    try:
        if not Path(db).is_dir():
            raise ValueError(f"database directory {db} does not exist")
        variant = database_variant(Path(db))
        root = locate_root(scandir, variant)
        r = compare_scan(db, root, on_file=line, pieces=pieces)
    except (ValueError, TableFileError, ScanFileError) as e:
        _fail(str(e))
        return
    bad = len(r.errors)
    click.echo(
        f"{len(r.files)} files, {r.covered:,} positions compared: {r.differing:,} differ"
        + (f", {bad} files missing or damaged" if bad else "")
    )
    if r.differing or bad:
        sys.exit(EXIT_DIFFERENT)


@click.command("probe-scan")
@click.option("--variant", "-v", type=click.Choice(sorted(VARIANTS)), default="international",
              show_default=True, help="Rule set.")  # fmt: skip
@click.argument("scandir", type=click.Path(file_okay=False))
@click.argument("fens", nargs=-1, required=True)
def probe_scan_cmd(variant: str, scandir: str, fens: tuple[str, ...]) -> None:
    """Print the value Scan's bitbases in SCANDIR give each FEN (``-``: FENs from stdin):
    win, draw or loss for the side to move, captures played out as Scan does."""
    v = get_variant(variant)
    try:
        bases = ScanBitbases(scandir, v)
    except (ValueError, ScanFileError) as e:
        _fail(str(e))
        return
    names = {1: "win", 0: "draw", -1: "loss"}
    for fen in _read_fens(fens):
        try:
            result = bases.probe(Position.from_fen(fen, v))
        except FenError as e:
            _fail(str(e))
            return
        except (ValueError, ScanFileError) as e:
            _fail(f"{fen}: {e}")
            return
        click.echo(f"{fen}: {names[result]}")


def _read_fens(fens: tuple[str, ...]) -> Iterator[str]:
    for fen in fens:
        if fen == "-":
            yield from (line.strip() for line in sys.stdin if line.strip())
        else:
            yield fen


COMMANDS = (compare_scan_cmd, probe_scan_cmd)
