"""Check generated databases against the rules engine and the published longest wins.

Generates (or reuses) the 2-N piece databases of both variants, runs the full local
consistency check of every slice (each value re-derived from its successors), and compares
every International slice's longest win with ``tests/data/reference/longest_wins.json``.
Where they disagree it prints the evidence: the principal variation of the disputed
positions, every step of which the verification has checked.

    python scripts/check_reference.py [--pieces 4] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import tablebase
from tablebase.build.verify import verify_slice
from tablebase.material.slices import parse_slice
from tablebase.rules import play
from tablebase.rules.position import Position
from tablebase.rules.variants import get_variant
from tablebase.storage.reader import read_attrs
from tablebase.storage.slicefile import slice_path

REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "reference"


def principal_variation(tb, fen: str, limit: int = 80) -> list[str]:
    """Best play from ``fen``: the winner's fastest and the loser's slowest moves."""
    pos = Position.from_fen(fen, tb.variant)
    line = []
    for _ in range(limit):
        moves = tb.best_moves(pos)
        if not moves:
            break
        mv = moves[0]
        line.append(f"{mv.text}({mv.result[0]}{mv.dtw})")
        pos = play(pos, mv.move)
    return line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, default=4)
    ap.add_argument("--data", type=Path, default=Path("data"))
    args = ap.parse_args()
    failures = 0
    for name in ("international", "english"):
        db = args.data / name
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tablebase.cli",
                "generate",
                "--variant",
                name,
                "--pieces",
                str(args.pieces),
                "--db",
                str(db),
            ],
            check=True,
        )
        v = get_variant(name)
        t0 = time.perf_counter()
        checked = 0
        with tablebase.open(db, name) as tb:
            slices = tb.slices()
        for s in slices:
            r = verify_slice(db, v, s, threads=2)
            checked += r.checked
            if r.bad_count:
                failures += 1
                print(f"{name} {s.name}: {r.bad_count} inconsistent, e.g. {r.bad_fens[:3]}")
        dt = time.perf_counter() - t0
        print(
            f"{name} 2-{args.pieces}: full verify of {len(slices)} slices, {checked:,} "
            f"entries in {dt:.1f} s ({checked / dt:,.0f} entries/s): "
            f"{'FAILED' if failures else 'all consistent'}"
        )
    published = json.loads((REFERENCE / "longest_wins.json").read_text())["positions"]
    db = args.data / "international"
    longest: dict[str, int] = {}
    for e in published:
        longest[e["material"]] = max(longest.get(e["material"], 0), e["plies"])
    with tablebase.open(db, "international") as tb:
        for e in published:
            s = parse_slice(e["material"])
            if s.pieces > args.pieces:
                continue
            ours = tb.probe_dtw(e["fen"])
            attrs = read_attrs(slice_path(db, s))
            ok_example = ours == e["plies"]
            ok_longest = attrs["longest_win"] == longest[e["material"]]
            status = "ok" if ok_example and ok_longest else "DISAGREE"
            print(
                f"{e['material']} {e['fen']:<28} published {e['plies']:>3}  ours {ours!s:>4}  "
                f"slice longest: published {longest[e['material']]:>3} ours "
                f"{attrs['longest_win']:>3} ({attrs['longest_win_fen']})  {status}"
            )
            if status != "ok":
                print(
                    "   published example, best play:", " ".join(principal_variation(tb, e["fen"]))
                )
                print(
                    "   our longest, best play:      ",
                    " ".join(principal_variation(tb, attrs["longest_win_fen"])),
                )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
