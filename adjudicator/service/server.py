"""Running the service: :func:`serve` starts uvicorn on the app of :mod:`.app`, with an
HTTP protocol bounded against slow and idle clients (:func:`bounded_protocol`)."""

from __future__ import annotations

import asyncio
import os

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from adjudicator.service.app import create_app
from adjudicator.service.settings import ServiceSettings


def serve(
    db: str | os.PathLike[str] | None,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    settings: ServiceSettings | None = None,
) -> None:
    """Run the service with uvicorn until interrupted (settings from the environment, see
    :meth:`ServiceSettings.from_env`, unless given)."""
    settings = settings or ServiceSettings.from_env()
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


def bounded_protocol(request_seconds: float) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with three bounds it lacks: a connection that sends nothing
    is closed after the keep-alive timeout (uvicorn arms it only after a response); a request
    whose header or body has begun but is not complete ``request_seconds`` after its first
    byte is closed (a client sending part of a request and going quiet would otherwise hold
    the connection for ever); and a connection over ``limit_concurrency`` open ones is closed
    at once (uvicorn accepts it and answers 503 only once a request arrives, holding the file
    handle meanwhile). It relies on ``H11Protocol``'s attributes (``conn``, ``connections``,
    ``timeout_keep_alive_task``, ``transport``), hence the upper bound on uvicorn in
    ``pyproject.toml``."""

    class BoundedH11Protocol(H11Protocol):
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
                self._request_deadline = self.loop.call_later(request_seconds, self._too_slow)
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE and self.conn.their_state is not (
                h11.SEND_BODY
            ):
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

    return BoundedH11Protocol
