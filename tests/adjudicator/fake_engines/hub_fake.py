"""A fake Hub engine: ``python hub_fake.py [--name N] [--fault KIND[:ARG]@GAME.TURN]``.

Plays :func:`common.choose`'s move for the position of each ``pos``; misbehaves once as
told (see :class:`common.Fault`; with ``--once FILE`` only while FILE is absent, so that
the process the referee starts again after a fault plays on): ``illegal:TEXT`` answers
``done move=TEXT``, ``garbage`` writes bytes that are not text, ``die`` exits with status
3, ``stall`` never answers, ``resign`` answers ``done`` without a move.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Fault, choose  # noqa: E402

from tablebase.probe.hub import move_text, parse_position  # noqa: E402
from tablebase.rules import Position, play  # noqa: E402
from tablebase.rules.notation import parse_move  # noqa: E402
from tablebase.rules.variants import INTERNATIONAL  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="HubFake")
    ap.add_argument("--fault", default=None)
    ap.add_argument("--once", default=None, help="a file: misbehave only if it is absent")
    args = ap.parse_args()
    fault = Fault(None if args.once and os.path.exists(args.once) else args.fault)
    out = sys.stdout.buffer
    game, turn, pos = 0, 0, Position.start(INTERNATIONAL)

    def say(line: str) -> None:
        out.write(line.encode() + b"\n")
        out.flush()

    for line in sys.stdin:
        tokens = shlex.split(line)
        if not tokens:
            continue
        cmd, kv = tokens[0], dict(t.partition("=")[::2] for t in tokens[1:])
        if cmd == "hub":
            say(f'id name="{args.name}" version=1')
            say("wait")
        elif cmd == "init":
            choose(Position.start(INTERNATIONAL))  # load the compiled move generator now
            say("ready")
        elif cmd == "new-game":
            game, turn = game + 1, 0
        elif cmd == "pos":
            pos = parse_position(kv["pos"], INTERNATIONAL) if "pos" in kv else pos
            for text in kv.get("moves", "").split():
                pos = play(pos, parse_move(pos, text))
        elif cmd == "go":
            turn += 1
            kind = fault.now(game, turn)
            if kind and args.once:
                open(args.once, "w").close()
            if kind == "illegal":
                say(f"done move={fault.arg}")
            elif kind == "garbage":
                out.write(b"\xff\xfe garbage \x80\x81\n")
                out.flush()
            elif kind == "die":
                os._exit(3)
            elif kind == "stall":
                time.sleep(3600)
            elif kind == "resign":
                say("done")
            else:
                move = choose(pos)
                say("info depth=1 score=0.00")
                say("done" if move is None else f"done move={move_text(move)}")
        elif cmd == "quit":
            return


if __name__ == "__main__":
    main()
