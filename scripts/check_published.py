"""Check a database against published facts found independently of this project.

Reads ``docs/reference/<variant>_published.json`` (slice counts and longest wins of other
generators, composed and analysed positions with their result) and checks each fact whose
slices the database holds; the others are listed as not checked. The variant is the
database's own (``--variant``, if given, must name it). Prints one line per fact; exits 1 if
any disagrees, 2 if none could be checked or the database, the variant or its facts are
missing (one line on standard error).

    python scripts/check_published.py --db data/english
    python scripts/check_published.py --db /big/english --variant english
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import tablebase
from tablebase.material.slices import parse_slice
from tablebase.probe.database import MissingSliceError
from tablebase.rules.outcome import RESULT_NAMES
from tablebase.storage.listing import database_variant
from tablebase.storage.reader import read_attrs
from tablebase.storage.slicefile import slice_path

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference"
SLICE_FIELDS = ("positions", "wins", "draws", "losses", "longest_win")


def published(variant: str) -> dict | None:
    """The published facts of ``variant`` (see the module docstring); None if there are
    none."""
    path = REFERENCE / f"{variant}_published.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    assert data["variant"] == variant, data["variant"]
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="the variant's database folder")
    ap.add_argument("--variant", default=None, help="must be the database's (default: it)")
    args = ap.parse_args()
    try:
        variant = database_variant(args.db).name
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.variant is not None and args.variant != variant:
        print(f"error: {args.db} holds {variant} tables, not {args.variant}", file=sys.stderr)
        return 2
    facts = published(variant)
    if facts is None:
        known = sorted(
            p.name.removesuffix("_published.json") for p in REFERENCE.glob("*_published.json")
        )
        print(
            f"error: no published facts for {variant} (there are for: {', '.join(known)})",
            file=sys.stderr,
        )
        return 2
    checked = disagree = 0
    for f in facts["slices"]:
        path = slice_path(args.db, parse_slice(f["material"]))
        if not path.exists():
            print(f"{f['material']}: not in the database, not checked")
            continue
        attrs = read_attrs(path)
        ours = {k: int(attrs[k]) for k in SLICE_FIELDS}
        theirs = {k: f[k] for k in SLICE_FIELDS}
        ok = ours == theirs
        checked += 1
        disagree += not ok
        print(f"{f['material']}: published {theirs}, ours {ours}: {'ok' if ok else 'DISAGREE'}")
    with tablebase.open(args.db, variant) as tb:
        for f in facts["positions"]:
            try:
                wdl, dtw = tb.probe(f["fen"])
            except MissingSliceError as e:
                print(f"{f['fen']}: {e}, not checked")
                continue
            ok = RESULT_NAMES[wdl] == f["result"]
            checked += 1
            disagree += not ok
            plies = f" in {dtw} plies" if dtw is not None else ""
            print(
                f"{f['fen']}: published {f['result']}, ours {RESULT_NAMES[wdl]}{plies}: "
                f"{'ok' if ok else 'DISAGREE'}"
            )
    print(f"{checked} facts checked, {disagree} disagree")
    if disagree:
        return 1
    return 0 if checked else 2


if __name__ == "__main__":
    sys.exit(main())
