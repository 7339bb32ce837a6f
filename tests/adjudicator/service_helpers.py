"""Helpers for the service tests: a small database and the real server in a subprocess.

:func:`shared_service` builds the 2-3 piece International and English databases into a
temporary ``data/`` folder and starts ``adjudicator serve`` on a free loopback port, once per
test session however many test modules ask for it; the server is stopped when the session
ends.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import httpx
import pytest
from conftest import session_database

# Small limits so the limit tests send small bodies (the service reads them from the env).
LIMITS = {
    "ADJUDICATOR_MAX_BODY_BYTES": str(64 * 1024),
    "ADJUDICATOR_MAX_GAMES": "25",
    "ADJUDICATOR_MAX_PLIES": "300",
    "ADJUDICATOR_THREADS": "2",
    "ADJUDICATOR_WORKERS": "1",  # one process: the tests count its sockets (one test: 2)
}
START_TIMEOUT = 300.0  # a cold numba cache compiles the move generator first


@dataclass
class Server:
    """A running ``adjudicator serve``: its base URL, process, log file and databases."""

    url: str
    process: subprocess.Popen
    log: Path
    data: Path
    log_handle: BinaryIO

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
        self.log_handle.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_databases(data: Path, tmp_path_factory: pytest.TempPathFactory, pieces: int = 3) -> Path:
    """``data/international`` and ``data/english`` with every slice up to ``pieces``: copies
    of the session's databases (:func:`conftest.session_database`)."""
    for variant in ("international", "english"):
        shutil.copytree(session_database(tmp_path_factory, variant, pieces), data / variant)
    return data


def start_server(data: Path, log: Path, env: dict[str, str] | None = None) -> Server:
    """Start ``adjudicator serve --db data`` on a free port and wait for ``/health``."""
    port = free_port()
    cmd = [sys.executable, "-m", "adjudicator.cli", "serve", "--db", str(data)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    handle = open(log, "wb")  # kept open for the server's lifetime, closed by stop()
    process = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=handle,
        stderr=subprocess.STDOUT,
        env={**os.environ, **LIMITS, **(env or {})},
    )
    server = Server(f"http://127.0.0.1:{port}", process, log, data, handle)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if not server.alive():
            pytest.fail(f"the service exited at start:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{server.url}/health", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    server.stop()
    pytest.fail(f"the service did not answer in {START_TIMEOUT:.0f} s:\n{log.read_text()}")


_SHARED: dict[str, Server] = {}


def shared_service(request: pytest.FixtureRequest, tmp_path_factory) -> Server:
    """The session's server (started on first use, stopped when the session ends)."""
    server = _SHARED.get("server")
    if server is None or not server.alive():
        root = tmp_path_factory.mktemp("service")
        data = build_databases(root / "data", tmp_path_factory)
        server = start_server(data, root / "server.log")
        _SHARED["server"] = server
        request.config.add_cleanup(server.stop)
    return server
