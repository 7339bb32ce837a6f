"""What ``adjudicator match`` does with its options: check them and the engines, open the
tables, run the match or tournament (resumed from ``--resume FILE`` when that file exists),
print the games (a progress line each on stderr, or JSON lines on stdout), the SPRT's
reports, and the score or the crosstable. Exit status 0 when the match was played (faults are
results, not errors), 2 on unusable input (a bad engine spec or option, openings file,
database, time control or state file), each with a one-line message, 130 when interrupted
(the state file then holds every finished game).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from adjudicator.databases import open_tables
from adjudicator.drawrules import RuleOptions
from adjudicator.match import openings as opening_files
from adjudicator.match.adjudication import parse_draw, parse_resign
from adjudicator.match.clock import TimeControl
from adjudicator.match.concurrency import port_notes
from adjudicator.match.enginecheck import check_engines
from adjudicator.match.enginespec import SpecError, parse_spec
from adjudicator.match.output import json_object
from adjudicator.match.referee import GameRecord, Referee
from adjudicator.match.runner import Match, Outcome, play_match
from adjudicator.match.schedule import opening_order
from adjudicator.match.sprt import parse_sprt
from adjudicator.match.state import MatchState, StateError
from adjudicator.match.state import load as load_state
from tablebase.rules.variants import VARIANTS, Variant

if TYPE_CHECKING:
    from tablebase.probe.database import Tablebase

OK, UNUSABLE, INTERRUPTED = 0, 2, 130
# options a resumed match may change: how many games at once
RESUMABLE = {"resume", "concurrency"}


class Unusable(Exception):
    """Input the match cannot start with."""


def run(options: dict[str, Any], given: set[str]) -> int:
    """Run the command; ``given`` names the options on the command line. Returns the exit
    status."""
    try:
        state = _state(options, given)
        options = state.options
        with contextlib.ExitStack() as stack:
            match = _prepare(options, stack)
            if not state.order:
                state.order = list(match.order or range(len(match.openings)))
            _check_output(options["pdn_out"])
            for line in port_notes(match.specs, match.concurrency):
                click.echo(line, err=True)
            if state.games:
                click.echo(f"resuming: {len(state.games)} games done", err=True)
            outcome = play_match(
                match,
                options["pdn_out"],
                state,
                on_game=_progress(match, options["as_json"]),
                on_note=lambda line: click.echo(line, err=True),
            )
    except (Unusable, SpecError, opening_files.OpeningError, StateError, ValueError) as error:
        click.echo(f"error: {error}", err=True)
        return UNUSABLE
    except OSError as error:
        click.echo(f"error: {error}", err=True)
        return UNUSABLE
    except KeyboardInterrupt:
        where = options.get("resume")
        again = f"; continue with --resume {where}" if where else ""
        click.echo(f"interrupted{again}", err=True)
        return INTERRUPTED
    click.echo(_summary(match, outcome), err=bool(options["as_json"]))
    return OK


def _state(options: dict[str, Any], given: set[str]) -> MatchState:
    """A new state (saved under ``--resume FILE`` if given) or the one that file holds."""
    path = options.get("resume")
    if path is not None and os.path.exists(path):
        state = load_state(path)
        extra = sorted(given - RESUMABLE)
        if extra:
            shown = ", ".join("--" + name.replace("_", "-") for name in extra)
            raise Unusable(
                f"{path} holds the match's options: give --resume {path} alone (and "
                f"--concurrency), not {shown}"
            )
        if "concurrency" in given:
            state.options["concurrency"] = options["concurrency"]
        state.options["resume"] = path
        return state
    if path is not None:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise Unusable(f"--resume {path}: the folder {folder} does not exist")
    saved = dict(options)
    saved["engines"] = list(options["engines"])
    if saved.get("openings_order") == "random" and saved.get("seed") is None:
        saved["seed"] = random.randrange(2**31)  # saved, so a resumed match keeps the order
    return MatchState(path, saved)


def _prepare(o: dict[str, Any], stack: contextlib.ExitStack) -> Match:
    engines = tuple(o["engines"])
    tournament = o.get("tournament") or "match"
    if tournament == "match" and len(engines) != 2:
        raise Unusable(
            f"a match needs exactly two --engine options, not {len(engines)} (give "
            "--tournament roundrobin or gauntlet for more)"
        )
    if tournament != "match" and len(engines) < 3:
        raise Unusable(f"--tournament {tournament} needs at least three --engine options")
    specs = tuple(parse_spec(e) for e in engines)
    try:
        control = TimeControl(
            o["minutes"], o["moves"], o["inc"], o["move_time"], o["grace"], o.get("depth")
        )
    except ValueError as error:
        raise Unusable(str(error)) from None
    if any(s.kind != "hub" for s in specs):
        try:
            control.dxp_fields()
        except ValueError as error:
            raise Unusable(str(error)) from None
    sprt = None
    if o.get("sprt"):
        if tournament != "match":
            raise Unusable("--sprt tests one engine against another: not with --tournament")
        sprt = parse_sprt(o["sprt"])
    draw = parse_draw(o["draw"]) if o.get("draw") else None
    resign = parse_resign(o["resign"]) if o.get("resign") else None
    rules = RuleOptions(search_nodes=o["search_nodes"])
    variant = VARIANTS[o.get("variant") or "international"]
    if o["openings"] is not None:
        starts = opening_files.load(o["openings"], variant, rules)
    else:
        starts = [opening_files.initial(variant)]
    tables = _tables(o["db"], variant, stack)
    adjudicate = o["adjudicate"] or ("tables" if tables is not None else "rules")
    if adjudicate == "tables" and tables is None:
        raise Unusable("--adjudicate tables needs a database (--db)")
    referee = Referee(
        control, rules, tables, adjudicate, o["false_claims"], o["max_plies"], draw, resign
    )
    specs, names = check_engines(specs, variant)
    seed = o.get("seed") if o.get("openings_order") == "random" else None
    return Match(
        specs,
        o["games"] or 2 * len(starts),
        starts,
        referee,
        variant,
        tournament=tournament,
        concurrency=o.get("concurrency") or 1,
        sprt=sprt,
        order=opening_order(len(starts), seed),
        names=names,
    )


def _tables(db: str | None, variant: Variant, stack: contextlib.ExitStack) -> Tablebase | None:
    if db is None:
        return None
    if not os.path.isdir(db):
        raise Unusable(f"{db}: database directory does not exist")
    try:
        opened = stack.enter_context(open_tables(db))
    except Exception as error:  # noqa: BLE001 - any failure to open is unusable input
        raise Unusable(f"{db}: cannot open the database: {error}") from None
    tables = opened.get(variant.name)
    if tables is None:
        raise Unusable(f"{db}: no {variant.name} tables")
    return tables


def _progress(match: Match, as_json: bool) -> Callable[[GameRecord, Outcome], None]:
    n = len(match.specs)
    pairs = n * (n - 1) // 2 if match.tournament == "roundrobin" else n - 1
    total = pairs * match.games

    def progress(record: GameRecord, outcome: Outcome) -> None:
        variant = match.variant
        if as_json:
            click.echo(json.dumps(json_object(record, variant), ensure_ascii=False))
        score = outcome.score()
        a, b = score.names
        running = f"{a} {score.points:g} - {score.games - score.points:g} {b}"
        if match.tournament != "match":
            running = f"{_games(outcome)} games done"
        click.echo(
            f"[{record.game}/{total}] {record.white} - {record.black} "
            f"{record.result(variant)} ({record.reason}, {record.plies} plies, "
            f"{record.wall:.1f} s, referee CPU {record.cpu:.2f} s) | {running}",
            err=True,
        )

    return progress


def _games(outcome: Outcome) -> int:
    return sum(len(v) for v in outcome.table.scores.values()) // 2


def _summary(match: Match, outcome: Outcome) -> str:
    if match.tournament != "match":
        return outcome.table.text()
    lines = [outcome.score().summary(), outcome.pair_summary()]
    if match.sprt is not None and outcome.sprt_line is not None:
        lines.append(outcome.sprt_line)
        if outcome.decision is None:
            lines.append("SPRT: no decision within the games played")
    return "\n".join(lines)


def _check_output(path: str | None) -> None:
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise Unusable(f"{path}: the folder {folder} does not exist")
    if os.path.isdir(path):
        raise Unusable(f"{path} is a directory")
