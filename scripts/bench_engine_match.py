"""Games at once measured: the same match of real Hub engines at ``--concurrency 1`` and ``N``;
and a check of a match's PDN against the tables.

    python scripts/bench_engine_match.py --scan BIN [--games 100] [--depth 4] [--concurrency 2]
        [--out DIR]
    python scripts/bench_engine_match.py --check PDN --db DB --tables NAME [--variant V]

Scan (its folder copied to ``DIR/scan``, as it reads ``scan.ini`` and ``data/`` where it runs)
plays itself with other options (``tt-size`` 16 against 18) at a fixed ``--depth`` from the
first ``games / 2`` two-move openings (each with both colours), once one game at a time and
once ``--concurrency`` at once, through ``adjudicator match`` (a subprocess each, timed). One
line per run (wall time, score), then the ratio, whether the two PDNs are the same games, and
how many games ``adjudicator rule`` rules to the same result, reason and ply (every game ended
by a rule; games ended otherwise are counted apart).

``--check``: every game of the PDN in which the engine named ``NAME`` (``tablebase hub``)
played: its score against the count-aware table value of the game's start position (from
its FEN), and ``adjudicator rule --db``'s ruling of the games ended by a rule. Prints the
games where the tables' side scored below the value (none expected) and a summary line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tablebase
from adjudicator import rule_file
from adjudicator.drawrules import DrawState
from adjudicator.pdn import read_games
from adjudicator.tablesearch import rule_position
from tablebase.rules import Position, legal_moves, play
from tablebase.rules.notation import move_text
from tablebase.rules.variants import INTERNATIONAL, VARIANTS

# the ends that are not the rules' (any other reason is a rule of the variant: no-pieces,
# threefold, 25-move, Frisian's king-against-king, ..., or the tables)
NOT_RULES = {"claim", "resignation", "false-claim", "illegal-move", "malformed-message",
             "disconnected", "engine-crashed", "time", "refused", "unfinished",
             "draw-adjudication", "resign-adjudication"}  # fmt: skip


def ballots(count: int) -> str:
    """The first ``count`` two-move openings (white's move, black's reply, in square order)."""
    start = Position.start(INTERNATIONAL)
    out = []
    for first in sorted(legal_moves(start), key=lambda m: (m.frm, m.to)):
        after = play(start, first)
        for reply in sorted(legal_moves(after), key=lambda m: (m.frm, m.to)):
            moves = f"{move_text(start, first)} {move_text(after, reply)}"
            out.append(f'[Event "ballot"]\n1. {moves} *\n')
    if len(out) < count:
        raise SystemExit(f"only {len(out)} two-move openings")
    return "\n".join(out[:count])


def run(args: argparse.Namespace, out: Path, concurrency: int) -> tuple[float, str, Path]:
    pdn = out / f"c{concurrency}.pdn"
    scan = out / "scan"
    engine = f"cmd=./{Path(args.scan).name} arg=hub dir={scan}"
    cmd = [
        sys.executable, "-m", "adjudicator.cli", "match",
        "--engine", f"name=Scan-16 {engine} option.tt-size=16",
        "--engine", f"name=Scan-18 {engine} option.tt-size=18",
        "--openings", str(out / "ballots.pdn"), "--games", str(args.games),
        "--depth", str(args.depth), "--time", "10", "--concurrency", str(concurrency),
        "--pdn", str(pdn),
    ]  # fmt: skip
    began = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    score = next(line for line in done.stdout.splitlines() if line.startswith("score:"))
    return wall, score, pdn


def agreement(pdn: Path, db=None) -> tuple[int, int, int]:
    """(games ruled the same, games ended by a rule, all games) by ``adjudicator rule``."""
    games = list(read_games(str(pdn)))
    rulings = [r.to_dict() for r in rule_file(str(pdn), db=db)]
    agree = ends = 0
    for game, ruling in zip(games, rulings, strict=True):
        if game.tags["Termination"] in NOT_RULES:
            continue
        ends += 1
        agree += (ruling["result"], ruling["reason"], ruling["ply"]) == (
            game.tags["Result"], game.tags["Termination"], len(game.moves),
        )  # fmt: skip
    return agree, ends, len(games)


def check(args: argparse.Namespace) -> None:
    variant = VARIANTS[args.variant]
    results = {variant.result_for(k): k for k in (0, 1, 2)}
    below = played = 0
    reasons: dict[str, int] = {}
    with tablebase.open(args.db) as tb:
        for game in read_games(args.check):
            white = game.tags["White"] == args.tables
            if not white and game.tags["Black"] != args.tables:
                continue
            played += 1
            reasons[game.tags["Termination"]] = reasons.get(game.tags["Termination"], 0) + 1
            start = Position.from_fen(game.tags["FEN"], variant)
            state = DrawState(start)
            value = rule_position(tb, start, state.count, state.counter, state.seen_twice())
            got = results[game.tags["Result"]]
            mine, owed = (got, value.white_score) if white else (2 - got, 2 - value.white_score)
            if mine < owed:
                below += 1
                print(f"below: game {game.tags['Round']} {game.tags['FEN']}: {mine} < {owed}")
        agree, ends, total = agreement(Path(args.check), tb)
    print(
        f"{played} games of {args.tables}: below the start's table value in {below}; "
        f"ends {reasons}; adjudicator rule --db agrees on {agree} of {ends} games ended by a "
        f"rule ({total} games in the PDN)"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scan")
    ap.add_argument("--check", help="a PDN to check against the tables")
    ap.add_argument("--db")
    ap.add_argument("--tables", default="tables", help="the tables' engine name in the PDN")
    ap.add_argument("--variant", default="international")
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.check:
        check(args)
        return
    if not args.scan:
        raise SystemExit("--scan BIN or --check PDN")
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-engine-match-"))
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "scan").exists():
        shutil.copytree(os.path.dirname(os.path.abspath(args.scan)), out / "scan")
    (out / "ballots.pdn").write_text(ballots((args.games + 1) // 2))
    load = os.getloadavg()[0]
    results = {}
    for n in (1, args.concurrency):
        wall, score, pdn = run(args, out, n)
        results[n] = (wall, pdn)
        print(f"concurrency {n}: {args.games} games in {wall:.1f} s ({score})", flush=True)
    one, many = results[1], results[args.concurrency]
    same = one[1].read_text() == many[1].read_text()
    agree, ends, total = agreement(many[1])
    print(
        f"ratio {one[0] / many[0]:.2f} (load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end); same games: {same}; adjudicator rule agrees "
        f"on {agree} of {ends} games ended by a rule ({total - ends} ended otherwise)"
    )


if __name__ == "__main__":
    main()
