"""A fake Hub engine that knows no rules, only a book: ``python hub_book.py --book FILE``.

The book (JSON) maps what the referee sends, ``<pos>|<moves>`` (the ``pos=`` and ``moves=``
values of ``pos``), to ``MOVE`` or ``MOVE SCORE``; the engine answers ``info score=SCORE``
(when given) and ``done move=MOVE``, or ``done`` without a move (it resigns) for a position
not in its book. It starts in a blink (no imports beyond the standard library), so fast
tests can play many games with a fresh process each. ``--delay S`` waits S seconds per move;
``--param LINE`` declares a parameter (``name=hash type=int min=1 max=64``); ``--log FILE``
appends the working folder and every ``set-param`` line received before ``init``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--book", required=True)
    ap.add_argument("--name", default="BookFake")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--log", default=None)
    args = ap.parse_args()
    with open(args.book, encoding="utf-8") as f:
        book = json.load(f)
    out = sys.stdout
    key = ""

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    def log(line: str) -> None:
        if args.log:
            with open(args.log, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    for line in sys.stdin:
        tokens = shlex.split(line)
        if not tokens:
            continue
        cmd, kv = tokens[0], dict(t.partition("=")[::2] for t in tokens[1:])
        if cmd == "hub":
            say(f'id name="{args.name}" version=1')
            for param in args.param:
                say(f"param {param}")
            say("wait")
        elif cmd == "set-param":
            log(line.strip())
        elif cmd == "init":
            log(f"cwd {os.getcwd()}")
            say("ready")
        elif cmd == "pos":
            key = f"{kv.get('pos', '')}|{kv.get('moves', '')}"
        elif cmd == "go":
            if args.delay:
                time.sleep(args.delay)
            entry = book.get(key)
            if entry is None:
                say("done")
                continue
            move, _, score = entry.partition(" ")
            if score:
                say(f"info depth=1 score={score}")
            say(f"done move={move}")
        elif cmd == "quit":
            return


if __name__ == "__main__":
    main()
