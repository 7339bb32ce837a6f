"""Helpers of the match tests: fake engines started as processes, a small database, a match
run in-process with its PDN read back and ruled by ``adjudicator rule``."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from adjudicator import rule_file
from adjudicator.drawrules import RuleOptions
from adjudicator.match import Match, Referee, TimeControl, parse_spec, run_match
from adjudicator.match.openings import initial, load
from adjudicator.pdn import read_games
from tablebase.rules.variants import INTERNATIONAL

FAKES = Path(__file__).parent / "fake_engines"
PYTHON = sys.executable


def hub_fake(name: str = "HubFake", fault: str | None = None, once: Path | None = None) -> str:
    """The spec of a fake Hub engine (``once``: a file marking the fault as done)."""
    extra = f" --fault {fault}" if fault else ""
    extra += f" --once {once}" if once else ""
    return f"hub:{PYTHON} {FAKES / 'hub_fake.py'} --name {name}{extra}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def dxp_fake(name: str = "DxpFake", fault: str | None = None):
    """A fake DXP engine listening on a free port; yields its spec."""
    port = free_port()
    cmd = [PYTHON, str(FAKES / "dxp_fake.py"), "--port", str(port), "--name", name]
    if fault:
        cmd += ["--fault", fault]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "listening", proc.stderr.read()
        yield f"dxp:127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def dxp_initiator(port: int, colours: str = "WB", wrong_first: bool = False):
    """A fake DXP engine that connects to the referee on ``port`` and requests the games."""
    cmd = [PYTHON, str(FAKES / "dxp_fake.py"), "--port", str(port), "--connect",
           "--colours", colours]  # fmt: skip
    if wrong_first:
        cmd.append("--wrong-first")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def play(
    tmp_path: Path,
    engines: tuple[str, str],
    fens: list[str] | None = None,
    games: int = 2,
    tables=None,
    openings_file: Path | None = None,
    **referee,
):
    """Run a match; returns (records, score, the PDN's games, their rulings by
    ``adjudicator rule`` as JSON objects)."""
    openings = [initial(INTERNATIONAL)]
    if openings_file is not None:
        openings = load(str(openings_file), INTERNATIONAL)
    if fens:
        path = tmp_path / "openings.txt"
        path.write_text("\n".join(fens) + "\n")
        openings = load(str(path), INTERNATIONAL)
    control = referee.pop("control", TimeControl(minutes=1))
    referee.setdefault("max_plies", 300)
    ref = Referee(control, RuleOptions(), tables, **referee)
    match = Match(
        (parse_spec(engines[0]), parse_spec(engines[1])), games, openings, ref, INTERNATIONAL
    )
    pdn = tmp_path / "games.pdn"
    records, score = run_match(match, str(pdn))
    return records, score, list(read_games(str(pdn))), rule(pdn, tables)


def rule(pdn: Path, tables=None) -> list[dict]:
    """``adjudicator rule --json [--db]`` of the PDN, in-process (the function it calls)."""
    return [r.to_dict() for r in rule_file(str(pdn), db=tables)]


MOBYDAM = os.environ.get("MOBYDAM")
MOBYDAM_MISSING = (
    "Moby Dam not built: set MOBYDAM to its binary (.ci/run builds it from ../shared/engines "
    "into build/engines/ when ../shared exists)"
)


@contextlib.contextmanager
def mobydam(workdir: Path, ms: int = 100, binary: str | None = None):
    """Moby Dam listening on a free port with a hard limit of ``ms`` per move; yields its
    spec. Its stdin is held open (at the end of its input it would spin) and ``exit`` ends
    it; its book is the ``book.opn`` beside the binary."""
    binary = binary or MOBYDAM
    assert binary, MOBYDAM_MISSING
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    out = open(workdir / "stdout.txt", "w")  # noqa: SIM115
    book = Path(binary).with_name("book.opn")
    proc = subprocess.Popen(
        [binary, "-b", str(book), "-p", str(port), "-t", "20", "-l", "engine.log", "-m", "dxp.log"],
        stdin=subprocess.PIPE,
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while "listening on port" not in (workdir / "stdout.txt").read_text():
            assert proc.poll() is None and time.monotonic() < deadline, "Moby Dam did not start"
            time.sleep(0.05)
        proc.stdin.write(f"time {ms}\n")
        proc.stdin.flush()
        yield f"dxp:127.0.0.1:{port}"
    finally:
        try:
            proc.stdin.write("exit\n")
            proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        out.close()
