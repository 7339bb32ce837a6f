"""Bounded loopback load test of the adjudication service, one line of figures per case.

    python scripts/load_service.py --db data [--clients 50] [--duration 30] [--mix probe,mixed]
        [--cache 1G] [--pieces 5] [--positions 20000]
    python scripts/load_service.py --url http://127.0.0.1:8000 ...

With ``--db`` the script starts ``adjudicator serve`` on a free loopback port (access log off)
and stops it at the end; with ``--url`` it uses a running service, which must be on a loopback
address. Each case runs ``--clients`` concurrent keep-alive clients for ``--duration`` seconds
(at most 600; ``--max-requests`` bounds the count too) and prints requests, requests/s, p50,
p90, p99 and max latency, and the error count (transport failures and non-2xx answers).

Cases: ``probe`` sends only ``GET /probe`` on ``--positions`` positions of two to
``--pieces`` pieces (default three; random, valid, seeded: with five, spread over every
slice of a 2-5 database; with ``--db``, only of the slices the database holds, so that one
still being built can be loaded); ``mixed`` sends one ``POST /adjudicate`` (a short JSON game ruled
with the tables) for every ``--adjudicate-every`` requests, the rest probes; ``health``
sends ``GET /health`` (the framework's own cost, for comparison); ``saturated`` runs
``--rulers`` clients that each post, back to back, a PDN of ``--games`` games stopped in a
won 5-move ending with the count nearly run out (each ruled by the count-aware table
search), so that the ruling workers are always busy, while ``--clients`` clients send
probes: it prints the probes' line and the rulings' line (probes have their own workers and
must stay fast). The clients are a small asyncio HTTP/1.1 client (no dependency) so that
they take little of the CPU the server needs.

Memory: with ``--db`` the service's resident memory is sampled five times a second; each
case's line is followed by its peak, beside the resident memory once the service had
started and answered the warm-up (its fixed overhead: interpreter, libraries, compiled
code, open files) and the block cache's budget (``--cache``, passed to ``serve``).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

MAX_DURATION = 600.0
MAX_CLIENTS = 1000

# Short games ruled from 3-piece positions (the tables decide them), per variant.
GAMES = {
    "international": {"fen": "W:WK38:B4,18", "moves": ["38-29", "18-23", "29x18", "4-10"]},
    "english": {"variant": "english", "fen": "B:WK28:B1,K10", "moves": ["1-6", "28-24"]},
}
# Won 5-move endings (two kings against one) whose table win does not fit the count left
# at elapsed=5, so each is ruled by the count-aware search.
HEAVY = {
    "international": ("W:WK1,K2:BK45", 5),
    "english": ("B:WK29:BK1,K5", 75),
}


@dataclass
class Stats:
    """Latencies (seconds) and errors of one case."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    by_status: dict[int, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- positions


def positions(
    variant: str, count: int, seed: int = 1, pieces: int = 3, db: str | None = None
) -> list[str]:
    """``count`` distinct valid FENs of 2 to ``pieces`` pieces (as many of each number of
    pieces as of 3 and more, half as many of 2), both sides having a piece; with ``db``,
    only of the slices whose files that database holds (a database still being built: a
    probe of a slice it lacks is an error answer; its moves' values are left out)."""
    from tablebase.probe.database import normalise
    from tablebase.rules.position import FenError, Position
    from tablebase.rules.variants import get_variant

    v = get_variant(variant)
    held = None if db is None else {f.stem for f in Path(db).glob("*.h5")}
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < count:
        n = rng.choice((2, *(k for k in range(3, pieces + 1) for _ in (0, 1))))
        squares = rng.sample(range(1, v.squares + 1), n)
        kinds = ["W" if rng.random() < 0.5 else "w", "B" if rng.random() < 0.5 else "b"]
        kinds += [rng.choice("wWbB") for _ in range(n - 2)]
        placed = list(zip(squares, kinds, strict=True))
        white = [f"{'K' if k == 'W' else ''}{s}" for s, k in placed if k in "wW"]
        black = [f"{'K' if k == 'B' else ''}{s}" for s, k in placed if k in "bB"]
        fen = f"{rng.choice('WB')}:W{','.join(white)}:B{','.join(black)}"
        try:
            pos = Position.from_fen(fen, v)
        except FenError:
            continue  # a man on its own crowning row
        if held is None or normalise(pos)[0].name in held:
            out.add(pos.fen())
    return sorted(out)


# --------------------------------------------------------------------------- HTTP client


class Connection:
    """One keep-alive HTTP/1.1 connection (answers must carry Content-Length)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"", ctype: str = "") -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        if body:
            head += f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("connection closed")
        status = int(status_line.split()[1])
        length, close = None, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        if length is None:
            raise ConnectionError("answer without Content-Length")
        await self.reader.readexactly(length)
        if close:
            self.close()
        return status

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def client(
    conn: Connection,
    requests: list[tuple[str, str, bytes, str]],
    start: int,
    deadline: float,
    budget: list[int],
    stats: Stats,
) -> None:
    i = start
    while time.monotonic() < deadline and budget[0] > 0:
        budget[0] -= 1
        method, path, body, ctype = requests[i % len(requests)]
        i += 1
        t0 = time.perf_counter()
        try:
            status = await conn.request(method, path, body, ctype)
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError):
            conn.close()
            stats.errors += 1
            continue
        stats.latencies.append(time.perf_counter() - t0)
        stats.by_status[status] = stats.by_status.get(status, 0) + 1
        if not 200 <= status < 300:
            stats.errors += 1
    conn.close()


async def run_case(
    host: str, port: int, requests: list, clients: int, duration: float, max_requests: int
) -> tuple[Stats, float]:
    stats = Stats()
    budget = [max_requests]
    conns = [Connection(host, port) for _ in range(clients)]
    t0 = time.monotonic()
    deadline = t0 + duration
    step = max(1, len(requests) // clients)
    await asyncio.gather(
        *(client(c, requests, k * step, deadline, budget, stats) for k, c in enumerate(conns))
    )
    return stats, time.monotonic() - t0


def build_requests(
    case: str, variant: str, every: int, count: int = 2000, pieces: int = 3, db: str | None = None
) -> list[tuple[str, str, bytes, str]]:
    if case == "health":
        return [("GET", "/health", b"", "")]
    probes = [
        ("GET", f"/probe?variant={variant}&fen={quote(fen)}", b"", "")
        for fen in positions(variant, count, pieces=pieces, db=db)
    ]
    if case == "probe":
        return probes
    game = json.dumps(GAMES[variant]).encode()
    out = []
    for k, p in enumerate(probes):
        if k % every == 0:
            out.append(("POST", "/adjudicate", game, "application/json"))
        out.append(p)
    return out


def heavy_request(variant: str, games: int) -> tuple[str, str, bytes, str]:
    fen, elapsed = HEAVY[variant]
    game_type = 20 if variant == "international" else 21
    one = f'[GameType "{game_type}"]\n[FEN "{fen}"]\n\n*\n\n'
    path = f"/adjudicate?elapsed={elapsed}"
    return ("POST", path, (one * games).encode(), "text/plain")


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


# --------------------------------------------------------------------------- the server


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    db: str, timeout: float = 300.0, cache: str | None = None
) -> tuple[subprocess.Popen, str, int]:
    port = free_port()
    cmd = [sys.executable, "-m", "adjudicator.cli", "serve", "--db", db, "--port", str(port)]
    cmd += ["--host", "127.0.0.1", "--log-level", "warning"]
    if cache is not None:
        cmd += ["--cache", cache]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the service exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc, "127.0.0.1", port
        except OSError:
            time.sleep(0.25)
    proc.send_signal(signal.SIGINT)
    sys.exit("the service did not start")


async def run_both(host, port, probes, heavy, args, duration, max_requests):
    """The probe clients and the ruling clients at once; (stats, wall) of each group."""
    return await asyncio.gather(
        run_case(host, port, probes, args.clients, duration, max_requests),
        run_case(host, port, heavy, args.rulers, duration, max_requests),
    )


class Resident:
    """The resident memory of a process, sampled five times a second in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def now(self) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.peak = max(self.peak, self.now())
            except OSError:
                return

    def __enter__(self) -> Resident:
        self.peak = self.now()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def report_memory(start: int, peak: int, cache: str | None) -> None:
    mib = 2**20
    budget = f"cache budget {cache}" if cache else "default cache"
    print(
        f"{'':8s} service memory: {start / mib:,.0f} MiB after start and warm-up, "
        f"peak {peak / mib:,.0f} MiB ({(peak - start) / mib:+,.0f} MiB; {budget})",
        flush=True,
    )


def report(case: str, stats: Stats, wall: float) -> None:
    lat = sorted(stats.latencies)
    ms = [1000 * percentile(lat, q) for q in (50, 90, 99, 100)]
    statuses = " ".join(f"{k}:{v}" for k, v in sorted(stats.by_status.items()))
    print(
        f"{case:8s} {len(lat):>8d} req  {len(lat) / wall:8.1f} req/s  "
        f"p50 {ms[0]:7.1f} ms  p90 {ms[1]:7.1f} ms  p99 {ms[2]:7.1f} ms  "
        f"max {ms[3]:7.1f} ms  errors {stats.errors}  [{statuses}]",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--db", help="start a service on this database folder")
    where.add_argument("--url", help="use a running service (loopback only)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per case")
    parser.add_argument("--max-requests", type=int, default=1_000_000, help="per case")
    parser.add_argument(
        "--mix", default="probe,mixed", help="cases: probe, mixed, health, saturated"
    )
    parser.add_argument("--rulers", type=int, default=8, help="saturated: ruling clients")
    parser.add_argument("--games", type=int, default=100, help="saturated: games a request")
    parser.add_argument("--variant", default="international", choices=sorted(GAMES))
    parser.add_argument("--adjudicate-every", type=int, default=10, help="mixed: 1 in N")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before each case")
    parser.add_argument("--cache", metavar="SIZE", help="--db: the service's block cache")
    parser.add_argument("--pieces", type=int, default=3, help="probes: up to N pieces")
    parser.add_argument("--positions", type=int, default=2000, help="probes: distinct positions")
    args = parser.parse_args()
    if not 0 < args.duration <= MAX_DURATION or not 0 < args.clients <= MAX_CLIENTS:
        parser.error(f"--duration must be in (0, {MAX_DURATION:.0f}], --clients in [1, 1000]")
    cases = [c.strip() for c in args.mix.split(",") if c.strip()]
    if not set(cases) <= {"probe", "mixed", "health", "saturated"}:
        parser.error("--mix takes probe, mixed, health and/or saturated")
    if not 0 < args.rulers <= MAX_CLIENTS or not 0 < args.games <= 100:
        parser.error("--rulers must be in [1, 1000], --games in [1, 100]")

    proc = None
    if args.db:
        proc, host, port = start_server(args.db, cache=args.cache)
    else:
        parts = urlsplit(args.url)
        host, port = parts.hostname or "", parts.port or 80
        if parts.scheme != "http" or not loopback(host):
            parser.error("--url must be http:// on a loopback address (127.0.0.0/8, ::1)")
    try:
        print(
            f"service http://{host}:{port}  clients {args.clients}  duration {args.duration:g} s"
            f"  cpus {os.cpu_count()}  variant {args.variant}"
        )
        for case in cases:
            sizes = (args.positions, args.pieces)
            if case == "saturated":
                probes = build_requests(
                    "probe", args.variant, args.adjudicate_every, *sizes, db=args.db
                )
                heavy = [heavy_request(args.variant, args.games)]
                both = asyncio.run(
                    run_both(host, port, probes, heavy, args, args.duration, args.max_requests)
                )
                report("probes", *both[0])
                report("rulings", *both[1])
                continue
            requests = build_requests(case, args.variant, args.adjudicate_every, *sizes, db=args.db)
            if args.warmup > 0:
                asyncio.run(run_case(host, port, requests, 4, args.warmup, 10_000))
            if proc is None:
                stats, wall = asyncio.run(
                    run_case(host, port, requests, args.clients, args.duration, args.max_requests)
                )
                report(case, stats, wall)
                continue
            with Resident(proc.pid) as memory:
                start = memory.peak
                stats, wall = asyncio.run(
                    run_case(host, port, requests, args.clients, args.duration, args.max_requests)
                )
            report(case, stats, wall)
            report_memory(start, memory.peak, args.cache)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
