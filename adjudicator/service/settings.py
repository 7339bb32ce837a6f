"""The service's limits and sizes (:class:`ServiceSettings`), read by ``adjudicator serve``
from ``ADJUDICATOR_<FIELD>`` environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ServiceSettings:
    """Limits and sizes of the service."""

    max_body_bytes: int = 1 << 20  # request body (PDN or JSON)
    max_games: int = 100  # games per /adjudicate request
    max_plies: int = 2000  # moves (plies) per game
    search_nodes: int = 200_000  # tablebase search budget per ruled game
    threads: int = 2  # rulings run on at most this many worker threads (see SERVICE.md)
    probe_threads: int = 2  # probes have their own threads: they never queue behind rulings
    request_ms: int = 5000  # time budget of one request (a ruling, a /probe count search)
    max_connections: int = 1000  # open connections; more are answered 503 at once
    idle_seconds: int = 5  # an idle (keep-alive) connection is closed after this
    request_seconds: int = 10  # a request's header and body must arrive within this
    # memory for table blocks and recent /probe answers, shared by every variant's tables
    # and split between the worker processes (None: a quarter of the machine's memory;
    # tablebase.probe.cache, adjudicator.service.answers)
    cache_bytes: int | None = None
    # worker processes serving requests, each with its share of cache_bytes (None: one per
    # core; adjudicator.service.server)
    workers: int | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServiceSettings:
        """Settings with each field overridden by ``ADJUDICATOR_<FIELD>`` when set
        (``ADJUDICATOR_MAX_BODY_BYTES=65536``); raises ``ValueError`` for a bad value."""
        environ = os.environ if environ is None else environ
        values = {}
        for field in fields(cls):
            key = f"ADJUDICATOR_{field.name.upper()}"
            if key in environ:
                try:
                    values[field.name] = int(environ[key])
                except ValueError:
                    raise ValueError(f"{key} must be an integer, not {environ[key]!r}") from None
                if values[field.name] < 1:
                    raise ValueError(f"{key} must be at least 1, not {values[field.name]}")
        return cls(**values)
