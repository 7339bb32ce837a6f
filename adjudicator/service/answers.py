"""Recent ``/probe`` answers, kept as the bytes sent (:class:`AnswerCache`).

A position asked again (an explorer's back and forth, a client polling the same list)
is answered from here without being probed again, on the event loop (no worker thread).
The cache is bounded in bytes: each entry counts its answer's bytes, its key's and a fixed
overhead (:data:`ENTRY_OVERHEAD`), and the least recently used entries are evicted past
the capacity. It is safe to share between threads (one lock); each worker process of the
service has its own (:mod:`.server`), carved out of that worker's share of the memory
budget (:func:`split_budget`).

Only answers that cannot change are kept: a value ``"unknown"`` (the count search past its
node budget or its time budget, which a quieter moment may meet) is never cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

from tablebase.probe.cache import MIN_SLOTS
from tablebase.storage.chunkio import BLOCK_BYTES

ENTRY_OVERHEAD = 256  # bytes per entry beyond its answer and key: the dict slot, the objects
ANSWER_SHARE = 16  # the answers take a sixteenth of a worker's memory budget ...
ANSWER_MAX = 16 << 20  # ... and at most 16 MiB


def split_budget(total: int) -> tuple[int, int]:
    """(block cache bytes, answer cache bytes) of a worker whose budget is ``total``: no
    answers where the blocks would fall below the smallest block cache."""
    answers = min(total // ANSWER_SHARE, ANSWER_MAX)
    if total - answers < MIN_SLOTS * BLOCK_BYTES:
        return total, 0
    return total - answers, answers


class AnswerCache:
    """Answers (bytes) by key, least recently used evicted past ``capacity`` bytes."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, capacity)
        self.used = 0
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[Hashable, tuple[bytes, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> bytes | None:
        """The answer kept for ``key`` (now the most recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Hashable, body: bytes, key_bytes: int = 0) -> None:
        """Keep ``body`` for ``key`` (``key_bytes``: the size of the key's text), evicting
        the least recently used answers past the capacity; an answer larger than the whole
        capacity is not kept."""
        size = len(body) + key_bytes + ENTRY_OVERHEAD
        if size > self.capacity:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = (body, size)
            self.used += size
            while self.used > self.capacity:
                _, (_, old) = self._items.popitem(last=False)
                self.used -= old
