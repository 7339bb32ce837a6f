"""Where a build's time went: the phases of every pair, summed from a `generate` log.

Each solved pair's log line names its phases (``read`` the dependencies, ``pass 1``, the
``levels``, ``write``: counting, writing, re-reading and checking the files). A pair with
men solved one men configuration at a time (:mod:`tablebase.solve.men`) runs each
configuration's levels inside its pass 1, so its "pass 1" holds both and its "levels" only
the compaction of the values; this script therefore sums the phases per kind of pair:

* ``kings``: no men (the whole pair's passes; Frisian's king runs too);
* ``men``: men on the board, solved by configurations where the solver chose so (pass 1 =
  pass 1 and levels of every configuration), else by the whole pair's passes.

    python scripts/build_phases.py BUILD.log [--by pieces]

prints a table of seconds per phase and kind (and per piece count with ``--by pieces``),
the task seconds in all and the share of each phase.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(
    r"\] (?P<pair>[0-9+]+) solved in (?P<total>[0-9.]+) s "
    r"\[read (?P<read>[0-9.]+) s, pass 1 (?P<pass1>[0-9.]+) s, "
    r"levels (?P<levels>[0-9.]+) s, write (?P<write>[0-9.]+) s\]"
)
PHASES = ("read", "pass1", "levels", "write")


def kind(pair: str) -> str:
    """``kings`` or ``men`` (see the module docstring) from a pair's name."""
    first = pair.split("+")[0]
    return "men" if int(first[0]) + int(first[2]) > 0 else "kings"


def pieces(pair: str) -> str:
    first = pair.split("+")[0]
    return f"{sum(int(c) for c in first)} pieces"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--by", choices=("kind", "pieces"), default="kind")
    args = ap.parse_args(argv)
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0] * 6)
    for line in args.log.read_text(errors="replace").splitlines():
        m = LINE.search(line)
        if not m:
            continue
        key = kind(m["pair"]) if args.by == "kind" else pieces(m["pair"])
        row = sums[key]
        for i, ph in enumerate(PHASES):
            row[i] += float(m[ph])
        row[4] += float(m["total"])
        row[5] += 1
    if not sums:
        print(f"{args.log}: no solved pair found", file=sys.stderr)
        return 1
    total = [sum(r[i] for r in sums.values()) for i in range(6)]
    print(f"{'':>10} {'pairs':>6} {'read':>8} {'pass 1':>8} {'levels':>8} {'write':>8} {'task':>8}")
    for key in sorted(sums):
        r = sums[key]
        print(f"{key:>10} {int(r[5]):>6} " + " ".join(f"{x:8.1f}" for x in r[:5]))
    print(f"{'all':>10} {int(total[5]):>6} " + " ".join(f"{x:8.1f}" for x in total[:5]))
    share = " ".join(f"{100 * x / total[4]:7.1f}%" for x in total[:4])
    print(f"{'share':>10} {'':>6} {share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
