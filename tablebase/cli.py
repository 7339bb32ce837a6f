"""The ``tablebase`` command line: perft, move listing, generation, probing, verification."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import click

from tablebase.rules import legal_moves, perft
from tablebase.rules.notation import move_text
from tablebase.rules.position import FenError, Position
from tablebase.rules.variants import VARIANTS, get_variant

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


DB_OPTION = click.option(
    "--db",
    "db",
    type=click.Path(file_okay=False),
    default=None,
    help="Database directory (default: data/<variant>).",
)


def db_dir(db: str | None, variant: str) -> Path:
    return Path(db) if db else Path("data") / variant


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )


@main.command("generate")
@VARIANT_OPTION
@click.option("--pieces", "-n", type=click.IntRange(2, 7), required=True, help="Up to N pieces.")
@DB_OPTION
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 1024),
    default=None,
    help="Worker processes (default: all cores).",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 1024),
    default=None,
    help="Compiled threads per worker (default: cores / jobs).",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Run on Dask: tcp://HOST:PORT of a running scheduler, or local-cluster:N to start "
    "N local workers (default: local processes). See docs/CLUSTER.md.",
)
def generate_cmd(
    variant: str,
    pieces: int,
    db: str | None,
    jobs: int | None,
    threads: int | None,
    scheduler: str | None,
) -> None:
    """Generate every slice up to PIECES pieces (resumes: complete slices are kept)."""
    from tablebase.progress import make_progress
    from tablebase.schedule import LocalScheduler, build_graph
    from tablebase.storage import remove_stale_temporaries

    setup_logging()
    v = get_variant(variant)
    path = db_dir(db, variant)
    path.mkdir(parents=True, exist_ok=True)
    for tmp in remove_stale_temporaries(path):
        logging.getLogger("tablebase").warning("removed %s, left by an interrupted build", tmp)
    tasks = build_graph(v, pieces)
    if scheduler:
        from tablebase.cluster import DaskScheduler

        try:
            dask_sched = DaskScheduler(scheduler, threads)
        except (ImportError, ValueError) as e:
            fail(str(e))
        if jobs:
            logging.getLogger("tablebase").warning("--jobs is ignored with --scheduler")
        logging.getLogger("tablebase").info(
            "generating %s up to %d pieces into %s: %d slice pairs on Dask %s",
            v.name,
            pieces,
            path,
            len(tasks),
            scheduler,
        )
        dask_sched.run(v, tasks, str(path), make_progress())
        return
    sched = LocalScheduler(jobs, threads)
    logging.getLogger("tablebase").info(
        "generating %s up to %d pieces into %s: %d slice pairs, %d jobs x %d threads",
        v.name,
        pieces,
        path,
        len(tasks),
        sched.jobs,
        sched.threads,
    )
    sched.run(v, tasks, str(path), make_progress())


def open_db(db: str | None, variant: str):
    from tablebase.probe import Tablebase

    path = db_dir(db, variant)
    if not path.is_dir():
        fail(f"database directory {path} does not exist (run `tablebase generate` first)")
    return Tablebase(path, variant)


@main.command("probe")
@VARIANT_OPTION
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON object per input.")
@click.option("--moves", "with_moves", is_flag=True, help="Also list every move's value.")
@click.argument("fens", nargs=-1, required=True)
def probe_cmd(
    variant: str, db: str | None, as_json: bool, with_moves: bool, fens: tuple[str, ...]
) -> None:
    """Look positions up: result and distance-to-win for the side to move."""
    from tablebase.probe import RESULTS, MissingSliceError
    from tablebase.storage import TableFileError

    with open_db(db, variant) as tb:
        for fen in read_fens(fens):
            pos = parse_fen(fen, variant)
            try:
                wdl, dtw = tb.probe(pos)
                moves = tb.best_moves(pos) if with_moves else []
            except (MissingSliceError, TableFileError, ValueError) as e:
                fail(str(e))
            obj: dict = {"fen": fen, "result": RESULTS[wdl], "dtw": dtw}
            if with_moves:
                obj["moves"] = [{"move": m.text, "result": m.result, "dtw": m.dtw} for m in moves]
            if as_json:
                click.echo(json.dumps(obj))
            else:
                dist = f" in {dtw} plies" if dtw is not None else ""
                click.echo(f"{pos.fen()}: {obj['result']}{dist}")
                for m in moves:
                    d = f" in {m.dtw}" if m.dtw is not None else ""
                    click.echo(f"  {m.text:>12} {m.result}{d}")


@main.command("verify")
@VARIANT_OPTION
@DB_OPTION
@click.option(
    "--sample",
    type=click.IntRange(1),
    default=None,
    help="Check this many random positions per slice instead of all.",
)
@click.option("--seed", type=int, default=0, show_default=True)
def verify_cmd(variant: str, db: str | None, sample: int | None, seed: int) -> None:
    """Re-derive stored values from their successors; exit 1 listing inconsistencies."""
    from tablebase.storage import TableFileError
    from tablebase.verify import verify_slice

    setup_logging()
    v = get_variant(variant)
    with open_db(db, variant) as tb:
        slices = tb.slices()
    if not slices:
        fail(f"no slice files in {db_dir(db, variant)}")
    bad_total = 0
    for s in slices:
        try:
            r = verify_slice(db_dir(db, variant), v, s, sample, seed, threads=os_threads())
        except TableFileError as e:
            click.echo(f"{s.name}: {e}")
            bad_total += 1
            continue
        status = "ok" if r.bad_count == 0 else f"{r.bad_count} INCONSISTENT"
        click.echo(f"{s.name}: {r.checked} checked, {status}")
        for fen in r.bad_fens:
            click.echo(f"  inconsistent: {fen}")
        bad_total += r.bad_count
    if bad_total:
        sys.exit(1)


def os_threads() -> int:
    import os

    return os.cpu_count() or 1


@main.command("stats")
@VARIANT_OPTION
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON object per slice.")
def stats_cmd(variant: str, db: str | None, as_json: bool) -> None:
    """Per slice: positions, wins, draws, losses, longest win and an example."""
    from tablebase.storage import TableFileError, read_attrs, slice_path

    with open_db(db, variant) as tb:
        slices = tb.slices()
        for s in slices:
            try:
                a = read_attrs(slice_path(tb.path, s))
            except TableFileError as e:
                fail(str(e), 1)
            row = {
                k: a[k]
                for k in (
                    "material",
                    "positions",
                    "wins",
                    "draws",
                    "losses",
                    "longest_win",
                    "longest_win_fen",
                )
            }
            if as_json:
                click.echo(json.dumps(row))
            else:
                click.echo(
                    f"{row['material']}: {row['positions']:>12,} positions "
                    f"{row['wins']:>12,} W {row['draws']:>12,} D {row['losses']:>12,} L  "
                    f"longest win {row['longest_win']:>3} {row['longest_win_fen']}"
                )


if __name__ == "__main__":
    main()
