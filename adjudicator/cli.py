"""The ``adjudicator`` command line: rule PDN games with the draw rules and the tables.

``adjudicator rule FILE.pdn...`` prints one ruling per game (a table, or JSON lines with
``--json``). Exit status: 0 when every game was ruled, 1 when some game had an error (illegal
or ambiguous move, malformed PDN, bad tag) or could not be ruled because a table file is
damaged (``table-error``), 2 on unusable input (missing file, a file without
any game, a database directory that cannot be opened). Errors are one line, never a traceback.
``adjudicator serve`` runs the service, ``adjudicator match`` referees engines, and
``adjudicator compile`` compiles the replay loop once, before the first game.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, TextIO

import click

from adjudicator.databases import open_tables
from adjudicator.drawrules import RuleOptions
from adjudicator.pdn import PdnError, PdnGame, read_games, write_game
from adjudicator.ruling import UNKNOWN, Ruling, rule_games
from adjudicator.warmup import warm_up
from tablebase.probe.cache import BlockCache, cache_bytes
from tablebase.rules.variants import VARIANTS

OK, GAME_ERROR, UNUSABLE = 0, 1, 2

CACHE_HELP = (
    "Memory for table blocks, e.g. 256M, 1G (default: a quarter of the machine's memory); "
    "the least recently used blocks are dropped beyond it."
)


class Unusable(Exception):
    """Input the command cannot work with at all (exit status 2)."""


@click.group()
@click.version_option(package_name="draughts-tablebase")
def main() -> None:
    """Draw-rule adjudication of draughts games (PDN replay, draw rules, tablebase rulings)."""


@main.command("rule")
@click.argument("files", nargs=-1, required=True, metavar="FILE.pdn...")
@click.option(
    "--db",
    metavar="DIR",
    help="Tables to rule unfinished games with: a directory with one subdirectory per "
    "variant (data/international, data/english), or one variant's directory (as for serve).",
)
@click.option("--variant", type=click.Choice(sorted(VARIANTS)), help="Override GameType.")
@click.option("--cache", metavar="SIZE", default=None, help=CACHE_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per game and line.")
@click.option(
    "--disputed",
    type=click.Choice(["restart", "cumulative"]),
    default="restart",
    show_default=True,
    help="A capture turning a 16-move ending into a 5-move one: fresh count or not.",
)
@click.option(
    "--english-rule",
    type=click.Choice(["standard", "casual"]),
    default="standard",
    show_default=True,
    help="English count: 40-move rule, or 50 moves without a capture.",
)
@click.option(
    "--english-count",
    type=click.IntRange(min=1),
    default=None,
    help="English count in moves each [default: 40 standard, 50 casual].",
)
@click.option(
    "--elapsed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Plies already elapsed on the count running at each game's start position.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Every forgiveness (wrong separator, short capture resolved by the moves that "
    "follow, missing result token, Latin-1 text) is an error, not a warning.",
)
@click.option(
    "--search-nodes",
    type=click.IntRange(min=0),
    default=RuleOptions.search_nodes,
    show_default=True,
    help="Node budget of the table search per ruled game (as the service's "
    "ADJUDICATOR_SEARCH_NODES); past it the ruling is unknown (search-limit).",
)
@click.option(
    "--write-pdn",
    metavar="OUT",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the games back with the ruled result filled in.",
)
def rule(
    files: tuple[str, ...],
    db: str | None,
    variant: str | None,
    cache: str | None,
    as_json: bool,
    disputed: str,
    english_rule: str,
    english_count: int | None,
    elapsed: int,
    strict: bool,
    search_nodes: int,
    write_pdn: str | None,
) -> None:
    """Rule every game of the PDN files (`-` reads standard input).

    Each JSON object has `variant` (the one used; without a GameType tag or --variant, the
    first whose rules replay the game) and `warnings` (each forgiveness, empty when clean);
    with several files also `file` (game numbers count per file).
    """
    options = RuleOptions(
        disputed=disputed,  # type: ignore[arg-type]
        english_preset=english_rule,  # type: ignore[arg-type]
        english_count=english_count,
        elapsed=elapsed,
        search_nodes=search_nodes,
        strict=strict,
    )
    try:
        status = _rule_files(files, db, variant, as_json, options, write_pdn, cache)
    except BrokenPipeError:  # output piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = OK
    except (Unusable, OSError, PdnError, ValueError) as error:
        click.echo(f"error: {error}", err=True)
        status = UNUSABLE
    sys.exit(status)


def _rule_files(
    files: tuple[str, ...],
    db: str | None,
    variant: str | None,
    as_json: bool,
    options: RuleOptions,
    write_pdn: str | None,
    cache: str | None = None,
) -> int:
    for name in files:
        if name != "-" and not os.path.isfile(name):
            raise Unusable(f"{name}: no such file")
    status = OK
    table = _Table(as_json, len(files) > 1)
    with _database(db, cache) as tb, _output(write_pdn) as out:
        for name in files:
            count = 0
            for game, ruling in rule_games(
                _games(name, options.strict), variant=variant, tablebase=tb, options=options
            ):
                count += 1
                if len(files) > 1:
                    ruling = replace(ruling, file=name)
                table.row(name, ruling)
                if ruling.is_error or ruling.reason == "table-error":  # text or tables
                    status = max(status, GAME_ERROR)
                if out is not None:
                    _write(out, game, ruling, name)
            if count == 0:
                click.echo(f"error: {name}: no games found", err=True)
                status = UNUSABLE
    table.close()
    return status


def _games(name: str, strict: bool) -> Iterator:
    if name == "-":
        stdin = getattr(sys.stdin, "buffer", sys.stdin)  # bytes: Latin-1 files read too
        return read_games(stdin, name="<stdin>", errors="collect", strict=strict)
    return read_games(name, errors="collect", strict=strict)


@contextlib.contextmanager
def _database(db: str | None, cache: str | None = None) -> Iterator[Any]:
    """``{variant: tablebase}`` for ``--db`` (as ``serve`` reads it), or None; the tables
    share one block cache of ``cache`` bytes (``--cache``)."""
    if db is None:
        yield None
        return
    if not os.path.isdir(db):
        raise Unusable(f"{db}: database directory does not exist")
    try:
        blocks = BlockCache(cache) if cache is not None else None
    except ValueError as error:
        raise Unusable(f"--cache: {error}") from None
    try:
        tables = open_tables(db, blocks)
        opened = tables.__enter__()
    except Exception as error:  # noqa: BLE001 - any failure to open is unusable input
        raise Unusable(f"{db}: cannot open the database: {error}") from None
    try:
        yield opened
    finally:
        tables.__exit__(None, None, None)


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[TextIO | None]:
    if path is None:
        yield None
        return
    with open(path, "w", encoding="utf-8") as out:
        yield out


def _write(out: TextIO, game: PdnGame, ruling: Ruling, name: str) -> None:
    if ruling.reason == "pdn-error":
        click.echo(f"warning: {name}: game {ruling.game} not written (malformed PDN)", err=True)
        return
    if out.tell():
        out.write("\n")
    result = ruling.result if ruling.result != UNKNOWN else None
    out.write(write_game(game, result))


class _Table:
    """Readable rows, or JSON lines."""

    COLUMNS = ("game", "white", "black", "recorded", "ruled", "reason", "ply", "agrees")

    def __init__(self, as_json: bool, several: bool) -> None:
        self.as_json = as_json
        self.several = several
        self.file: str | None = None
        self.counts = {"games": 0, "errors": 0, "agree": 0, "unknown": 0}

    def row(self, name: str, r: Ruling) -> None:
        self.counts["games"] += 1
        self.counts["errors"] += r.is_error
        self.counts["agree"] += r.agrees
        self.counts["unknown"] += r.result == UNKNOWN
        if self.as_json:
            click.echo(json.dumps(r.to_dict(), ensure_ascii=False))
            return
        if name != self.file:
            if self.several:
                click.echo(f"== {name}")
            click.echo(
                f"{'game':>4}  {'white':<18} {'black':<18} {'recorded':<8} {'ruled':<8} "
                f"{'reason':<14} {'ply':>4}  agrees  detail"
            )
            self.file = name
        click.echo(
            f"{r.game:>4}  {_cut(r.white, 18):<18} {_cut(r.black, 18):<18} "
            f"{r.recorded_result or '-':<8} {r.result:<8} {r.reason:<14} {r.ply:>4}  "
            f"{'yes' if r.agrees else 'no':<6}  {r.detail}"
        )
        for warning in r.warnings:
            click.echo(f"{'':>6}warning: {warning}")

    def close(self) -> None:
        if self.as_json or not self.counts["games"]:
            return
        c = self.counts
        click.echo(
            f"{c['games']} games: {c['agree']} agree with the recorded result, "
            f"{c['unknown']} unknown, {c['errors']} with errors"
        )


def _cut(text: str | None, width: int) -> str:
    text = text or "-"
    return text if len(text) <= width else text[: width - 1] + "…"


@main.command("compile")
@click.option(
    "--variant",
    "variants",
    multiple=True,
    type=click.Choice(sorted(VARIANTS)),
    help="A variant whose games to replay (repeatable) [default: all].",
)
def compile_cmd(variants: tuple[str, ...]) -> None:
    """Compile and cache the replay loop and the draw rules before the first game (make
    does at install; ``tablebase compile`` compiles the probes). Once per version of the
    sources: later runs take a second."""
    seconds = warm_up(list(variants or sorted(VARIANTS)))
    click.echo(f"replay and draw rules compiled in {seconds:.0f} s")


@main.command("serve")
@click.option(
    "--db",
    metavar="DIR",
    help="Databases: a directory with one subdirectory per variant (data/international, "
    "data/english), or one variant's directory [default: data, if it exists].",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
@click.option(
    "--cache",
    metavar="SIZE",
    default=None,
    help=CACHE_HELP + " Overrides ADJUDICATOR_CACHE_BYTES. With several workers, each takes "
    "its share.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=None,
    help="Worker processes answering requests, each with its share of --cache "
    "[default: one per core; overrides ADJUDICATOR_WORKERS].",
)
def serve(
    db: str | None,
    host: str,
    port: int,
    log_level: str,
    cache: str | None,
    workers: int | None,
) -> None:
    """Serve the HTTP API (/adjudicate, /probe, /health, /docs) and the endgame explorer (/)."""
    # Imported here: the service (FastAPI, pydantic, uvicorn) would double the start-up of
    # every other command (import adjudicator.service.server after adjudicator.cli: 2.2 s
    # more on top of 2.9 s, measured on the loaded 2-core machine).
    from adjudicator.service.server import serve as run_service
    from adjudicator.service.settings import ServiceSettings

    if db is None and os.path.isdir("data"):
        db = "data"
    try:
        settings = ServiceSettings.from_env()
        if cache is not None:
            try:
                settings = replace(settings, cache_bytes=cache_bytes(cache))
            except ValueError as error:
                raise ValueError(f"--cache: {error}") from None
        if workers is not None:
            settings = replace(settings, workers=workers)
        run_service(db, host=host, port=port, log_level=log_level, settings=settings)
    except ValueError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(UNUSABLE)


@main.command("match")
@click.option(
    "--engine",
    "engines",
    multiple=True,
    metavar="SPEC",
    help="An engine (twice for a match, more for a tournament): dxp:HOST:PORT[,PORT..], "
    "dxp-listen:PORT, hub:COMMAND LINE, or 'name=N cmd=PROG arg=A dir=DIR proto=hub|dxp "
    "option.NAME=VALUE' (see docs/MATCH.md).",
)
@click.option("--variant", type=click.Choice(["international", "frisian"]),
              default="international", show_default=True, help="The game played.")  # fmt: skip
@click.option("--games", type=click.IntRange(min=1), default=None, help="Games per pair of "
              "engines [default: two per opening].")  # fmt: skip
@click.option("--openings", metavar="FILE", help="FENs one a line, or PDN games played first.")
@click.option("--openings-order", type=click.Choice(["sequential", "random"]),
              default="sequential", show_default=True, help="The openings' order.")  # fmt: skip
@click.option("--seed", type=int, default=None, help="Seed of --openings-order random.")
@click.option("--db", metavar="DIR", help="Tables for adjudication and for checking claims.")
@click.option(
    "--adjudicate",
    type=click.Choice(["tables", "rules", "off"]),
    default=None,
    help="End games by the tables' count-aware value and the draw rules (tables), by the draw "
    "rules only (rules), or by neither (off) [default: tables with --db, else rules].",
)
@click.option(
    "--false-claims",
    type=click.Choice(["forfeit", "ignore"]),
    default="forfeit",
    show_default=True,
    help="A claim the rules and tables do not uphold loses, or ends the game with their value.",
)
@click.option("--time", "minutes", type=float, default=5.0, show_default=True,
              help="Minutes per engine for --moves moves (0 moves: the whole game).")  # fmt: skip
@click.option("--moves", type=click.IntRange(min=0), default=0, show_default=True,
              help="Moves per time period; the time is given again after each period.")  # fmt: skip
@click.option("--inc", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Seconds added after each move (Hub engines only).")  # fmt: skip
@click.option("--move-time", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per move instead of a game clock (Hub engines only).")  # fmt: skip
@click.option("--depth", type=click.IntRange(min=1), default=None,
              help="Search depth per move (Hub engines only: level depth=).")  # fmt: skip
@click.option("--grace", type=click.FloatRange(min=0), default=0.5, show_default=True,
              help="Seconds of transport allowance before a loss on time.")  # fmt: skip
@click.option("--max-plies", type=click.IntRange(min=1), default=1000, show_default=True,
              help="A game still running after this many plies is unfinished (*).")  # fmt: skip
@click.option("--search-nodes", type=click.IntRange(min=0), default=RuleOptions.search_nodes,
              show_default=True, help="Node budget of the count-aware table search.")  # fmt: skip
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Games played at once.")  # fmt: skip
@click.option("--tournament", type=click.Choice(["roundrobin", "gauntlet"]), default=None,
              help="3+ engines: every pair, or the first against each other.")  # fmt: skip
@click.option("--sprt", metavar="'elo0=E0 elo1=E1 alpha=A beta=B'", default=None,
              help="Stop when the pentanomial GSPRT accepts a hypothesis.")  # fmt: skip
@click.option("--draw", metavar="'movenumber=N movecount=M score=S'", default=None,
              help="Draw when both engines' scores stay within S hundredths of a man.")  # fmt: skip
@click.option("--resign", metavar="'movecount=M score=S [twosided=true]'", default=None,
              help="Loss for an engine whose scores stay at or below -S hundredths.")  # fmt: skip
@click.option("--resume", metavar="FILE", type=click.Path(dir_okay=False), default=None,
              help="State file: saved after every game; continued if it exists.")  # fmt: skip
@click.option("--pdn", "pdn_out", metavar="OUT", type=click.Path(dir_okay=False),
              help="Write every game to this PDN file.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON object per game on stdout.")
@click.pass_context
def match(ctx: click.Context, **options: object) -> None:
    """Play a refereed match or tournament of engines (see docs/MATCH.md)."""
    # Imported here: the referee's modules add about 10 % to the other commands' start-up
    # (0.23-0.32 s after adjudicator.cli's 2.9 s, measured on the loaded 2-core machine).
    from adjudicator.match.cli import run

    given = {
        name
        for name in options
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
    }
    sys.exit(run(options, given))


if __name__ == "__main__":  # pragma: no cover
    main()
