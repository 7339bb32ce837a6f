"""Several games at once: worker threads, and the engines each game borrows.

``concurrency`` threads take the scheduled games in order from one queue; each plays its game
with :func:`adjudicator.match.referee.play_game` and puts the record on the results queue,
read by the match's one thread that writes the files (so the files have one writer). The
referee's own work is small (the engines are other processes, and Python threads wait on
their pipes and sockets without spinning); the tables are probed under a lock.

Engines: a Hub engine is a fresh process for every game (so a game never depends on which
games its process played before, and the results are those of sequential play for a
deterministic engine). A DXP engine is one connection per port, kept from game to game: a
port serves one game at a time, so an engine with ``k`` ports plays at most ``k`` games at
once (:func:`port_notes` says so before the match). A game takes the ports it needs in the
engines' order and waits (blocking, no polling) until they are free; taking them in one
order means two games never wait for each other.

Stopping: :attr:`Workers.stop` (set by an SPRT decision or an interrupt) lets the games being
played finish and starts no other; :meth:`Workers.abort` ends the engines of the games being
played, so they end at once (their records are then not used).
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any

from adjudicator.match.engines import Engine, Spec, make_engine
from adjudicator.match.openings import Opening
from adjudicator.match.referee import GameRecord, Referee, play_game
from adjudicator.match.schedule import Pairing


@dataclass
class Finished:
    """What a worker hands back: a played game, a worker's end, or an error it met."""

    pairing: Pairing | None
    record: GameRecord | None = None
    error: BaseException | None = None


def port_notes(specs: tuple[Spec, ...], concurrency: int) -> list[str]:
    """A line per DXP engine whose ports limit ``concurrency``."""
    out = []
    for i, spec in enumerate(specs):
        if spec.kind == "hub" or concurrency <= len(spec.ports or (spec.port,)):
            continue
        n = len(spec.ports or (spec.port,))
        out.append(
            f"note: engine {i + 1} ({spec.shown()}) is DXP on {n} port{'s' if n > 1 else ''}: "
            f"a port serves one game at a time, so at most {n} of its games run at once "
            "(give more ports, e.g. dxp:HOST:P1,P2, with one engine listening on each)"
        )
    return out


class Pools:
    """The engines of a match, lent game by game."""

    def __init__(self, specs: tuple[Spec, ...], names: list[str]) -> None:
        self.specs = specs
        self.names = names
        self.free: dict[int, queue.Queue] = {}
        self.every: list[Engine] = []
        self.lock = threading.Lock()
        self.busy: set[Engine] = set()
        for i, spec in enumerate(specs):
            if spec.kind == "hub":
                continue
            q: queue.Queue = queue.Queue()
            for port in spec.ports or (spec.port,):
                engine = make_engine(spec, names[i], port)
                self.every.append(engine)
                q.put(engine)
            self.free[i] = q

    def take(self, pairing: Pairing) -> dict[int, Engine]:
        """The game's two engines, by engine index (DXP ports taken in index order)."""
        out: dict[int, Engine] = {}
        for i in sorted((pairing.white, pairing.black)):
            if i in self.free:
                out[i] = self.free[i].get()
            else:
                out[i] = make_engine(self.specs[i], self.names[i])
        with self.lock:
            self.busy.update(out.values())
        return out

    def give_back(self, engines: dict[int, Engine]) -> None:
        with self.lock:
            self.busy.difference_update(engines.values())
        for i, engine in engines.items():
            if i in self.free:
                self.free[i].put(engine)
            else:
                engine.close()

    def abort(self) -> None:
        """End the engines of the games being played (an interrupt)."""
        with self.lock:
            busy = list(self.busy)
        for engine in busy:
            engine.reset()

    def close(self) -> None:
        for engine in self.every:
            engine.close()


class Workers:
    """``concurrency`` threads playing ``pending`` games; their ends arrive on ``results``."""

    def __init__(
        self,
        pending: list[Pairing],
        openings: list[Opening],
        referee: Referee,
        pools: Pools,
        concurrency: int,
    ) -> None:
        self.todo: queue.Queue = queue.Queue()
        for pairing in pending:
            self.todo.put(pairing)
        self.openings = openings
        self.referee = referee
        self.pools = pools
        self.results: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._work, name=f"game-{n + 1}", daemon=True)
            for n in range(max(1, min(concurrency, len(pending))))
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _work(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    pairing = self.todo.get_nowait()
                except queue.Empty:
                    break
                last = self.todo.empty()  # no game after this one: DXP's stop code
                engines = self.pools.take(pairing)
                try:
                    record = play_game(
                        pairing.number,
                        engines[pairing.white],
                        engines[pairing.black],
                        self.openings[pairing.opening],
                        self.referee,
                        last=last,
                    )
                finally:
                    self.pools.give_back(engines)
                self.results.put(Finished(pairing, record))
        except BaseException as error:  # noqa: BLE001 - handed to the match's thread
            self.results.put(Finished(None, error=error))
        self.results.put(Finished(None))

    def finished(self) -> Any:
        """Every end as it arrives, until all threads have stopped."""
        running = len(self.threads)
        while running:
            item = self.results.get()
            if item.pairing is None and item.error is None:
                running -= 1
                continue
            yield item
