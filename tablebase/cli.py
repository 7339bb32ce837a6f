"""The ``tablebase`` command line: perft, move listing, generation, probing, verification."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable

import click

from tablebase.notation import move_text
from tablebase.position import FenError, Position
from tablebase.rules import legal_moves, perft
from tablebase.variants import VARIANTS

VARIANT_OPTION = click.option(
    "--variant",
    "-v",
    type=click.Choice(sorted(VARIANTS)),
    default="international",
    show_default=True,
    help="Rule set.",
)


def fail(message: str, code: int = 2) -> None:
    """Print a one-line error and exit (2 = unusable input)."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def read_fens(fens: Iterable[str]) -> Iterable[str]:
    """The FEN arguments, with ``-`` expanded to one FEN per non-empty stdin line."""
    for fen in fens:
        if fen == "-":
            for line in sys.stdin:
                if line.strip():
                    yield line.strip()
        else:
            yield fen


def parse_fen(fen: str, variant: str) -> Position:
    try:
        return Position.from_fen(fen, variant)
    except FenError as e:
        fail(str(e))
        raise  # unreachable


@click.group()
@click.version_option(package_name="draughts-tablebase")
def main() -> None:
    """Draughts endgame tablebases: rules engine, generator and prober."""


@main.command("perft")
@VARIANT_OPTION
@click.option("--depth", "-d", type=click.IntRange(0, 20), required=True, help="Plies.")
@click.option("--fen", default=None, help="Start position (default: the initial position).")
def perft_cmd(variant: str, depth: int, fen: str | None) -> None:
    """Count the leaves of the legal-move tree; the last line is the count at DEPTH."""
    pos = parse_fen(fen, variant) if fen else Position.start(variant)
    n = 1
    for d in range(1, depth + 1):
        t0 = time.perf_counter()
        n = perft(pos, d)
        dt = time.perf_counter() - t0
        rate = f", {n / dt:,.0f} nodes/s" if dt > 0 else ""
        click.echo(f"depth {d}: {n}  ({dt:.3f} s{rate})")
    click.echo(str(n))


@main.command("moves")
@VARIANT_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON object per input line.")
@click.argument("fens", nargs=-1, required=True)
def moves_cmd(variant: str, as_json: bool, fens: tuple[str, ...]) -> None:
    """List the legal moves of each FEN (``-`` reads one FEN per stdin line)."""
    for fen in read_fens(fens):
        pos = parse_fen(fen, variant)
        moves = legal_moves(pos)
        if as_json:
            items = [
                {
                    "move": move_text(pos, m, moves),
                    "from": m.frm,
                    "to": m.to,
                    "captures": list(m.captures),
                    "path": list(m.path),
                }
                for m in moves
            ]
            click.echo(json.dumps({"fen": fen, "moves": items}))
        else:
            texts = [move_text(pos, m, moves) for m in moves]
            click.echo(f"{pos.fen()}: {len(moves)} moves: {' '.join(texts)}")
