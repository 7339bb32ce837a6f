"""Engine specs: how the referee reaches an engine, as ``--engine`` gives it.

Two shapes. The short ones:

- ``dxp:HOST:PORT[,PORT...]`` - the engine listens; the referee connects (one game at a
  time per port: several ports serve several games at once);
- ``dxp-listen:PORT[,PORT...]`` - the referee listens; the engine connects;
- ``hub:COMMAND LINE`` - a Hub engine process started by the referee.

The long one, in cutechess's shape, ``name=value`` words (quoted as a shell would):
``name=Scan cmd=./scan arg=hub dir=/opt/scan proto=hub option.book=false``:

- ``proto`` - ``hub`` (default when ``cmd`` is given), ``dxp`` or ``dxp-listen``;
- ``cmd`` - the program (Hub), started with ``arg`` words (``arg=`` may repeat) in the
  folder ``dir`` (its working directory; a relative ``cmd`` is looked up there first),
  without a shell;
- ``name`` - the name shown in the output and the PDN (default: the engine's own);
- ``option.NAME=VALUE`` - a Hub parameter, sent as ``set-param`` before ``init``; the
  engine must declare it (``param name=NAME``), or the match does not start;
- ``depth=N`` - this Hub engine searches ``N`` plies a move (``level depth=N``), whatever the
  match's ``--depth``;
- ``host`` (default ``127.0.0.1``) and ``port`` (``port=P1,P2`` or repeated) for DXP.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field, replace

KINDS = ("hub", "dxp", "dxp-listen")
KEYS = ("name", "cmd", "arg", "dir", "proto", "host", "port", "depth")


class SpecError(ValueError):
    """An engine spec that cannot be read."""


@dataclass(frozen=True)
class Spec:
    """One engine of a match."""

    kind: str  # "dxp", "dxp-listen", "hub"
    host: str = ""
    port: int = 0  # the first port (DXP)
    command: str = ""  # the command line as one text (Hub), for messages
    text: str = ""  # the spec as given
    name: str = ""  # the display name given (name=), "" for the engine's own
    args: tuple[str, ...] = ()  # the program and its arguments (Hub)
    dir: str | None = None  # the working folder (Hub)
    options: tuple[tuple[str, str], ...] = ()  # Hub parameters, in the order given
    ports: tuple[int, ...] = field(default=())  # every port (DXP)
    depth: int | None = None  # Hub: level depth= for this engine

    def with_option(self, name: str, value: str) -> Spec:
        """This spec with the Hub option ``name`` set to ``value`` (replacing it)."""
        kept = tuple((n, v) for n, v in self.options if n != name)
        return replace(self, options=kept + ((name, value),))

    def option(self, name: str) -> str | None:
        return dict(self.options).get(name)

    def shown(self) -> str:
        """How messages name this engine."""
        return self.name or self.text


def parse_spec(text: str) -> Spec:
    """Read one ``--engine`` value (either shape)."""
    kind, sep, rest = text.partition(":")
    if sep and kind in KINDS:
        return _short(text, kind, rest)
    if sep and "=" not in kind and " " not in kind:
        raise SpecError(
            f"engine {text!r}: unknown kind {kind!r} (dxp, dxp-listen or hub; or the "
            "NAME=VALUE form: cmd=... proto=...)"
        )
    return _long(text)


def _short(text: str, kind: str, rest: str) -> Spec:
    if kind == "hub":
        if not rest.strip():
            raise SpecError(f"engine {text!r}: hub: needs a command line")
        try:
            args = tuple(shlex.split(rest))
        except ValueError as error:
            raise SpecError(f"engine {text!r}: cannot read the command line: {error}") from None
        return Spec("hub", command=rest.strip(), text=text, args=args)
    if kind == "dxp":
        host, sep, ports = rest.rpartition(":")
        if not sep or not host:
            raise SpecError(f"engine {text!r}: expected dxp:HOST:PORT")
        numbers = _ports(text, ports.split(","))
        return Spec("dxp", host=host, port=numbers[0], text=text, ports=numbers)
    numbers = _ports(text, rest.split(","))
    return Spec("dxp-listen", port=numbers[0], text=text, ports=numbers)


def _long(text: str) -> Spec:
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise SpecError(f"engine {text!r}: cannot read it: {error}") from None
    fields: dict[str, str] = {}
    args: list[str] = []
    ports: list[str] = []
    options: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep:
            raise SpecError(
                f"engine {text!r}: {word!r} is not NAME=VALUE (expected dxp:HOST:PORT, "
                "dxp-listen:PORT, hub:COMMAND or cmd=... proto=... name=... dir=... "
                "arg=... option.NAME=VALUE)"
            )
        if key.startswith("option."):
            name = key[len("option.") :]
            if not name:
                raise SpecError(f"engine {text!r}: option. needs a name (option.NAME=VALUE)")
            options[name] = value
        elif key == "arg":
            args.append(value)
        elif key == "port":
            ports.extend(value.split(","))
        elif key in KEYS:
            if key in fields:
                raise SpecError(f"engine {text!r}: {key}= given twice")
            fields[key] = value
        else:
            raise SpecError(
                f"engine {text!r}: unknown key {key!r} (known: {', '.join(KEYS)}, option.NAME)"
            )
    kind = fields.get("proto", "hub" if "cmd" in fields else "")
    if kind not in KINDS:
        raise SpecError(f"engine {text!r}: proto must be hub, dxp or dxp-listen, not {kind!r}")
    name = fields.get("name", "")
    if kind == "hub":
        return _long_hub(text, fields, args, options, ports, name)
    if "cmd" in fields or args or "dir" in fields or "depth" in fields:
        raise SpecError(
            f"engine {text!r}: the referee does not start DXP engines (cmd=, arg=, dir=, "
            "depth= are for Hub engines): start it first and give its port"
        )
    if options:
        raise SpecError(f"engine {text!r}: DXP has no engine options (option.NAME is Hub's)")
    if not ports:
        raise SpecError(f"engine {text!r}: proto={kind} needs port=")
    numbers = _ports(text, ports)
    host = fields.get("host", "127.0.0.1")
    return Spec(kind, host=host, port=numbers[0], text=text, name=name, ports=numbers)


def _long_hub(
    text: str,
    fields: dict[str, str],
    args: list[str],
    options: dict[str, str],
    ports: list[str],
    name: str,
) -> Spec:
    if ports or "host" in fields:
        raise SpecError(f"engine {text!r}: host= and port= are for DXP engines")
    cmd = fields.get("cmd", "")
    if not cmd:
        raise SpecError(f"engine {text!r}: a Hub engine needs cmd=PROGRAM")
    folder = fields.get("dir")
    if folder is not None:
        folder = os.path.abspath(os.path.expanduser(folder))
        if not os.path.isdir(folder):
            raise SpecError(f"engine {text!r}: dir={fields['dir']} is not a folder")
        local = os.path.join(folder, cmd)
        if os.sep in cmd and not os.path.isabs(cmd):
            if not os.path.isfile(local):
                raise SpecError(f"engine {text!r}: cmd={cmd}: no such file in {folder}")
            cmd = os.path.normpath(local)  # ./scan in its folder, with no shell to resolve it
    line = " ".join(shlex.quote(a) for a in (cmd, *args))
    depth = fields.get("depth")
    if depth is not None and (not depth.isdigit() or int(depth) < 1):
        raise SpecError(f"engine {text!r}: depth must be a whole number >= 1, not {depth!r}")
    return Spec(
        "hub",
        command=line,
        text=text,
        name=name,
        args=(cmd, *args),
        dir=folder,
        options=tuple(options.items()),
        depth=None if depth is None else int(depth),
    )


def _ports(text: str, ports: list[str]) -> tuple[int, ...]:
    out = []
    for port in ports:
        port = port.strip()
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise SpecError(f"engine {text!r}: {port!r} is not a port number (1-65535)")
        if int(port) in out:
            raise SpecError(f"engine {text!r}: port {port} given twice")
        out.append(int(port))
    return tuple(out)
