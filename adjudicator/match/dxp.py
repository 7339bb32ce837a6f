"""DXP (DamExchange Protocol): the messages and one connection.

Layer 1 is a TCP stream of ASCII messages, each ended by a NUL byte. Layer 2 (Mesander's
layouts) gives each message a one-letter type and fixed-width fields:

- GAMEREQ ``R`` + version ``01`` + initiator name (32, space padded) + the follower's colour
  (``W`` white, ``Z`` black) + minutes for the game (3 digits) + moves for that time
  (3 digits) + ``A`` (the initial position) or ``B`` + the side to move (``W``/``Z``) + 50
  squares (``e`` empty, ``w``/``z`` white/black man, ``W``/``Z`` white/black king);
- GAMEACC ``A`` + follower name (32) + acceptance code (``0`` accepted, ``1`` not with this
  colour, ``2`` not with this time, ``3`` not with this position, ``9`` no reason given);
- MOVE ``M`` + time used in seconds (4) + from (2) + to (2) + number captured (2) + each
  captured square (2 each);
- GAMEEND ``E`` + reason (``0`` unknown, ``1`` I lose, ``2`` draw, ``3`` I win) + stop code
  (``0`` another game may follow, ``1`` no more games);
- CHAT ``C`` + text; BACKREQ ``B`` + move number (3) + side to move (1); BACKACC ``K`` +
  code (``0`` accepted, ``1`` not supported, ``2`` declined).

:func:`parse` reads one message strictly (a wrong length, a non-digit where digits belong,
an unknown type: :class:`MalformedMessage`); :class:`Connection` frames the stream, with a
timeout per read. DXP is International only (50 squares).
"""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass

from tablebase.rules.position import Position

MAX_MESSAGE = 1024  # bytes before a NUL: longer is not a DXP message (layer 2 has <= 127)
NAME_WIDTH = 32
SQUARES = 50
GAMEEND_REASONS = {"0": "unknown", "1": "loss", "2": "draw", "3": "win"}
REASON_CODES = {v: k for k, v in GAMEEND_REASONS.items()}


class DxpError(Exception):
    """A DXP connection failed; ``reason`` is the match's name for what happened."""

    reason = "disconnected"


class Disconnected(DxpError):
    """The peer closed the connection or it broke."""


class MalformedMessage(DxpError):
    """Bytes that are not a DXP message."""

    reason = "malformed-message"


@dataclass(frozen=True)
class GameReq:
    name: str
    follower_white: bool
    minutes: int
    moves: int
    position: Position | None  # None: the initial position


@dataclass(frozen=True)
class GameAcc:
    name: str
    code: str


@dataclass(frozen=True)
class DxpMove:
    seconds: int
    frm: int
    to: int
    captures: tuple[int, ...]


@dataclass(frozen=True)
class GameEnd:
    reason: str  # "unknown", "loss", "draw", "win": the sender's claim
    stop: bool


@dataclass(frozen=True)
class Chat:
    text: str


@dataclass(frozen=True)
class BackReq:
    move: int
    white: bool


@dataclass(frozen=True)
class BackAcc:
    code: str


Message = GameReq | GameAcc | DxpMove | GameEnd | Chat | BackReq | BackAcc


# ----------------------------------------------------------------------------- writing


def board_text(pos: Position) -> str:
    """The 50 squares as GAMEREQ writes them."""
    return pos.square_chars("wWzZe")


def gamereq(name: str, follower_white: bool, minutes: int, moves: int, pos: Position | None) -> str:
    """A GAMEREQ; ``pos`` None asks for the initial position."""
    if not (0 <= minutes <= 999 and 0 <= moves <= 999):
        raise ValueError("DXP carries minutes and moves as 3 digits (0-999)")
    head = f"R01{_name(name)}{'W' if follower_white else 'Z'}{minutes:03d}{moves:03d}"
    if pos is None:
        return head + "A"
    return head + "B" + ("W" if pos.white_to_move else "Z") + board_text(pos)


def gameacc(name: str, code: str = "0") -> str:
    return f"A{_name(name)}{code}"


def move(frm: int, to: int, captures: tuple[int, ...] | list[int], seconds: int = 0) -> str:
    caps = "".join(f"{c:02d}" for c in captures)
    return f"M{min(seconds, 9999):04d}{frm:02d}{to:02d}{len(captures):02d}{caps}"


def gameend(reason: str, stop: bool = False) -> str:
    """``reason`` from the sender's side: "unknown", "loss", "draw" or "win"."""
    return f"E{REASON_CODES[reason]}{1 if stop else 0}"


def chat(text: str) -> str:
    return "C" + "".join(c if 32 <= ord(c) < 127 else "?" for c in text)[:126]


def backacc(code: str) -> str:
    return "K" + code


def _name(name: str) -> str:
    clean = "".join(c if 32 <= ord(c) < 127 else "?" for c in name)
    return clean[:NAME_WIDTH].ljust(NAME_WIDTH)


# ----------------------------------------------------------------------------- reading


def parse(text: str) -> Message:
    """One message (without its NUL); :class:`MalformedMessage` if it is not one."""
    kind, body = text[:1], text[1:]
    try:
        if kind == "R":
            return _gamereq(body)
        if kind == "A":
            _length(body, NAME_WIDTH + 1)
            return GameAcc(body[:NAME_WIDTH].strip(), body[NAME_WIDTH])
        if kind == "M":
            return _move(body)
        if kind == "E":
            _length(body, 2)
            if body[0] not in GAMEEND_REASONS or body[1] not in "01":
                raise ValueError("reason or stop code out of range")
            return GameEnd(GAMEEND_REASONS[body[0]], body[1] == "1")
        if kind == "C":
            return Chat(body)
        if kind == "B":
            _length(body, 4)
            if body[3] not in "WZ":
                raise ValueError("colour must be W or Z")
            return BackReq(_digits(body[:3]), body[3] == "W")
        if kind == "K":
            _length(body, 1)
            return BackAcc(body)
    except ValueError as error:
        raise MalformedMessage(f"{_show(text)}: {error}") from None
    raise MalformedMessage(f"{_show(text)}: unknown message type")


def _gamereq(body: str) -> GameReq:
    if len(body) < 2 + NAME_WIDTH + 8:
        raise ValueError("too short for a GAMEREQ")
    at = 2 + NAME_WIDTH
    name = body[2:at].strip()
    colour, minutes, moves, kind = (
        body[at],
        body[at + 1 : at + 4],
        body[at + 4 : at + 7],
        body[at + 7],
    )
    if colour not in "WZ":
        raise ValueError("follower colour must be W or Z")
    pos = None
    if kind == "B":
        rest = body[at + 8 :]
        _length(rest, 1 + SQUARES)
        pos = _position(rest[0], rest[1:])
    elif kind != "A" or len(body) != at + 8:
        raise ValueError("position indicator must be A, or B with a position")
    return GameReq(name, colour == "W", _digits(minutes), _digits(moves), pos)


def _position(to_move: str, squares: str) -> Position:
    if to_move not in "WZ":
        raise ValueError("side to move must be W or Z")
    boards = {"w": 0, "W": 0, "z": 0, "Z": 0}
    for i, c in enumerate(squares):
        if c in boards:
            boards[c] |= 1 << i
        elif c != "e":
            raise ValueError(f"square {i + 1}: {c!r} is not e, w, z, W or Z")
    return Position(boards["w"], boards["W"], boards["z"], boards["Z"], to_move == "W")


def _move(body: str) -> DxpMove:
    if len(body) < 10:
        raise ValueError("too short for a MOVE")
    n = _digits(body[8:10])
    _length(body, 10 + 2 * n)
    caps = tuple(_digits(body[10 + 2 * i : 12 + 2 * i]) for i in range(n))
    return DxpMove(_digits(body[:4]), _digits(body[4:6]), _digits(body[6:8]), caps)


def _digits(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise ValueError(f"{text!r} is not a number")
    return int(text)


def _length(body: str, n: int) -> None:
    if len(body) != n:
        raise ValueError(f"{len(body) + 1} characters where {n + 1} belong")


def _show(text: str, width: int = 60) -> str:
    shown = text.encode("ascii", "backslashreplace").decode("ascii")
    return repr(shown if len(shown) <= width else shown[: width - 1] + "…")


# ----------------------------------------------------------------------------- connection


class Connection:
    """One TCP connection carrying NUL-ended messages."""

    def __init__(self, sock: socket.socket, peer: str) -> None:
        self.sock = sock
        self.peer = peer
        self.buffer = b""
        self.closed = False

    @classmethod
    def connect(cls, host: str, port: int, timeout: float) -> Connection:
        """Connect to an engine listening on ``host:port``."""
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as error:
            raise Disconnected(f"cannot connect to {host}:{port}: {error}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock, f"{host}:{port}")

    def send(self, text: str) -> None:
        if self.closed:
            raise Disconnected(f"{self.peer}: connection closed")
        try:
            self.sock.sendall(text.encode("ascii") + b"\0")
        except OSError as error:
            self.close()
            raise Disconnected(f"{self.peer}: {error}") from None

    def receive(self, timeout: float | None) -> str | None:
        """The next message's text, or None if none came within ``timeout`` seconds (None:
        only what has already arrived)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            at = self.buffer.find(b"\0")
            if at >= 0:
                raw, self.buffer = self.buffer[:at], self.buffer[at + 1 :]
                return self._decode(raw)
            if len(self.buffer) > MAX_MESSAGE:
                raise MalformedMessage(
                    f"{self.peer}: {len(self.buffer)} bytes without a message end (NUL)"
                )
            left = 0.0 if deadline is None else max(0.0, deadline - time.monotonic())
            if self.closed:
                raise Disconnected(f"{self.peer}: connection closed")
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return None
            try:
                chunk = self.sock.recv(4096)
            except OSError as error:
                self.close()
                raise Disconnected(f"{self.peer}: {error}") from None
            if not chunk:
                self.close()
                if self.buffer:
                    raise MalformedMessage(
                        f"{self.peer}: closed in the middle of a message "
                        f"{_show(self.buffer.decode('latin-1'))}"
                    )
                raise Disconnected(f"{self.peer}: the engine closed the connection")
            self.buffer += chunk

    def _decode(self, raw: bytes) -> str:
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise MalformedMessage(
                f"{self.peer}: bytes that are not ASCII {_show(raw.decode('latin-1'))}"
            ) from None
        if not text.startswith("C") and any(ord(c) < 32 for c in text):
            raise MalformedMessage(f"{self.peer}: control characters in {_show(text)}")
        return text

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass
