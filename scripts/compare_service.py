"""Do two running services answer ``/probe`` alike? Every answer compared whole.

    python scripts/compare_service.py --url http://127.0.0.1:8001 --peer http://127.0.0.1:8002
        [--positions 10000] [--pieces 5] [--variant international] [--seed 7] [--clients 4]

Sends the same ``GET /probe`` requests to both services: ``--positions`` distinct random
valid positions of two to ``--pieces`` pieces (both sides having a piece; the positions of
``scripts/load_service.py``, spread over every slice of that many pieces, including those
a database lacks, which both must answer alike), each with an ``elapsed`` drawn from a few
values (0 mostly, then counts well under way and nearly run out, so that the count-aware
values go through the search), and compares the status and the decoded JSON of the two
answers: the position's value, its value under the count, and every move with its
values, distance and FEN, in order. Prints the number of differences and the first few;
exits 1 if any, 2 if a request went unanswered (a service down, or past ``TIMEOUT``).
Loopback addresses only. Run both services with the same ``ADJUDICATOR_REQUEST_MS``, and
one large enough that no count search stops on it: an answer cut by the time budget is
``"unknown"`` in the slower service only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_service import loopback, positions  # noqa: E402

ELAPSED = (0, 0, 0, 0, 4, 10, 20, 26, 30, 40, 45)  # plies under the count (5-move: 10)
TIMEOUT = 600.0  # seconds for one answer (a service's count search may be slow)


class Client:
    """One keep-alive connection to a service (re-opened after an error)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not loopback(parts.hostname or ""):
            raise SystemExit(f"{url}: http:// on a loopback address only")
        self.host, self.port = parts.hostname or "", parts.port or 80
        self.conn: http.client.HTTPConnection | None = None

    def get(self, path: str) -> tuple[int, object]:
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
            try:
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                body = r.read()
                return r.status, json.loads(body) if body else None
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def compare(
    url: str,
    peer: str,
    requests: list[str],
    clients: int,
    statuses: dict[int, int],
    failed: list[tuple[str, str]],
) -> list[tuple]:
    """The requests whose answers differ: (path, (status, body) here, (status, body) there);
    ``statuses`` counts the statuses of ``url``'s answers, ``failed`` gets the requests a
    service did not answer (path, error)."""
    diffs: list[tuple] = []
    lock = threading.Lock()
    todo = iter(requests)

    def work() -> None:
        a, b = Client(url), Client(peer)
        while True:
            with lock:
                path = next(todo, None)
            if path is None:
                return
            try:
                mine, theirs = a.get(path), b.get(path)
            except (OSError, http.client.HTTPException) as error:
                with lock:
                    failed.append((path, str(error) or type(error).__name__))
                continue
            with lock:
                statuses[mine[0]] = statuses.get(mine[0], 0) + 1
                if mine != theirs:
                    diffs.append((path, mine, theirs))

    threads = [threading.Thread(target=work) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return diffs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a service (e.g. this checkout's)")
    parser.add_argument("--peer", required=True, help="the service to compare with")
    parser.add_argument("--positions", type=int, default=10_000)
    parser.add_argument("--pieces", type=int, default=5)
    parser.add_argument("--variant", default="international")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--clients", type=int, default=4, help="requests in flight")
    parser.add_argument("--show", type=int, default=5, help="differences printed")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    fens = positions(args.variant, args.positions, seed=args.seed, pieces=args.pieces)
    requests = [
        f"/probe?variant={args.variant}&fen={quote(fen)}&elapsed={rng.choice(ELAPSED)}"
        for fen in fens
    ]
    t0 = time.monotonic()
    statuses: dict[int, int] = {}
    failed: list[tuple[str, str]] = []
    diffs = compare(args.url, args.peer, requests, args.clients, statuses, failed)
    wall = time.monotonic() - t0
    answered = " ".join(f"{k}:{v}" for k, v in sorted(statuses.items()))
    print(
        f"{len(requests)} positions of 2-{args.pieces} pieces ({args.variant}), "
        f"{wall:.0f} s, statuses [{answered}]: {len(diffs)} differences, "
        f"{len(failed)} not answered"
    )
    for path, error in failed[: args.show]:
        print(f"  not answered: {path}: {error}")
    for path, mine, theirs in diffs[: args.show]:
        print(f"  {path}\n    url:  {json.dumps(mine)[:400]}\n    peer: {json.dumps(theirs)[:400]}")
    sys.exit(1 if diffs else 2 if failed else 0)


if __name__ == "__main__":
    main()
