"""The engines of a match: one adapter per protocol with the same face.

A spec (:mod:`adjudicator.match.enginespec`) names how to reach an engine:

- ``dxp`` - the engine listens (as Moby Dam does by default); the referee connects
  and is its DXP partner, the initiator, sending a GAMEREQ for each game;
- ``dxp-listen`` - the referee listens; the engine connects and, as the initiator, sends
  the GAMEREQ; the referee accepts only the game it has scheduled (colour, position, time)
  and refuses any other with the GAMEACC code that says why and a CHAT naming the game
  expected;
- ``hub`` - a Hub engine process the referee starts in the spec's folder, with its options
  (``set-param``) before ``init``.

One adapter serves one game at a time: a DXP adapter holds one port (its connection kept from
game to game); a Hub adapter is made for one game (a fresh process, so that a game does not
depend on the games played before it).

A DXP engine sees the referee as its opponent (the other engine's name in GAMEREQ or
GAMEACC); the referee relays each move to it as a MOVE and each game's end as a GAMEEND.

Every adapter raises :class:`Fault` with the match's reason for what went wrong (``time``,
``disconnected``, ``malformed-message``, ``engine-crashed``, ``refused``); the referee turns
it into a loss for that engine and calls :meth:`Engine.reset`, so the next game starts from a
fresh connection or process.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

from adjudicator.match import dxp
from adjudicator.match.clock import Clock, TimeControl
from adjudicator.match.enginespec import Spec, SpecError, parse_spec
from adjudicator.match.hub import HubError, HubProcess, position_text
from tablebase.rules.moves import Move
from tablebase.rules.position import Position

CONNECT_TIMEOUT = 30.0  # seconds to connect, start, or get a game accepted
END_TIMEOUT = 2.0  # seconds to wait for a DXP engine to confirm a GAMEEND

__all__ = [
    "Engine",
    "Fault",
    "GameSetup",
    "Reply",
    "Spec",
    "SpecError",
    "make_engine",
    "parse_spec",
]


class Fault(Exception):
    """An engine failed: ``reason`` is the match's word for it, the message the detail."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        super().__init__(detail)


@dataclass(frozen=True)
class GameSetup:
    """What an engine needs to start a game."""

    start: Position  # the game's start position (the opening's FEN, or the initial one)
    position: Position  # where the engines start playing (after the opening's moves)
    history: tuple[str, ...]  # the opening's moves in Hub notation
    white: bool  # this engine plays white
    control: TimeControl
    opponent: str
    last: bool  # the last game of the match


@dataclass(frozen=True)
class Reply:
    """An engine's answer on its turn: a move or a claim, and the seconds it took."""

    seconds: float
    text: str | None = None  # a move as text (Hub)
    squares: tuple[int, int, tuple[int, ...]] | None = None  # from, to, captured (DXP)
    claim: str | None = None  # "win", "draw", "loss" (resigns) or "unknown"
    note: str = ""
    score: float | None = None  # the engine's own score of the move, hundredths of a man

    def shown(self) -> str:
        if self.text is not None:
            return self.text
        if self.squares is not None:
            frm, to, caps = self.squares
            sep = "x" if caps else "-"
            extra = "".join(f"x{c}" for c in caps)
            return f"{frm}{sep}{to}{extra}" if not caps else f"{frm}x{to}{extra}"
        return f"claim {self.claim}"


class Engine:
    """The face the referee sees."""

    name: str
    spec: Spec

    def begin(self, game: GameSetup) -> None:
        raise NotImplementedError

    def ask(self, pos: Position, history: list[str], clock: Clock) -> Reply:
        raise NotImplementedError

    def tell(self, move: Move) -> None:
        """The opponent's move (DXP engines only need it)."""

    def poll(self) -> Reply | None:
        """A claim sent out of turn, if one has arrived."""
        return None

    def finish(self, engine_score: int | None) -> None:
        """The game is over: ``engine_score`` 2/1/0 for this engine, None if unknown."""

    def reset(self) -> None:
        """Drop the connection or process after a fault."""

    def close(self) -> None:
        self.reset()


def make_engine(spec: Spec, label: str, port: int | None = None) -> Engine:
    """An adapter for ``spec`` (``port``: the DXP port it holds, default the first)."""
    if spec.kind == "hub":
        return HubEngine(spec, label)
    if spec.kind == "dxp":
        return DxpEngine(spec, label, port)
    return DxpListenEngine(spec, label, port)


class HubEngine(Engine):
    def __init__(self, spec: Spec, label: str) -> None:
        self.spec = spec
        self.name = spec.name or label
        self.process: HubProcess | None = None
        self.game: GameSetup | None = None

    def _fault(self, error: HubError) -> Fault:
        return Fault(error.reason, f"{self.name}: {error}")

    def begin(self, game: GameSetup) -> None:
        self.game = game
        if self.process is None:
            self.process = HubProcess(self.spec.args or self.spec.command, self.spec.dir)
            try:
                own = self.process.start(CONNECT_TIMEOUT, self.spec.options)
                self.name = self.spec.name or own or self.name
            except HubError as error:
                self.reset()
                reason = "engine-crashed" if error.reason == "time" else error.reason
                raise Fault(reason, f"{self.name}: start-up failed: {error}") from None
        try:
            self.process.send("new-game")
        except HubError as error:
            raise self._fault(error) from None

    def ask(self, pos: Position, history: list[str], clock: Clock) -> Reply:
        assert self.process is not None and self.game is not None
        moves = " ".join(history)
        line = f"pos pos={position_text(self.game.start)}"
        if moves:
            line += f' moves="{moves}"'
        started = time.monotonic()
        try:
            answer = self.process.go(line, clock.level(self.spec.depth), started + clock.budget())
        except HubError as error:
            raise self._fault(error) from None
        seconds = time.monotonic() - started
        note = "; ".join(e for e in answer.errors if e)
        if answer.move is None:
            return Reply(seconds, claim="loss", note=note or "done without a move")
        return Reply(seconds, text=answer.move, note=note, score=_hundredths(answer.score))

    def reset(self) -> None:
        """After a fault: a moment to quit, then the process is ended."""
        if self.process is not None:
            self.process.close(wait=0.2)
            self.process = None

    def close(self) -> None:
        if self.process is not None:
            self.process.close()
            self.process = None


def _hundredths(score: str | None) -> float | None:
    """Hub's ``score=`` (in men) in hundredths of a man; None when absent or unreadable."""
    try:
        return None if score is None else round(float(score) * 100, 6)
    except ValueError:
        return None


class _Dxp(Engine):
    """What both DXP roles share: the game as relayed moves and a GAMEEND."""

    last = False  # the current game is the match's last (its GAMEEND says so)

    def __init__(self, spec: Spec, label: str, port: int | None = None) -> None:
        self.spec = spec
        self.port = spec.port if port is None else port
        self.name = spec.name or label
        self.conn: dxp.Connection | None = None
        self.since = 0.0  # when the engine's current turn began
        self.ended = False  # the engine has sent its GAMEEND

    def _fault(self, error: dxp.DxpError) -> Fault:
        return Fault(error.reason, f"{self.name}: {error}")

    def _send(self, text: str) -> None:
        assert self.conn is not None
        try:
            self.conn.send(text)
        except dxp.DxpError as error:
            raise self._fault(error) from None

    def ask(self, pos: Position, history: list[str], clock: Clock) -> Reply:
        assert self.conn is not None
        deadline = self.since + clock.budget()
        while True:
            try:
                text = self.conn.receive(max(0.0, deadline - time.monotonic()))
            except dxp.DxpError as error:
                raise self._fault(error) from None
            if text is None:
                raise Fault("time", f"{self.name}: no move within {clock.budget():.1f} s")
            reply = self._turn_message(text)
            if reply is not None:
                return reply

    def _turn_message(self, text: str) -> Reply | None:
        try:
            message = dxp.parse(text)
        except dxp.MalformedMessage as error:
            raise self._fault(error) from None
        seconds = time.monotonic() - self.since
        if isinstance(message, dxp.DxpMove):
            return Reply(seconds, squares=(message.frm, message.to, message.captures))
        if isinstance(message, dxp.GameEnd):
            self.ended = True
            return Reply(seconds, claim=message.reason, note=f"GAMEEND {text}")
        if isinstance(message, dxp.BackReq):
            self._send(dxp.backacc("1"))  # take-backs are not part of a refereed game
            return None
        if isinstance(message, dxp.Chat):
            return None
        raise Fault("malformed-message", f"{self.name}: {text[:40]!r} out of place in a game")

    def tell(self, move: Move) -> None:
        self._send(dxp.move(move.frm, move.to, sorted(move.captures)))
        self.since = time.monotonic()

    def poll(self) -> Reply | None:
        if self.conn is None:
            return None
        while True:
            try:
                text = self.conn.receive(None)
            except dxp.DxpError as error:
                raise self._fault(error) from None
            if text is None:
                return None
            reply = self._turn_message(text)
            if reply is not None:
                if reply.claim is None:
                    raise Fault("illegal-move", f"{self.name}: moved {reply.shown()} out of turn")
                return reply

    def finish(self, engine_score: int | None) -> None:
        if self.conn is None:
            return
        mine = {2: "loss", 1: "draw", 0: "win", None: "unknown"}[engine_score]
        try:
            self.conn.send(dxp.gameend(mine, self.last))
            deadline = time.monotonic() + END_TIMEOUT
            while not self.ended:  # its confirmation; a late move or chat is dropped
                text = self.conn.receive(max(0.0, deadline - time.monotonic()))
                if text is None:
                    break
                if text.startswith("E"):
                    break
        except dxp.DxpError:
            self.reset()

    def reset(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class DxpEngine(_Dxp):
    """``dxp:HOST:PORT``: the referee connects and sends the GAMEREQ."""

    def begin(self, game: GameSetup) -> None:
        self.ended = False
        self.last = game.last
        if self.conn is None:
            try:
                self.conn = dxp.Connection.connect(self.spec.host, self.port, CONNECT_TIMEOUT)
            except dxp.DxpError as error:
                raise self._fault(error) from None
        minutes, moves = game.control.dxp_fields()
        initial = game.position == Position.start(game.position.variant)
        self._send(
            dxp.gamereq(
                game.opponent, game.white, minutes, moves, None if initial else game.position
            )
        )
        deadline = time.monotonic() + CONNECT_TIMEOUT
        while True:
            try:
                text = self.conn.receive(max(0.0, deadline - time.monotonic()))
                message = None if text is None else dxp.parse(text)
            except dxp.DxpError as error:
                raise self._fault(error) from None
            if message is None:
                raise Fault("refused", f"{self.name}: no GAMEACC within {CONNECT_TIMEOUT:g} s")
            if isinstance(message, dxp.GameAcc):
                break
            if not isinstance(message, (dxp.Chat, dxp.GameEnd)):
                raise Fault("malformed-message", f"{self.name}: {text!r} instead of a GAMEACC")
        if message.code != "0":
            raise Fault("refused", f"{self.name}: GAMEACC code {message.code}: game refused")
        self.name = self.spec.name or message.name or self.name
        self.since = time.monotonic()


class DxpListenEngine(_Dxp):
    """``dxp-listen:PORT``: the engine connects and sends the GAMEREQ."""

    def __init__(self, spec: Spec, label: str, port: int | None = None) -> None:
        super().__init__(spec, label, port)
        self.server: socket.socket | None = None

    def _listen(self) -> socket.socket:
        if self.server is None:
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                server.bind(("", self.port))
            except OSError as error:
                server.close()
                raise Fault("disconnected", f"cannot listen on port {self.port}: {error}") from None
            server.listen(1)
            self.server = server
        return self.server

    def begin(self, game: GameSetup) -> None:
        self.ended = False
        self.last = game.last
        deadline = time.monotonic() + CONNECT_TIMEOUT
        if self.conn is None:
            server = self._listen()
            server.settimeout(CONNECT_TIMEOUT)
            try:
                sock, addr = server.accept()
            except OSError:
                raise Fault(
                    "disconnected", f"{self.name}: no connection on port {self.port}"
                ) from None
            sock.settimeout(None)
            self.conn = dxp.Connection(sock, f"{addr[0]}:{addr[1]}")
        while True:
            try:
                text = self.conn.receive(max(0.0, deadline - time.monotonic()))
                message = None if text is None else dxp.parse(text)
            except dxp.DxpError as error:
                raise self._fault(error) from None
            if message is None:
                raise Fault("refused", f"{self.name}: no acceptable GAMEREQ in time")
            if isinstance(message, dxp.Chat):
                continue
            if not isinstance(message, dxp.GameReq):
                raise Fault("malformed-message", f"{self.name}: {text!r} instead of a GAMEREQ")
            code = _refusal(message, game)
            if code == "0":
                break
            self._send(dxp.gameacc(game.opponent, code))
            self._send(dxp.chat(_expected(game)))
        self.name = self.spec.name or message.name or self.name
        self._send(dxp.gameacc(game.opponent, "0"))
        self.since = time.monotonic()

    def close(self) -> None:
        self.reset()
        if self.server is not None:
            self.server.close()
            self.server = None


def _refusal(req: dxp.GameReq, game: GameSetup) -> str:
    """GAMEACC's code for a GAMEREQ against the scheduled game (the referee is the follower,
    so it plays the colour the engine does not)."""
    if req.follower_white == game.white:
        return "1"
    minutes, moves = game.control.dxp_fields()
    if (req.minutes, req.moves) != (minutes, moves):
        return "2"
    initial = game.position == Position.start(game.position.variant)
    if req.position is None:
        return "0" if initial else "3"
    p = req.position
    same = (p.white_men, p.white_kings, p.black_men, p.black_kings, p.white_to_move) == (
        game.position.white_men,
        game.position.white_kings,
        game.position.black_men,
        game.position.black_kings,
        game.position.white_to_move,
    )
    return "0" if same else "3"


def _expected(game: GameSetup) -> str:
    colour = "white" if game.white else "black"
    minutes, moves = game.control.dxp_fields()
    return (
        f"referee: this game is you as {colour}, {minutes} min/{moves} moves, "
        f"from {game.position.fen()}"
    )
