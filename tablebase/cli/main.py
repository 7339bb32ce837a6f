"""The ``tablebase`` commands: perft, moves, generate, probe, verify, stats, export, hub.

Each command reads its options, calls the package that does the work (the build's
orchestration is :mod:`tablebase.build.generate`, the count-aware probe
:mod:`tablebase.probe.undercount`) and prints the answer; what the commands share (options,
one-line errors, opening a database) is :mod:`.common`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from tablebase.build import warmup
from tablebase.build.faults import BuildError, describe
from tablebase.build.folderlock import FolderInUseError, lock_folder
from tablebase.build.generate import SchedulerError, generate
from tablebase.build.progress import TqdmLogHandler, on_terminal
from tablebase.build.schedule import default_memory, parse_size
from tablebase.build.verify import SliceCheck, verify_database
from tablebase.cli.common import (
    DB_OPTION,
    VARIANT_OPTION,
    db_dir,
    fail,
    open_db,
    parse_fen,
    parse_materials,
    read_fens,
    setup_logging,
)
from tablebase.cli.plot import plot_stats
from tablebase.cli.scan import COMMANDS as SCAN_COMMANDS
from tablebase.cli.scan import export_to_scan
from tablebase.material.slices import build_key
from tablebase.probe.database import MissingSliceError
from tablebase.probe.hub import serve as serve_hub
from tablebase.probe.undercount import probe_under_count
from tablebase.rules import legal_moves, perft
from tablebase.rules.notation import move_text
from tablebase.rules.outcome import RESULT_NAMES
from tablebase.rules.position import Position
from tablebase.rules.variants import VARIANTS, get_variant
from tablebase.storage.export import captures_stored_up_to, export_database, part_bytes
from tablebase.storage.listing import slice_files
from tablebase.storage.reader import check_header, read_slice
from tablebase.storage.slicefile import TableFileError, slice_path
from tablebase.storage.values import dtw_histogram


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
@click.option(
    "--notation",
    type=click.Choice(["numeric", "alphanumeric"]),
    default=None,
    help="Squares as PDN numbers or names like c3 (default: the variant's own).",
)
@click.argument("fens", nargs=-1, required=True)
def moves_cmd(variant: str, as_json: bool, notation: str | None, fens: tuple[str, ...]) -> None:
    """List the legal moves of each FEN (``-`` reads one FEN per stdin line)."""
    for fen in read_fens(fens):
        pos = parse_fen(fen, variant)
        moves = legal_moves(pos)
        if as_json:
            items = [
                {
                    "move": move_text(pos, m, moves, notation),
                    "from": m.frm,
                    "to": m.to,
                    "captures": list(m.captures),
                    "path": list(m.path),
                    "crowns": m.crowns,
                }
                for m in moves
            ]
            click.echo(json.dumps({"fen": fen, "moves": items}))
        else:
            texts = [move_text(pos, m, moves, notation) for m in moves]
            shown = pos.fen("alphanumeric" if notation == "alphanumeric" else "numeric")
            click.echo(f"{shown}: {len(moves)} moves: {' '.join(texts)}")


@main.command("generate")
@VARIANT_OPTION
@click.option("--pieces", "-n", type=click.IntRange(2, 7), default=None, help="Up to N pieces.")
@click.option(
    "--material",
    "-m",
    "materials",
    multiple=True,
    metavar="WMWKBMBK",
    help="Build this slice (e.g. 0402: 4 white kings against 2 black kings), its colour "
    "mirror and every slice it depends on that the database lacks; repeatable.",
)
@DB_OPTION
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 1024),
    default=None,
    help="Worker processes: pair tasks run at once (default: all cores, at most one per "
    "pair to build).",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 1024),
    default=None,
    help="Compiled (numba) threads per pair task (default: cores / jobs); the build's "
    "jobs x threads are shared among the tasks running, so a task alone gets them all.",
)
@click.option(
    "--memory",
    default=None,
    metavar="SIZE",
    help="Memory the tasks running at once may use together, e.g. 20G, 512M, 20GiB "
    "(default: 85% of the memory available at the start).",
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
    pieces: int | None,
    materials: tuple[str, ...],
    db: str | None,
    jobs: int | None,
    threads: int | None,
    memory: str | None,
    scheduler: str | None,
) -> None:
    """Generate every slice up to PIECES pieces and/or the slices of each MATERIAL
    (resumes: complete slices are kept). One build per database folder at a time."""
    if pieces is None and not materials:
        fail("give --pieces N, or one or more --material WMWKBMBK (e.g. --material 0402)")
    v = get_variant(variant)
    wanted = parse_materials(materials)
    try:
        budget = parse_size(memory) if memory else default_memory()
    except ValueError as e:
        fail(f"--memory: {e}")
    setup_logging(handler=TqdmLogHandler() if on_terminal() else None)
    path = db_dir(db, variant)
    held = ExitStack()
    try:
        path.mkdir(parents=True, exist_ok=True)
        held.enter_context(lock_folder(path))
    except FolderInUseError as e:
        fail(f"{e}; wait for it to finish or stop it", 1)
    except OSError as e:
        fail(f"cannot write in database folder {path}: {describe(e)}", 1)
    with held:
        try:
            generate(v, path, pieces, wanted, jobs, threads, budget, bool(memory), scheduler)
        except SchedulerError as e:
            fail(str(e))
        except BuildError as e:
            fail(str(e), 1)
        except KeyboardInterrupt:
            fail("interrupted; the slices done are kept (run the same command to resume)", 130)


@main.command("compile")
@click.option(
    "--variant",
    "variants",
    type=click.Choice(sorted(VARIANTS)),
    multiple=True,
    help="Variant whose build kernels to compile (repeatable; default international).",
)
@click.option("--force", is_flag=True, help="Run even where the cache is marked compiled.")
def compile_cmd(variants: tuple[str, ...], force: bool) -> None:
    """Compile and cache the kernels of a build and a probe, those only large builds reach
    (four-byte state words, out of core) included (a first build compiles what every build
    needs itself; make does all at install). Once per version of the sources."""
    setup_logging()
    for name in variants or ("international",):
        if warmup.is_warm(name, larger=True) and not force:
            click.echo(f"{name}: kernels already compiled")
            continue
        click.echo(f"{name}: compiling kernels ...")
        seconds = warmup.warm_up(name, larger=True)
        click.echo(f"{name}: kernels compiled in {seconds:.0f} s")


@main.command("probe")
@VARIANT_OPTION
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON object per input.")
@click.option("--moves", "with_moves", is_flag=True, help="Also list every move's value.")
@click.option(
    "--elapsed",
    type=click.IntRange(min=0),
    default=None,
    help="Plies already played under the count in force for the ending: adds "
    "result_under_count (a table win the count stops is a draw) to the position and its moves.",
)
@click.option(
    "--cache",
    metavar="SIZE",
    default=None,
    help="Memory for table blocks, e.g. 256M, 1G (default: a quarter of the machine's "
    "memory); the least recently used blocks are dropped beyond it.",
)
@click.argument("fens", nargs=-1, required=True)
def probe_cmd(
    variant: str,
    db: str | None,
    as_json: bool,
    with_moves: bool,
    elapsed: int | None,
    cache: str | None,
    fens: tuple[str, ...],
) -> None:
    """Look positions up: result and distance-to-win for the side to move."""
    with open_db(db, variant, cache) as tb:
        for fen in read_fens(fens):
            pos = parse_fen(fen, variant)
            try:
                wdl, dtw = tb.probe(pos)
                moves = tb.best_moves(pos) if with_moves else []
                counted = (
                    probe_under_count(tb, pos, elapsed, [m.move for m in moves])
                    if elapsed is not None
                    else None
                )
            except (MissingSliceError, TableFileError, ValueError) as e:
                fail(str(e))
            obj: dict[str, Any] = {"fen": fen, "result": RESULT_NAMES[wdl], "dtw": dtw}
            if counted is not None:
                count, whole, per_move = counted
                obj["result_under_count"] = whole
                obj["count"] = {
                    "rule": count.rule,
                    "limit": count.finite_limit,
                    "elapsed": count.elapsed,
                }
            if with_moves:
                obj["moves"] = [{"move": m.text, "result": m.result, "dtw": m.dtw} for m in moves]
                if counted is not None:
                    for row, value in zip(obj["moves"], counted[2], strict=True):
                        row["result_under_count"] = value
            if as_json:
                click.echo(json.dumps(obj))
            else:
                dist = f" in {dtw} plies" if dtw is not None else ""
                under = ""
                if counted is not None:
                    under = f" ({counted[1]} under the {counted[0].describe()})"
                click.echo(f"{pos.fen()}: {obj['result']}{dist}{under}")
                for i, m in enumerate(moves):
                    d = f" in {m.dtw}" if m.dtw is not None else ""
                    u = f" ({counted[2][i]} under the count)" if counted is not None else ""
                    click.echo(f"  {m.text:>12} {m.result}{d}{u}")


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
@click.option(
    "--values-db",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="For a WDL-only copy: the full database it was exported from, whose values each "
    "WDL part is compared with.",
)
@click.option(
    "--memory",
    metavar="SIZE",
    default=None,
    help="Memory the check may hold, e.g. 2G (default: 85% of the memory available). A pair "
    "whose tables and dependencies need more is checked on its --sample with the values "
    "read block by block (the WDL part compared at the sample), or not at all without "
    "--sample.",
)
def verify_cmd(
    variant: str,
    db: str | None,
    sample: int | None,
    seed: int,
    values_db: str | None,
    memory: str | None,
) -> None:
    """Check every slice file (its digests and checksums), re-derive stored values from
    their successors and compare every WDL code with the values; exit 1 listing
    inconsistencies, damaged files and files that are not slices of the database."""
    setup_logging()
    try:
        budget = parse_size(memory) if memory else default_memory()
    except ValueError as e:
        fail(f"--memory: {e}")
    v = get_variant(variant)
    path = db_dir(db, variant)
    if not path.is_dir():
        fail(f"database directory {path} does not exist (run `tablebase generate` first)")

    def show(r: SliceCheck) -> None:
        if r.wdl_bad < 0:
            click.echo(f"{r.slice}: {r.note}")
            return
        status = "ok" if r.bad_count == 0 else f"{r.bad_count} INCONSISTENT"
        wdl = "" if r.wdl_bad == 0 else f"; wdl part: {r.wdl_bad} ENTRIES DISAGREE with the values"
        if not r.checked and not r.bad_count:  # a WDL-only copy, against a full database
            status = "wdl part ok" if r.wdl_bad == 0 else ""
            wdl = wdl[2:]
        else:
            status = f"{r.checked} checked, {status}"
        click.echo(f"{r.slice}: {status}{wdl}{f' ({r.note})' if r.note else ''}")
        for fen in r.bad_fens:
            click.echo(f"  inconsistent: {fen}")
        for fen in r.wdl_fens:
            click.echo(f"  wdl code disagrees: {fen}")

    def damaged(f: Path, reason: str) -> None:
        click.echo(f"{f.stem}: {f.name} DAMAGED: {reason}")

    def unverified(f: Path, reason: str) -> None:
        click.echo(f"{f.stem}: not verified: {reason}")

    listing = slice_files(path)
    for f, reason in listing.others:
        click.echo(f"{f.name}: skipped, not a slice file: {reason}")
    if not listing.slices:
        fail(f"no slice files in {path}")
    report = verify_database(
        path,
        v,
        sample,
        seed,
        os.cpu_count() or 1,
        values_db,
        on_check=show,
        on_damaged=damaged,
        on_unverified=unverified,
        memory=budget,
    )
    if report.failures:
        sys.exit(1)


@main.command("stats")
@VARIANT_OPTION
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON object per slice.")
@click.option(
    "--plot",
    "plot_file",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Also draw per slice the win/draw/loss shares and the distance-to-win distribution "
    "into this image (PNG, SVG, PDF; needs the `plot` extra: matplotlib).",
)
def stats_cmd(variant: str, db: str | None, as_json: bool, plot_file: str | None) -> None:
    """Per slice: positions, wins, draws, losses, longest win and an example, and the bits
    per position of each part on disk; then a total per piece count."""
    if plot_file:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            fail("stats --plot needs matplotlib: pip install 'draughts-tablebase[plot]'")
    rows = []
    totals: dict[int, list[int]] = {}
    damaged = 0
    with open_db(db, variant) as tb:
        for s in sorted(tb.slices(), key=build_key):
            path = slice_path(tb.path, s)
            try:
                a = check_header(path, tb.variant, s)  # a relabelled file is refused
                wdl_bytes, values_bytes = part_bytes(path)
                hist = a.get("value_histogram")
                if hist is None and plot_file:  # version 1 files keep no histogram
                    hist = dtw_histogram(read_slice(path, tb.variant, s))
            except TableFileError as e:  # listed; the other slices are still counted
                click.echo(f"error: {e}", err=True)
                damaged += 1
                continue
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
            positions = max(1, row["positions"])
            row["wdl_bits"] = round(8 * wdl_bytes / positions, 4)
            row["values_bits"] = round(8 * values_bytes / positions, 4)
            row["format_version"] = a["format_version"]
            t = totals.setdefault(s.pieces, [0, 0, 0])
            t[0] += row["positions"]
            t[1] += wdl_bytes
            t[2] += values_bytes
            if as_json:
                click.echo(json.dumps(row))
            else:
                click.echo(
                    f"{row['material']}: {row['positions']:>12,} positions "
                    f"{row['wins']:>12,} W {row['draws']:>12,} D {row['losses']:>12,} L  "
                    f"wdl {row['wdl_bits']:.3f} values {row['values_bits']:.3f} bits/position  "
                    f"longest win {row['longest_win']:>3} {row['longest_win_fen']}"
                )
            if plot_file:
                rows.append(dict(row, value_histogram=hist))
    if not as_json:
        for pieces, (positions, w, v) in sorted(totals.items()):
            n = max(1, positions)
            click.echo(
                f"{pieces} pieces: {positions:,} positions, wdl {w / 1e6:.2f} MB "
                f"({8 * w / n:.3f} bits/position), values {v / 1e6:.2f} MB "
                f"({8 * v / n:.3f} bits/position)"
            )
    if plot_file:
        if not rows:
            fail(f"no slice files in {tb.path} to plot")
        try:
            sizes = sorted({sum(int(c) for c in r["material"]) for r in rows})
            title = f"{tb.variant.name}, {sizes[0]}-{sizes[-1]} pieces: {len(rows)} slices"
            out = plot_stats(rows, plot_file, title)
        except (OSError, ValueError) as e:
            fail(f"cannot write {plot_file}: {e}")
        click.echo(f"plot written to {out}", err=True)
    if damaged:
        sys.exit(1)


@main.command("export")
@click.option("--format", "fmt", type=click.Choice(["tables", "scan"]), default="tables",
              help="scan: Scan's bitbase files, DST its data folder (docs/SCAN.md).")  # fmt: skip
@click.option(
    "--wdl-only",
    is_flag=True,
    help="Write only the compact win/draw/loss part (the distribution copy; no distances).",
)
@click.option(
    "--resolve-captures",
    is_flag=True,
    help="Leave capture positions out of the win/draw/loss part of every slice (smallest; "
    "a probe then resolves them through their captures).",
)
@click.option(
    "--store-captures",
    is_flag=True,
    help="Store capture positions' codes in the win/draw/loss part of every slice (every "
    "probe reads one code). The default without --wdl-only.",
)
@click.option(
    "--store-captures-up-to",
    "store_up_to",
    type=click.IntRange(min=0),
    default=None,
    metavar="PIECES",
    help="Store capture positions' codes in the slices of up to PIECES pieces, leave them "
    "to the prober in larger ones (default with --wdl-only: 5).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="With --format scan: DST holds files of an interrupted export of SRC; keep the "
    "whole ones and write the rest.",
)
@click.argument("src", type=click.Path(file_okay=False))
@click.argument("dst", type=click.Path(file_okay=False))
def export_cmd(
    fmt: str,
    wdl_only: bool,
    resolve_captures: bool,
    store_captures: bool,
    store_up_to: int | None,
    resume: bool,
    src: str,
    dst: str,
) -> None:
    """Copy the database SRC into the new directory DST in the current format (this also
    converts older databases: format version 1); with --wdl-only, the win/draw/loss part
    alone, the distribution copy, which stores capture positions' codes in the slices of up
    to five pieces and leaves them to the prober in larger ones (a full copy stores them in
    every slice). --store-captures, --resolve-captures and --store-captures-up-to choose
    otherwise; at most one of them may be given."""
    if fmt == "scan":  # the options below choose a form of our own format
        forms = (wdl_only, resolve_captures, store_captures, store_up_to is not None)
        return export_to_scan(src, dst, any(forms), resume)
    if resume:
        raise click.UsageError("--resume goes with --format scan")
    try:  # the options' one rule lives in the export module
        captures_stored_up_to(wdl_only, resolve_captures, store_captures, store_up_to)
    except ValueError:
        raise click.UsageError(
            "--resolve-captures, --store-captures and --store-captures-up-to exclude each other"
        ) from None
    setup_logging()
    log = logging.getLogger("tablebase.storage.export")
    try:
        r = export_database(
            src,
            dst,
            wdl_only,
            on_slice=lambda s: log.info("%s exported", s.name),
            resolve_captures=resolve_captures,
            store_captures=store_captures,
            store_up_to=store_up_to,
        )
    except (ValueError, TableFileError) as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot write {dst}: {e}", 1)
    n = max(1, r.positions)
    parts = "wdl only" if wdl_only else "wdl and values"
    click.echo(
        f"{r.slices} slices ({parts}) to {dst}: {r.positions:,} positions, wdl "
        f"{r.wdl_bytes / 1e6:.2f} MB ({8 * r.wdl_bytes / n:.3f} bits/position; "
        f"{r.captures_stored} of {r.slices} slices with captures stored)"
        + (
            ""
            if wdl_only
            else f", values {r.values_bytes / 1e6:.2f} MB "
            f"({8 * r.values_bytes / n:.3f} bits/position)"
        )
    )


@main.command("hub")
@VARIANT_OPTION
@DB_OPTION
@click.option(
    "--search-nodes",
    type=click.IntRange(min=0),
    default=100_000,
    show_default=True,
    help="Node budget of the count-aware search per move.",
)
def hub_cmd(variant: str, db: str | None, search_nodes: int) -> None:
    """Play as a Hub engine on stdin/stdout: the best move from the tables (docs/MATCH.md)."""
    with open_db(db, variant) as tb:
        if not tb.has_distances:
            fail(f"{tb.path}: a WDL-only database cannot choose moves (no distances)")

        def write(line: str) -> None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

        try:
            serve_hub(tb, sys.stdin, write, search_nodes)
        except BrokenPipeError:
            pass


for _command in SCAN_COMMANDS:
    main.add_command(_command)

if __name__ == "__main__":
    main()
