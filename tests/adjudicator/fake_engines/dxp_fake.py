"""A fake DXP engine, the follower: ``python dxp_fake.py --port P [--name N] [--fault ...]``.

Listens on ``P`` (prints ``listening`` when ready), accepts the referee's GAMEREQ and plays
:func:`common.choose`'s moves, game after game, accepting a new connection when one closes.
Messages are written and read with pydraughts' DamExchange (an implementation independent
of the referee's). Misbehaves once as told (:class:`common.Fault`): ``illegal:F-T[-C...]``
sends that MOVE, ``garbage`` sends bytes that are not a message, ``disconnect`` closes the
connection, ``claim-win`` and ``claim-draw`` send a GAMEEND with that reason. With
``--connect`` it is the initiator instead: it connects to the referee's port and requests
each game (``--colours``, its colour per game; ``--wrong-first`` asks the other colour first,
and takes the colour the refusal implies).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Fault, choose  # noqa: E402
from draughts.engines.dxp_communication.dxp_classes import DamExchange  # noqa: E402

from tablebase.rules import Position, legal_moves, play  # noqa: E402
from tablebase.rules.variants import INTERNATIONAL  # noqa: E402

DXP = DamExchange()


class Peer:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def send(self, text: str) -> None:
        self.sock.sendall(text.encode("ascii") + b"\0")

    def receive(self) -> str | None:
        while b"\0" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                return None
            self.buffer += chunk
        raw, _, self.buffer = self.buffer.partition(b"\0")
        return raw.decode("ascii")


def position_of(data: dict) -> Position:
    if data["posInd"] == "A":
        return Position.start(INTERNATIONAL)
    boards = {"w": 0, "W": 0, "z": 0, "Z": 0}
    for i, c in enumerate(data["pos"]):
        if c in boards:
            boards[c] |= 1 << i
    return Position(boards["w"], boards["W"], boards["z"], boards["Z"], data["mColor"] == "W")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--name", default="DxpFake")
    ap.add_argument("--fault", default=None)
    ap.add_argument("--connect", action="store_true", help="connect to PORT as the initiator")
    ap.add_argument("--colours", default="WB", help="initiator: its colour in each game")
    ap.add_argument("--minutes", type=int, default=1)
    ap.add_argument("--wrong-first", action="store_true", help="ask the wrong colour first")
    args = ap.parse_args()
    fault = Fault(args.fault)
    if args.connect:
        initiate(args)
        return
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", args.port))
    server.listen(1)
    print("listening", flush=True)
    game = 0
    while True:
        sock, _ = server.accept()
        peer = Peer(sock)
        game = serve(peer, args.name, fault, game)
        sock.close()


def initiate(args) -> None:
    """Connect, and for each game send a GAMEREQ (pydraughts writes it: the initial
    position, this engine's colour), then play it."""
    for _ in range(300):  # the referee listens once its first game begins
        try:
            sock = socket.create_connection(("127.0.0.1", args.port), timeout=60)
            break
        except OSError:
            time.sleep(0.1)
    peer = Peer(sock)
    for game, colour in enumerate(args.colours, 1):
        wrong = args.wrong_first and game == 1
        mine = (colour == "W") != wrong
        while True:
            peer.send(DXP.msg_gamereq(0 if mine else 1, args.minutes, 0))
            answer = DXP.parse(peer.receive())
            if answer["type"] == "A" and answer["accCode"] == "0":
                break
            assert DXP.parse(peer.receive())["type"] == "C"  # the game the referee expects
            mine = not mine
        play_one(peer, Position.start(INTERNATIONAL), mine)
    peer.sock.close()


def play_one(peer: Peer, pos: Position, mine: bool) -> None:
    """Play first-choice moves until a GAMEEND, which is echoed."""
    while True:
        move = choose(pos) if pos.white_to_move == mine else None
        if move is not None:
            peer.send(DXP.msg_move([move.frm, move.to], sorted(move.captures), 0))
            pos = play(pos, move)
            continue
        data = DXP.parse(peer.receive())
        if data["type"] == "E":
            peer.send(DXP.msg_gameend(data["reason"]))
            return
        if data["type"] == "M":
            frm, to = int(data["from"]), int(data["to"])
            caps = sorted(int(c) for c in data["captures"])
            pos = play(
                pos,
                next(
                    m
                    for m in legal_moves(pos)
                    if (m.frm, m.to, sorted(m.captures)) == (frm, to, caps)
                ),
            )


def serve(peer: Peer, name: str, fault: Fault, game: int) -> int:
    """Play games on one connection; returns the games counted so far."""
    pos, mine, turn = None, None, 0
    while True:
        text = peer.receive()
        if text is None:
            return game
        data = DXP.parse(text)
        if data["type"] == "R":
            game, turn = game + 1, 0
            pos = position_of(data)
            mine = data["fColor"] == "W"
            peer.send("A" + name.ljust(32)[:32] + "0")
        elif data["type"] == "M":
            frm, to = int(data["from"]), int(data["to"])
            caps = sorted(int(c) for c in data["captures"])
            move = next(
                m for m in legal_moves(pos) if (m.frm, m.to, sorted(m.captures)) == (frm, to, caps)
            )
            pos = play(pos, move)
        elif data["type"] == "E":
            peer.send(DXP.msg_gameend(data["reason"]))
            pos = None
            continue
        else:
            continue
        if pos is None or pos.white_to_move != mine:
            continue
        turn += 1
        kind = fault.now(game, turn)
        if kind == "illegal":
            squares = [int(s) for s in fault.arg.split("-")]
            peer.send(DXP.msg_move([squares[0], squares[1]], squares[2:], 0))
        elif kind == "garbage":
            peer.sock.sendall(b"\xff\x01 junk \x80\0")
        elif kind == "disconnect":
            return game
        elif kind in ("claim-win", "claim-draw"):
            peer.send(DXP.msg_gameend("3" if kind == "claim-win" else "2"))
        else:
            move = choose(pos)
            if move is None:
                continue
            peer.send(DXP.msg_move([move.frm, move.to], sorted(move.captures), 0))
            pos = play(pos, move)


if __name__ == "__main__":
    main()
