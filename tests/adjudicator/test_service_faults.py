"""Faults tried as an attacker or a careless user would, against the real server: idle
connections, huge numbers, Unicode digits."""

from __future__ import annotations

import os
import socket
import time

import httpx
import pytest
from service_helpers import shared_service, start_server


@pytest.fixture(scope="module")
def server(request, tmp_path_factory):
    return shared_service(request, tmp_path_factory)


def _sockets(pid: int) -> int:
    """Open sockets of a process (a descriptor closing meanwhile is not counted)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except FileNotFoundError:
            continue
    return count


def test_idle_connections_are_bounded_and_time_out(server, tmp_path):
    env = {"ADJUDICATOR_MAX_CONNECTIONS": "20", "ADJUDICATOR_IDLE_SECONDS": "1"}
    bounded = start_server(server.data, tmp_path / "bounded.log", env)
    try:
        host, port = bounded.url.removeprefix("http://").split(":")
        idle = [socket.create_connection((host, int(port))) for _ in range(80)]
        time.sleep(0.3)
        assert _sockets(bounded.process.pid) <= 20 + 3  # the listener and a few in flight
        time.sleep(1.5)  # past the idle timeout every idle connection is closed
        assert httpx.get(f"{bounded.url}/health", timeout=5).status_code == 200
        deadline = time.monotonic() + 5  # the /health connection itself closes a moment later
        while _sockets(bounded.process.pid) > 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _sockets(bounded.process.pid) <= 3
        for s in idle:
            s.close()
        assert "Traceback" not in bounded.log.read_text(errors="replace")
    finally:
        bounded.stop()


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes ``sock`` (EOF or reset) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_request_that_stops_halfway_is_closed_after_its_deadline(server, tmp_path):
    env = {"ADJUDICATOR_REQUEST_SECONDS": "1", "ADJUDICATOR_IDLE_SECONDS": "30"}
    slow = start_server(server.data, tmp_path / "slow.log", env)
    try:
        host, port = slow.url.removeprefix("http://").split(":")
        half_header = socket.create_connection((host, int(port)))
        half_header.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # no blank line
        half_body = socket.create_connection((host, int(port)))
        half_body.sendall(
            b"POST /adjudicate HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 100\r\n\r\n1. 32-28"
        )
        # far sooner than the idle timeout (30 s): the request deadline (1 s) closes both
        assert _closed_within(half_header, 4)
        assert _closed_within(half_body, 4)
        # a whole request on a connection kept open is answered and not cut by the deadline
        whole = socket.create_connection((host, int(port)))
        whole.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        whole.settimeout(5)
        assert whole.recv(64).startswith(b"HTTP/1.1 200")
        assert not _closed_within(whole, 2)  # kept alive past the 1 s request deadline
        for s in (half_header, half_body, whole):
            s.close()
        assert "Traceback" not in slow.log.read_text(errors="replace")
    finally:
        slow.stop()


@pytest.mark.parametrize(
    "body, status, words",
    [
        ("1. 3" + "2" * 5000 + "-28 *", 400, "number too long"),  # malformed PDN: the request
        ("1" + "0" * 5000 + ". 32-28 *", 400, "number too long"),
        (f'[FEN "W:W{"3" * 5000}:B1"]\n\n*', 200, "not a square"),  # a bad tag: that game
    ],
)
def test_huge_numbers_are_a_precise_4xx_or_ruling(server, body, status, words):
    r = httpx.post(f"{server.url}/adjudicate", content=body, headers={"content-type": "text/plain"})
    assert r.status_code == status, r.text
    assert words in r.text
    if status == 200:
        assert r.json()[0]["reason"] == "bad-tag"


def test_huge_and_unicode_fen_in_probe(server):
    # a FEN longer than the query's limit fails validation (422); a full-width digit is a
    # malformed FEN (400)
    for fen, status in (("W:W" + "3" * 5000 + ":B1", 422), ("W:W２１:B3", 400)):
        r = httpx.get(f"{server.url}/probe", params={"fen": fen})
        assert r.status_code == status, r.text
        assert "error" in r.json()
