"""Running the service: :func:`serve` starts uvicorn on the app of :mod:`.app`, with an
HTTP protocol bounded against slow and idle clients (:class:`BoundedH11Protocol`), in one
process or in several worker processes.

Workers: the service answers in Python, which runs one thread at a time per process, so
one process uses one core whatever its threads. With ``workers`` > 1 (``adjudicator serve
--workers N``, ``ADJUDICATOR_WORKERS``; default one per core) uvicorn starts that many
processes accepting on one socket; each opens the tables read-only (the operating
system's page cache holds their files once for all) with its own block cache and answer
cache, each taking ``cache_bytes / workers`` (:func:`worker_settings`), so that the
service's total stays within the budget; each takes ``max_connections / workers``
connections. The workers read their database and settings from the environment the
parent sets (:data:`DB_ENV` and the ``ADJUDICATOR_*`` variables, :func:`worker_app`).
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import fields, replace

import h11
import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol

from adjudicator.databases import resolve_databases
from adjudicator.service.app import create_app
from adjudicator.service.settings import ServiceSettings
from tablebase.probe.cache import cache_bytes

DB_ENV = "ADJUDICATOR_SERVE_DB"  # a worker's databases: JSON {variant: directory}


def serve(
    db: str | os.PathLike[str] | None,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    settings: ServiceSettings | None = None,
) -> None:
    """Run the service with uvicorn until interrupted (settings from the environment, see
    :meth:`ServiceSettings.from_env`, unless given), in ``settings.workers`` processes
    (None: one per core)."""
    settings = settings or ServiceSettings.from_env()
    workers = settings.workers or default_workers()
    if workers == 1:
        app = create_app(db, settings)
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level=log_level,
            http=bounded_protocol(settings.request_seconds),
            limit_concurrency=settings.max_connections,
            timeout_keep_alive=settings.idle_seconds,
        )
        return
    share = worker_settings(settings, workers)
    dirs = resolve_databases(db)  # a bad --db is reported here, once, not by each worker
    os.environ[DB_ENV] = json.dumps({name: os.fspath(path) for name, path in dirs.items()})
    for field in fields(share):
        value = getattr(share, field.name)
        if value is not None:
            os.environ[f"ADJUDICATOR_{field.name.upper()}"] = str(value)
    uvicorn.run(
        f"{__name__}:worker_app",
        factory=True,
        workers=workers,
        host=host,
        port=port,
        log_level=log_level,
        http=BoundedH11Protocol,
        limit_concurrency=share.max_connections,
        timeout_keep_alive=share.idle_seconds,
    )


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def worker_settings(settings: ServiceSettings, workers: int) -> ServiceSettings:
    """The settings of one of ``workers`` processes: its share of the memory budget and of
    the connections (the rest as given)."""
    return replace(
        settings,
        cache_bytes=cache_bytes(settings.cache_bytes) // workers,
        max_connections=max(1, settings.max_connections // workers),
        workers=1,
    )


def worker_app() -> FastAPI:
    """The app of a worker process (uvicorn's factory): the databases and settings that
    :func:`serve` put in the environment."""
    settings = ServiceSettings.from_env()
    BoundedH11Protocol.request_seconds = settings.request_seconds
    dirs = json.loads(os.environ.get(DB_ENV, "{}"))
    return create_app(dirs or None, settings)


class BoundedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with three bounds it lacks: a connection that sends nothing
    is closed after the keep-alive timeout (uvicorn arms it only after a response); a request
    whose header or body has begun but is not complete ``request_seconds`` after its first
    byte is closed (a client sending part of a request and going quiet would otherwise hold
    the connection for ever); and a connection over ``limit_concurrency`` open ones is closed
    at once (uvicorn accepts it and answers 503 only once a request arrives, holding the file
    handle meanwhile). It relies on ``H11Protocol``'s attributes (``conn``, ``connections``,
    ``timeout_keep_alive_task``, ``transport``), hence the upper bound on uvicorn in
    ``pyproject.toml``. A module-level class, so that uvicorn can hand it to its worker
    processes; ``request_seconds`` is set in each (:func:`worker_app`)."""

    request_seconds: float = ServiceSettings.request_seconds
    _request_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        limit = self.limit_concurrency
        if limit is not None and len(self.connections) > limit:
            self.connections.discard(self)
            transport.close()
            return
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def data_received(self, data: bytes) -> None:
        if self._request_deadline is None and self.conn.their_state is h11.IDLE:
            self._request_deadline = self.loop.call_later(self.request_seconds, self._too_slow)
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE and self.conn.their_state is not (h11.SEND_BODY):
            self._cancel_deadline()  # the request is whole (or the connection ends)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def _cancel_deadline(self) -> None:
        if self._request_deadline is not None:
            self._request_deadline.cancel()
            self._request_deadline = None

    def _too_slow(self) -> None:
        self._request_deadline = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            if not self.transport.is_closing():
                self.transport.close()


def bounded_protocol(request_seconds: float) -> type[H11Protocol]:
    """:class:`BoundedH11Protocol` closing a request unfinished after ``request_seconds``."""
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"request_seconds": request_seconds})
