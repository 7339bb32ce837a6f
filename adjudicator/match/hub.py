"""The Hub protocol (Scan's, version 2): the referee's side of one engine process.

Lines go both ways on the engine's stdin and stdout, each ``command name=value ...``, values
with spaces in double quotes. The exchange the referee uses:

- ``hub`` -> ``id name=... version=...``, ``param ...`` lines, ``wait``; then a
  ``set-param name=... value=...`` per option given, and ``init`` -> ``ready`` (start-up).
  Each option must be one of the declared ``param`` names, with a value its ``type`` allows
  (``bool``: true/false, ``int``/``real`` within ``min``/``max``, ``enum`` one of
  ``values``), else :func:`check_options` says why;
- per game ``new-game``; per move ``pos pos=<51 characters> moves="..."`` (the game's start
  position, ``W``/``B`` then 50 squares ``e w b W B``, and every move since, so that the
  engine knows the repetition history), ``level ...`` (``move-time=S``, or ``time=S`` left
  on the clock with ``moves=N`` to the next control and ``inc=S``), ``go think`` ->
  ``info ...`` lines and ``done move=... ponder=...``;
- ``quit`` at the end.

Unknown commands are ignored, as the protocol asks; bytes that are not text, or a line
longer than :data:`MAX_LINE`, are a malformed message. A reader thread queues the lines
so that every wait has a timeout.
"""

from __future__ import annotations

import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from tablebase.probe.hub import parse_position, position_text

__all__ = [
    "Answer",
    "HubProcess",
    "Param",
    "check_options",
    "parse_line",
    "parse_position",
    "position_text",
    "quote",
]

MAX_LINE = 64 * 1024
_EOF = object()


class HubError(Exception):
    """The engine process failed; ``reason`` is the match's name for what happened."""

    reason = "engine-crashed"


class Crashed(HubError):
    """The process ended or closed its output."""


class Malformed(HubError):
    reason = "malformed-message"


class TimedOut(HubError):
    reason = "time"


def parse_line(line: str) -> tuple[str, dict[str, str]]:
    """``command`` and its ``name=value`` pairs (a bare name has the value ``""``)."""
    try:
        tokens = shlex.split(line, posix=True)
    except ValueError as error:
        raise Malformed(f"cannot read {line[:80]!r}: {error}") from None
    if not tokens:
        return "", {}
    args = {}
    for token in tokens[1:]:
        name, _, value = token.partition("=")
        args[name] = value
    return tokens[0], args


def quote(value: str) -> str:
    """A value as the protocol writes it: quoted when it has a space or ``=`` or is empty."""
    if value and not any(c in value for c in ' ="'):
        return value
    return '"' + value.replace('"', "'") + '"'


@dataclass(frozen=True)
class Param:
    """A parameter an engine declares: ``param name=... value=... type=... ...``."""

    name: str
    value: str = ""
    type: str = ""
    values: tuple[str, ...] = ()  # enum
    min: str = ""
    max: str = ""

    @staticmethod
    def of(args: dict[str, str]) -> Param:
        return Param(
            args.get("name", ""),
            args.get("value", ""),
            args.get("type", ""),
            tuple(args.get("values", "").split()),
            args.get("min", ""),
            args.get("max", ""),
        )

    def refusal(self, value: str) -> str | None:
        """Why ``value`` is not one this parameter takes, or None."""
        if self.type == "bool" and value not in ("true", "false"):
            return "true or false"
        if self.type == "enum" and self.values and value not in self.values:
            return "one of " + ", ".join(self.values)
        if self.type in ("int", "real"):
            try:
                number = int(value) if self.type == "int" else float(value)
            except ValueError:
                return "an integer" if self.type == "int" else "a number"
            low = float(self.min) if _number(self.min) else None
            high = float(self.max) if _number(self.max) else None
            if (low is not None and number < low) or (high is not None and number > high):
                return f"between {self.min or '-inf'} and {self.max or 'inf'}"
        return None


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_options(engine: str, params: list[Param], options: tuple[tuple[str, str], ...]) -> None:
    """``ValueError`` naming the first option ``params`` do not declare or allow."""
    declared = {p.name: p for p in params}
    for name, value in options:
        param = declared.get(name)
        if param is None:
            known = ", ".join(declared) or "none"
            raise ValueError(f"engine {engine}: unknown option {name!r} (its parameters: {known})")
        why = param.refusal(value)
        if why is not None:
            raise ValueError(f"engine {engine}: option {name}={value}: the value must be {why}")


@dataclass
class Answer:
    """What a ``go`` brought back: the move text (None: ``done`` without a move), the last
    ``info score=``, the ``error`` lines."""

    move: str | None
    score: str | None = None
    errors: list[str] = field(default_factory=list)


class HubProcess:
    """One engine process speaking Hub."""

    def __init__(self, command: str | tuple[str, ...], cwd: str | None = None) -> None:
        self.command = command if isinstance(command, str) else shlex.join(command)
        self.argv = None if isinstance(command, str) else list(command)
        self.cwd = cwd
        self.lines: queue.Queue = queue.Queue()
        self.name = ""
        self.params: list[Param] = []
        self.proc: subprocess.Popen | None = None
        self.stderr_tail: list[str] = []

    def start(
        self, timeout: float, options: tuple[tuple[str, str], ...] = (), init: bool = True
    ) -> str:
        """Launch, set ``options`` and initialise (``init`` False: stop after reading the
        parameters); returns the engine's ``id name``."""
        try:
            args = self.argv if self.argv is not None else shlex.split(self.command)
        except ValueError as error:
            raise Crashed(f"cannot read the command {self.command!r}: {error}") from None
        if not args:
            raise Crashed("empty engine command")
        try:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                start_new_session=True,  # a Ctrl-C of the match is not the engine's
            )
        except OSError as error:
            raise Crashed(f"cannot start {args[0]}: {error}") from None
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        deadline = time.monotonic() + timeout
        self.send("hub")
        while True:
            command, args_ = self.read(deadline, "the start-up (hub ... wait)")
            if command == "id":
                self.name = args_.get("name", "")
            elif command == "param":
                self.params.append(Param.of(args_))
            elif command == "wait":
                break
        if not init:
            return self.name or os.path.basename(args[0])
        for name, value in options:
            self.send(f"set-param name={quote(name)} value={quote(value)}")
        self.send("init")
        while self.read(deadline, "the start-up (init ... ready)")[0] != "ready":
            pass
        return self.name or os.path.basename(args[0])

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        out = self.proc.stdout
        while True:
            raw = out.readline(MAX_LINE + 1)
            if not raw:
                self.lines.put(_EOF)
                return
            self.lines.put(raw)

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr_tail = (self.stderr_tail + [raw.decode("utf-8", "replace").rstrip()])[-5:]

    def send(self, line: str) -> None:
        if self.proc is None or self.proc.stdin is None:
            raise Crashed("the engine is not running")
        try:
            self.proc.stdin.write(line.encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise Crashed(self._ended("while the referee wrote to it")) from None

    def read(self, deadline: float, waiting_for: str) -> tuple[str, dict[str, str]]:
        """The next line with a command, before ``deadline`` (``time.monotonic()``)."""
        while True:
            left = deadline - time.monotonic()
            try:
                raw = self.lines.get(timeout=max(left, 0.0))
            except queue.Empty:
                raise TimedOut(f"no answer in time for {waiting_for}") from None
            if raw is _EOF:
                raise Crashed(self._ended(f"during {waiting_for}"))
            if len(raw) > MAX_LINE:
                raise Malformed(f"a line of more than {MAX_LINE} bytes")
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                shown = raw[:60].decode("latin-1").encode("ascii", "backslashreplace")
                raise Malformed(f"bytes that are not text: {shown.decode()!r}") from None
            if any(ord(c) < 32 and c != "\t" for c in line):
                raise Malformed(f"control characters in {line[:60]!r}")
            command, args = parse_line(line)
            if command:
                return command, args

    def go(self, pos_line: str, level: str, deadline: float) -> Answer:
        """Send the position, the level and ``go think``; wait for ``done``."""
        self.send(pos_line)
        self.send(level)
        self.send("go think")
        answer = Answer(None)
        while True:
            command, args = self.read(deadline, "its move")
            if command == "info" and "score" in args:
                answer.score = args["score"]
            elif command == "error":
                answer.errors.append(args.get("message", ""))
            elif command == "done":
                answer.move = args.get("move") or None
                return answer

    def _ended(self, when: str) -> str:
        code = self.proc.poll() if self.proc is not None else None
        if code is None and self.proc is not None:
            try:
                code = self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                code = None
        how = "closed its output" if code is None else _exit_text(code)
        tail = f" (stderr: {self.stderr_tail[-1][:120]})" if self.stderr_tail else ""
        return f"the engine {how} {when}{tail}"

    def close(self, wait: float = 2.0) -> None:
        """``quit``, then end the process if it has not ended ``wait`` seconds later."""
        proc = self.proc
        if proc is None:
            return
        self.proc = None
        try:
            if proc.poll() is None and proc.stdin is not None:
                proc.stdin.write(b"quit\n")
                proc.stdin.flush()
        except OSError:
            pass
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"
