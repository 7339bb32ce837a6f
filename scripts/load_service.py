"""Bounded loopback load test of the adjudication service, one line of figures per case.

    python scripts/load_service.py --db data [--clients 50] [--duration 30] [--mix probe,mixed]
        [--cache 1G] [--pieces 5] [--positions 20000]
    python scripts/load_service.py --url http://127.0.0.1:8000 ...
    python scripts/load_service.py --db DIR --baseline-python /path/to/other/.venv/bin/python

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

Memory: with ``--db`` the service's memory is sampled five times a second, summed over
its process and every process it started (its workers): each case's line is followed by
the peak of the proportional set size (PSS: a page shared by several processes counted
once in all) and of the resident size summed over the processes (RSS, a page shared
counted in each), beside the PSS once the service had started and answered the warm-up
(its fixed overhead: interpreters, libraries, compiled code, open files) and the memory
budget (``--cache``, passed to ``serve``).

Workers and A/B: ``--workers N`` starts the service with ``ADJUDICATOR_WORKERS=N`` (a
service without workers ignores it). ``--baseline-python PATH`` runs every case first
against a service started by that interpreter (another checkout's virtual environment:
that checkout's code, e.g. today's ``main``), then against this checkout's, one after the
other on the same machine, and ends with each case's ratio of requests per second. A
service is used once it answers ``/health`` and its processes have gone quiet (its
workers warmed up).
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
import tempfile
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
    held = None
    if db is not None:  # a folder of variants' folders, or the variant's own folder
        folder = Path(db) / variant if (Path(db) / variant).is_dir() else Path(db)
        held = {f.stem for f in folder.glob("*.h5")}
        if not held:
            raise SystemExit(f"{db}: no {variant} slice files")
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
    db: str,
    timeout: float = 300.0,
    cache: str | None = None,
    python: str | None = None,
    workers: int | None = None,
) -> tuple[subprocess.Popen, str, int]:
    """Start ``adjudicator serve`` (run by ``python``, default this interpreter) and wait
    until it answers ``/health`` and its processes are quiet (its workers warmed up)."""
    port = free_port()
    db = os.path.abspath(db)
    cmd = [python or sys.executable, "-m", "adjudicator.cli", "serve", "--db", db]
    cmd += ["--port", str(port), "--host", "127.0.0.1", "--log-level", "warning"]
    if cache is not None:
        cmd += ["--cache", cache]
    env = dict(os.environ)
    if workers is not None:
        env["ADJUDICATOR_WORKERS"] = str(workers)
    # started outside any checkout: ``-m`` imports from the working folder first, and the
    # interpreter's own installation is the code meant
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the service exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                wait_quiet(proc.pid, deadline)
                return proc, "127.0.0.1", port
        except OSError:
            time.sleep(0.25)
    proc.send_signal(signal.SIGINT)
    sys.exit("the service did not start")


def tree(pid: int) -> list[int]:
    """``pid`` and every process descending from it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time of the processes ``pids`` (those still running)."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                parts = f.read().rpartition(")")[2].split()
            total += int(parts[11]) + int(parts[12])
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def wait_quiet(pid: int, deadline: float, quiet: float = 0.1) -> None:
    """Wait until the service's processes use less than ``quiet`` of a core over a second
    (its workers have started and warmed up), or until ``deadline``."""
    before = cpu_seconds(tree(pid))
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = cpu_seconds(tree(pid))
        if now - before < quiet:
            return
        before = now


async def run_both(host, port, probes, heavy, args, duration, max_requests):
    """The probe clients and the ruling clients at once; (stats, wall) of each group."""
    return await asyncio.gather(
        run_case(host, port, probes, args.clients, duration, max_requests),
        run_case(host, port, heavy, args.rulers, duration, max_requests),
    )


class Resident:
    """The memory of a process and of the processes it started (its workers), summed, as
    proportional (PSS) and resident (RSS) sizes: sampled five times a second in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0  # PSS
        self.peak_rss = 0
        self.processes = 1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def now(self) -> tuple[int, int]:
        """(PSS, RSS) in bytes, summed over the service's processes."""
        pss = rss = 0
        pids = tree(self.pid)
        self.processes = max(self.processes, len(pids))
        for p in pids:
            try:
                with open(f"/proc/{p}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Rss:"):
                            rss += int(line.split()[1]) * 1024
                        elif line.startswith("Pss:"):
                            pss += int(line.split()[1]) * 1024
            except OSError:
                continue
        return pss, rss

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            pss, rss = self.now()
            if not rss:
                return
            self.peak = max(self.peak, pss)
            self.peak_rss = max(self.peak_rss, rss)

    def __enter__(self) -> Resident:
        self.peak, self.peak_rss = self.now()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def report_memory(start: int, memory: Resident, cache: str | None) -> None:
    mib = 2**20
    budget = f"cache budget {cache}" if cache else "default cache"
    peak = memory.peak
    print(
        f"{'':8s} service memory ({memory.processes} processes): PSS {start / mib:,.0f} MiB "
        f"after start and warm-up, peak {peak / mib:,.0f} MiB ({(peak - start) / mib:+,.0f} "
        f"MiB; {budget}); RSS summed over the processes, peak {memory.peak_rss / mib:,.0f} MiB",
        flush=True,
    )


def report(case: str, stats: Stats, wall: float) -> float:
    lat = sorted(stats.latencies)
    ms = [1000 * percentile(lat, q) for q in (50, 90, 99, 100)]
    statuses = " ".join(f"{k}:{v}" for k, v in sorted(stats.by_status.items()))
    print(
        f"{case:8s} {len(lat):>8d} req  {len(lat) / wall:8.1f} req/s  "
        f"p50 {ms[0]:7.1f} ms  p90 {ms[1]:7.1f} ms  p99 {ms[2]:7.1f} ms  "
        f"max {ms[3]:7.1f} ms  errors {stats.errors}  [{statuses}]",
        flush=True,
    )
    return len(lat) / wall if wall else 0.0


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
    parser.add_argument("--workers", type=int, help="--db: the service's worker processes")
    parser.add_argument(
        "--baseline-python",
        metavar="PATH",
        help="--db: first run the cases against a service run by this interpreter (A/B)",
    )
    args = parser.parse_args()
    if not 0 < args.duration <= MAX_DURATION or not 0 < args.clients <= MAX_CLIENTS:
        parser.error(f"--duration must be in (0, {MAX_DURATION:.0f}], --clients in [1, 1000]")
    cases = [c.strip() for c in args.mix.split(",") if c.strip()]
    if not set(cases) <= {"probe", "mixed", "health", "saturated"}:
        parser.error("--mix takes probe, mixed, health and/or saturated")
    if not 0 < args.rulers <= MAX_CLIENTS or not 0 < args.games <= 100:
        parser.error("--rulers must be in [1, 1000], --games in [1, 100]")

    if args.url:
        parts = urlsplit(args.url)
        host, port = parts.hostname or "", parts.port or 80
        if parts.scheme != "http" or not loopback(host):
            parser.error("--url must be http:// on a loopback address (127.0.0.0/8, ::1)")
        if args.baseline_python:
            parser.error("--baseline-python needs --db (the services are started here)")
        run_cases(args, cases, None, host, port)
        return
    runs = [("baseline", args.baseline_python), ("this", None)] if args.baseline_python else []
    rates = {}
    for label, python in runs or [("this", None)]:
        if runs:
            print(f"== {label}: {python or sys.executable}", flush=True)
        proc, host, port = start_server(
            args.db, cache=args.cache, python=python, workers=args.workers
        )
        try:
            rates[label] = run_cases(args, cases, proc, host, port)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    if runs:
        for case, rate in rates["this"].items():
            base = rates["baseline"].get(case, 0.0)
            ratio = f"{rate / base:.2f}x" if base else "-"
            print(f"A/B {case:8s} baseline {base:8.1f} req/s  this {rate:8.1f} req/s  {ratio}")


def run_cases(
    args: argparse.Namespace,
    cases: list[str],
    proc: subprocess.Popen | None,
    host: str,
    port: int,
) -> dict[str, float]:
    """Run the cases against the service at ``host:port`` (``proc``: started here, its
    memory sampled); requests per second by case."""
    rates = {}
    print(
        f"service http://{host}:{port}  clients {args.clients}  duration {args.duration:g} s"
        f"  cpus {os.cpu_count()}  variant {args.variant}",
        flush=True,
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
            rates["probes"] = report("probes", *both[0])
            rates["rulings"] = report("rulings", *both[1])
            continue
        requests = build_requests(case, args.variant, args.adjudicate_every, *sizes, db=args.db)
        if args.warmup > 0:
            asyncio.run(run_case(host, port, requests, 4, args.warmup, 10_000))
        if proc is None:
            stats, wall = asyncio.run(
                run_case(host, port, requests, args.clients, args.duration, args.max_requests)
            )
            rates[case] = report(case, stats, wall)
            continue
        with Resident(proc.pid) as memory:
            start = memory.peak
            stats, wall = asyncio.run(
                run_case(host, port, requests, args.clients, args.duration, args.max_requests)
            )
        rates[case] = report(case, stats, wall)
        report_memory(start, memory, args.cache)
    return rates


if __name__ == "__main__":
    main()
