"""Engine matches measured: wall time and the referee's own CPU time per game.

    python scripts/bench_match.py mobydam --mobydam BIN [--games 10] [--ms 100]
    python scripts/bench_match.py tables --mobydam BIN --db DB [--positions 20] [--ms 100]

``mobydam``: Moby Dam against Moby Dam from five 2-move ballots, each with both colours, at
a 1-minute DXP game clock with Moby Dam's own hard limit of ``--ms`` per move; the PDN is
ruled again by ``adjudicator rule`` (in-process) and compared. ``tables``: Moby Dam against
``tablebase hub`` from ``--positions`` random positions of 2-5 pieces of the database (half
of them table draws, seeded), each with both colours, the referee adjudicating by the rules
only (the tables check claims), and every game's result compared with the start position's
count-aware table value. One line per game, then a summary. The referee's CPU time is
``time.process_time()`` of this process across the game (the engines are other processes);
the first game also pays for loading and compiling the referee's code, so it is reported
apart.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "adjudicator"))

from match_helpers import mobydam  # noqa: E402

import tablebase  # noqa: E402
from adjudicator import rule_file  # noqa: E402
from adjudicator.drawrules import DrawState, RuleOptions  # noqa: E402
from adjudicator.match import Match, Referee, TimeControl, parse_spec, run_match  # noqa: E402
from adjudicator.match.openings import load  # noqa: E402
from adjudicator.tablesearch import rule_position  # noqa: E402
from tablebase.rules import Position, legal_moves  # noqa: E402
from tablebase.rules.variants import INTERNATIONAL  # noqa: E402

BALLOTS = ["32-28 18-23", "33-28 17-22", "34-29 19-23", "31-27 20-24", "35-30 16-21"]
RULE_ENDS = {"no-pieces", "no-moves", "threefold", "25-move", "16-move", "5-move", "tablebase"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["mobydam", "tables"])
    ap.add_argument("--mobydam", required=True, help="the Moby Dam binary")
    ap.add_argument("--games", type=int, default=10)
    ap.add_argument("--ms", type=int, default=100, help="Moby Dam's hard limit per move")
    ap.add_argument("--db", help="tables (mode tables)")
    ap.add_argument("--positions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-match-"))
    if args.mode == "mobydam":
        bench_mobydam(args, work)
    else:
        bench_tables(args, work)


def report(records, started: float) -> None:
    for r in records:
        print(
            f"game {r.game:2d}: {r.white} - {r.black} {r.result(INTERNATIONAL)} {r.reason:<12} "
            f"{r.plies:3d} plies  wall {r.wall:6.2f} s  referee CPU {r.cpu:6.3f} s "
            f"({1000 * r.cpu / max(r.plies, 1):.2f} ms/ply)"
        )
    rest = records[1:] or records
    print(
        f"{len(records)} games in {time.monotonic() - started:.1f} s; referee CPU per game "
        f"(games 2-{len(records)}): mean {sum(r.cpu for r in rest) / len(rest):.3f} s, "
        f"max {max(r.cpu for r in rest):.3f} s; game 1 (loading and compiling included) "
        f"{records[0].cpu:.2f} s; mean wall {sum(r.wall for r in records) / len(records):.1f} s"
    )


def bench_mobydam(args, work: Path) -> None:
    openings = work / "ballots.pdn"
    openings.write_text("".join(f'[Event "{i}"]\n\n1. {b} *\n\n' for i, b in enumerate(BALLOTS)))
    pdn = work / "match.pdn"
    with (
        mobydam(work / "a", args.ms, args.mobydam) as a,
        mobydam(work / "b", args.ms, args.mobydam) as b,
    ):
        ref = Referee(TimeControl(minutes=1), RuleOptions(), None, "rules")
        match = Match(
            (parse_spec(a), parse_spec(b)), args.games, load(str(openings), INTERNATIONAL), ref,
            INTERNATIONAL,
        )  # fmt: skip
        started = time.monotonic()
        records, score = run_match(match, str(pdn))
    report(records, started)
    print(score.summary())
    same = sum(
        1
        for r, ruling in zip(records, rule_file(str(pdn)), strict=True)
        if r.reason not in RULE_ENDS
        or (ruling.result, ruling.reason, ruling.ply)
        == (r.result(INTERNATIONAL), r.reason, r.plies)
    )
    print(f"adjudicator rule agrees on {same} of {len(records)} games; PDN {pdn}")


def positions(tb, n: int, seed: int) -> list[str]:
    """``n`` quiet positions of 2-5 pieces, half of them table draws."""
    rng = random.Random(seed)
    slices = [s for s in tb.slices() if 2 <= sum(tuple(s)) <= 5 and s.wm + s.wk and s.bm + s.bk]
    draws, decisive = [], []
    while len(draws) + len(decisive) < n:
        s = rng.choice(slices)
        wm, wk, bm, bk = tuple(s)
        squares = rng.sample(range(1, 51), wm + wk + bm + bk)
        w_men, w_kings = squares[:wm], squares[wm : wm + wk]
        b_men, b_kings = squares[wm + wk : wm + wk + bm], squares[wm + wk + bm :]
        if any(q <= 5 for q in w_men) or any(q >= 46 for q in b_men):
            continue
        white = ",".join([*map(str, w_men), *(f"K{q}" for q in w_kings)])
        black = ",".join([*map(str, b_men), *(f"K{q}" for q in b_kings)])
        pos = Position.from_fen(f"{rng.choice('WB')}:W{white}:B{black}")
        moves = legal_moves(pos)
        if not moves or any(m.is_capture for m in moves):
            continue
        bucket = draws if tb.probe_wdl(pos) == 0 else decisive
        if len(bucket) < n // 2:
            bucket.append(pos.fen())
    return [f for pair in zip(draws, decisive, strict=True) for f in pair]


def bench_tables(args, work: Path) -> None:
    with tablebase.open(args.db) as tb:
        fens = positions(tb, args.positions, args.seed)
        openings = work / "positions.txt"
        openings.write_text("\n".join(fens) + "\n")
        tables = f"hub:{sys.executable} -m tablebase.cli hub --db {args.db}"
        pdn = work / "match.pdn"
        with mobydam(work / "md", args.ms, args.mobydam) as md:
            ref = Referee(TimeControl(minutes=1), RuleOptions(), tb, "rules")
            match = Match(
                (parse_spec(tables), parse_spec(md)), 2 * len(fens),
                load(str(openings), INTERNATIONAL), ref, INTERNATIONAL,
            )  # fmt: skip
            started = time.monotonic()
            records, score = run_match(match, str(pdn))
        report(records, started)
        print(score.summary())
        below = agree = 0
        for k, (r, ruling) in enumerate(zip(records, rule_file(str(pdn), db=tb), strict=True)):
            start = Position.from_fen(fens[k // 2])
            state = DrawState(start)
            white = rule_position(tb, start, state.count, state.counter).white_score
            tables_white = k % 2 == 0
            value = white if tables_white else 2 - white
            got = r.white_score if tables_white else 2 - r.white_score
            below += got < value
            agree += r.reason not in RULE_ENDS or ruling.result == r.result(INTERNATIONAL)
            print(f"  {fens[k // 2]:<32} tables {'white' if tables_white else 'black'}: "
                  f"value {value} got {got} ({r.reason})")  # fmt: skip
        print(
            f"games where the tables scored below the start value: {below} of {len(records)}; "
            f"adjudicator rule --db agrees on {agree}; PDN {pdn}"
        )


if __name__ == "__main__":
    main()
