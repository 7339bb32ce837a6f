"""What ``adjudicator match`` does with its options: check them, open the tables, run the
match, print the games (a progress line each on stderr, or JSON lines on stdout) and the
score. Exit status 0 when the match was played (faults are results, not errors), 2 on
unusable input (a bad engine spec, openings file, database or time control), each with a
one-line message.
"""

from __future__ import annotations

import contextlib
import json
import os

import click

from adjudicator.databases import open_tables
from adjudicator.drawrules import RuleOptions
from adjudicator.match import openings as opening_files
from adjudicator.match.clock import TimeControl
from adjudicator.match.engines import SpecError, parse_spec
from adjudicator.match.output import json_object
from adjudicator.match.referee import GameRecord, Referee
from adjudicator.match.results import Score
from adjudicator.match.schedule import Match, run_match
from tablebase.rules.variants import INTERNATIONAL

OK, UNUSABLE = 0, 2


class Unusable(Exception):
    """Input the match cannot start with."""


def run(
    engines: tuple[str, ...],
    games: int | None,
    openings: str | None,
    db: str | None,
    adjudicate: str | None,
    false_claims: str,
    minutes: float,
    moves: int,
    inc: float,
    move_time: float | None,
    grace: float,
    max_plies: int,
    search_nodes: int,
    pdn_out: str | None,
    as_json: bool,
) -> int:
    """Run the command; returns the exit status."""
    try:
        with contextlib.ExitStack() as stack:
            match = _prepare(
                engines, games, openings, db, adjudicate, false_claims, minutes, moves, inc,
                move_time, grace, max_plies, search_nodes, stack,
            )  # fmt: skip
            _check_output(pdn_out)
            total = match.games

            def progress(record: GameRecord, score: Score) -> None:
                variant = match.variant
                if as_json:
                    click.echo(json.dumps(json_object(record, variant), ensure_ascii=False))
                a, b = score.names
                click.echo(
                    f"[{record.game}/{total}] {record.white} - {record.black} "
                    f"{record.result(variant)} ({record.reason}, {record.plies} plies, "
                    f"{record.wall:.1f} s, referee CPU {record.cpu:.2f} s) | "
                    f"{a} {score.points:g} - {score.games - score.points:g} {b}",
                    err=True,
                )

            _, score = run_match(match, pdn_out, progress)
    except (Unusable, SpecError, opening_files.OpeningError, ValueError) as error:
        click.echo(f"error: {error}", err=True)
        return UNUSABLE
    except OSError as error:
        click.echo(f"error: {error}", err=True)
        return UNUSABLE
    click.echo(score.summary(), err=as_json)
    return OK


def _prepare(
    engines, games, openings, db, adjudicate, false_claims, minutes, moves, inc, move_time,
    grace, max_plies, search_nodes, stack,
) -> Match:  # fmt: skip
    if len(engines) != 2:
        raise Unusable(f"a match needs exactly two --engine options, not {len(engines)}")
    specs = (parse_spec(engines[0]), parse_spec(engines[1]))
    try:
        control = TimeControl(minutes, moves, inc, move_time, grace)
    except ValueError as error:
        raise Unusable(str(error)) from None
    if any(s.kind != "hub" for s in specs):
        try:
            control.dxp_fields()
        except ValueError as error:
            raise Unusable(str(error)) from None
    options = RuleOptions(search_nodes=search_nodes)
    variant = INTERNATIONAL
    if openings is not None:
        starts = opening_files.load(openings, variant, options)
    else:
        starts = [opening_files.initial(variant)]
    tables = None
    if db is not None:
        if not os.path.isdir(db):
            raise Unusable(f"{db}: database directory does not exist")
        try:
            opened = stack.enter_context(open_tables(db))
        except Exception as error:  # noqa: BLE001 - any failure to open is unusable input
            raise Unusable(f"{db}: cannot open the database: {error}") from None
        tables = opened.get(variant.name)
        if tables is None:
            raise Unusable(f"{db}: no {variant.name} tables")
    if adjudicate is None:
        adjudicate = "tables" if tables is not None else "rules"
    if adjudicate == "tables" and tables is None:
        raise Unusable("--adjudicate tables needs a database (--db)")
    referee = Referee(control, options, tables, adjudicate, false_claims, max_plies)
    return Match(specs, games or 2 * len(starts), starts, referee, variant)


def _check_output(path: str | None) -> None:
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise Unusable(f"{path}: the folder {folder} does not exist")
    if os.path.isdir(path):
        raise Unusable(f"{path} is a directory")
