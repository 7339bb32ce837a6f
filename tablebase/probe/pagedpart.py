"""One part (``values`` or ``wdl``) of one database as the compiled probes see it: its
slices' blocks as pages of a :class:`~tablebase.probe.cache.BlockCache`.

Each slice opened gets a range of *pages* (its blocks, in order) at a byte address, and the
part's *table* (:mod:`tablebase.probe.pagetable`) maps each page to the slot holding that
block, or a negative number if it is not in the cache. A probe computes its entry's byte
address (the slice's first byte plus ``entry * width``) and reads ``arena[slot * BLOCK_BYTES
+ address % BLOCK_BYTES]`` (:func:`~tablebase.probe.pagetable.read_entry`); where the page
is missing it reports the page, and the caller has the block read
(:meth:`~tablebase.probe.cache.BlockCache.acquire`, which *pins* it: it stays until
:meth:`~tablebase.probe.cache.BlockCache.release`) and probes again. A batch is answered in
rounds (:meth:`PagedPart.fill`): every position located and read where its block is cached,
then the missing blocks grouped (each read once per batch when the batch's blocks fit in the
cache) and the entries of the positions that need them read at the addresses found.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from tablebase.probe import direct
from tablebase.probe.cache import BlockCache
from tablebase.probe.pagesort import by_page, coded_pages, split_pages
from tablebase.probe.pagetable import (
    NOT_CACHED,
    PAGE_SHIFT,
    PAGES,
    STORED,
    WIDTHS,
    PartView,
    new_table,
)
from tablebase.probe.status import ANSWERED
from tablebase.storage.chunkio import BLOCK_BYTES
from tablebase.storage.slicefile import TableFileError

if TYPE_CHECKING:
    from tablebase.probe.blocks import PartSource

SEEN_LIMIT = 1 << 16  # pages a part remembers a single probe read directly (a few MiB)


class PagedPart:
    """One part of one database, its slices' blocks as pages of a :class:`BlockCache`.

    ``table`` is what the compiled probes read (its layout: :mod:`tablebase.probe.pagetable`),
    with ``cache.arena`` and ``cache.stamps``."""

    def __init__(self, cache: BlockCache, name: str) -> None:
        self.cache = cache
        self.name = name
        self.table = new_table(0)
        self._page_code = np.zeros(0, dtype=np.int16)
        self.sources: dict[int, PartSource] = {}  # code -> its blocks
        self.resident: set[int] = set()  # codes whose blocks stay
        self.number = cache.register(self)  # how the cache's slots name their part
        self.direct = direct.DirectIndex()  # what a batch needs to read group-coded blocks directly
        self._direct_readers = 0  # batches reading blocks directly (close waits for them)
        self._seen: dict[int, None] = {}  # pages a single probe read directly, oldest first

    @property
    def pages(self) -> np.ndarray:
        """The page entries of the current table (a view: writes go to the table)."""
        return self.table[PAGES:]

    def add(self, code: int, source: PartSource, resident: bool) -> None:
        """Give slice ``code`` (its blocks read by ``source``, a
        :class:`~tablebase.probe.blocks.PartSource`) its pages."""
        c = self.cache
        with c.lock:
            if code in self.sources:
                source.close()
                return
            old = self.table
            first = old.shape[0] - PAGES
            grown = new_table(first + source.blocks)
            grown[: old.shape[0]] = old
            codes = np.empty(first + source.blocks, dtype=np.int16)
            codes[:first] = self._page_code
            codes[first:] = code
            grown[STORED + code] = bool(getattr(source, "captures_stored", True))
            grown[WIDTHS + code] = source.width
            grown[code] = first << PAGE_SHIFT  # the slice is open in the new table
            self._page_code = codes
            self.direct = self.direct.grown(code, first, source, resident)
            self.table = grown
            old[PAGES:] = NOT_CACHED  # a thread holding the old table sees misses only
            self.sources[code] = source
            if resident:
                self.resident.add(code)

    def view(self) -> PartView:
        """What a batch's compiled look-ups read of this part (its current table)."""
        return PartView(self.table, self.cache.arena, self.cache.stamps)

    def is_open(self, code: int) -> bool:
        return bool(self.table[code] >= 0)

    def stores_captures(self, code: int) -> bool:
        """True if the open slice ``code``'s ``wdl`` part stores its capture positions."""
        return bool(self.table[STORED + code])

    def width(self, code: int) -> int:
        """Bytes per entry of the open slice ``code``."""
        return int(self.table[WIDTHS + code])

    def read_page(self, page: int, out: np.ndarray) -> None:
        code = int(self._page_code[page])
        block = page - (int(self.table[code]) >> PAGE_SHIFT)
        self.sources[code].read(block, out)

    def page_stays(self, page: int) -> bool:
        """Whether ``page`` belongs to a slice whose blocks stay in the cache."""
        return int(self._page_code[page]) in self.resident

    def resident_pages(self, pages: np.ndarray) -> np.ndarray:
        """Which of ``pages`` belong to slices whose blocks stay (a boolean mask)."""
        return np.isin(self._page_code[pages], list(self.resident))

    def close(self) -> None:
        """Drop every block of this part from the cache and close its files."""
        c = self.cache
        with c.lock:
            while self._direct_readers:  # a batch reading blocks directly from the files
                c.lock.wait(0.05)
            self.direct = direct.DirectIndex()
            self._seen.clear()
            old = self.table
            old[:PAGES] = NOT_CACHED
            old[PAGES:] = NOT_CACHED  # before its slots are freed: a thread holding it misses
            c.forget(self)
            self.table = new_table(0)
            self._page_code = np.zeros(0, dtype=np.int16)
            for s in self.sources.values():
                s.close()
            self.sources.clear()
            self.resident.clear()

    def fill(
        self,
        need: np.ndarray,
        missed: int,
        again: Callable[[np.ndarray, np.ndarray], np.ndarray],
        shift: int,
        put: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None,
    ) -> None:
        """Finish a batch through the cache. A first read of every position of the batch
        wrote the answers it could and gave ``need``: per position, the address of the entry
        whose block it lacks (-1 where answered; the page is ``address >> shift``), and
        ``missed``, how many lack one. The missing pages are grouped, read (each once while
        the batch's pages fit in the cache) and pinned while ``again(sel, addresses)`` reads
        the entries of positions ``sel`` at the addresses found (no position located
        twice), returning those it still lacks as ``need`` does.

        ``put(sel, addresses, bytes)``, where given, answers positions from the bytes at
        their entries' addresses: then a batch that would read many blocks for a few
        positions each (:func:`~tablebase.probe.direct.reads_directly`) has the entries in
        group-coded blocks read straight from the files (:mod:`tablebase.probe.direct`), not
        cached."""
        if not missed:
            return
        sel = np.flatnonzero(need != ANSWERED)
        addr = need[sel]
        c = self.cache
        first = True
        while sel.shape[0]:
            top = int(addr.max()) >> shift  # a page past the table: acquire says so
            sel, addr, uniq, bounds = by_page(sel, addr, shift, top + 1)
            if first and put is not None:
                first = False
                sel, addr, uniq, bounds = self._read_directly(sel, addr, uniq, bounds, shift, put)
            left_sel: list[np.ndarray] = []
            left_addr: list[np.ndarray] = []
            k = 0
            while k < uniq.shape[0]:
                group = uniq[k : k + c.batch_limit()]
                pinned = c.acquire(self, group)
                try:
                    lo, hi = bounds[k], bounds[k + group.shape[0]]
                    rest = again(sel[lo:hi], addr[lo:hi])
                finally:
                    c.release(pinned)
                miss = rest != ANSWERED
                if miss.any():  # pages unmapped meanwhile (a slice opened): read again
                    left_sel.append(sel[lo:hi][miss])
                    left_addr.append(rest[miss])
                k += group.shape[0]
            sel = np.concatenate(left_sel) if left_sel else sel[:0]
            addr = np.concatenate(left_addr) if left_addr else addr[:0]

    def _read_directly(
        self,
        sel: np.ndarray,
        addr: np.ndarray,
        uniq: np.ndarray,
        bounds: np.ndarray,
        shift: int,
        put: Callable[[np.ndarray, np.ndarray, np.ndarray], None],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The positions of a batch whose blocks
        :func:`~tablebase.probe.direct.reads_directly` sends to the files answered by
        ``put``; the rest (``sel``, ``addr``, ``uniq``, ``bounds`` as
        :func:`~tablebase.probe.pagesort.by_page` gives them) for the cache."""
        c = self.cache
        with c.lock:
            d = self.direct
            if not d.any or not direct.AVAILABLE:
                return sel, addr, uniq, bounds
            ok, positions, blocks = coded_pages(uniq, bounds, d.sizes)
            if not direct.reads_directly(positions, blocks, c.slots):
                return sel, addr, uniq, bounds
            self._direct_readers += 1
        try:
            dsel, daddr, duniq, dbounds, sel, addr, uniq, bounds = split_pages(
                ok, sel, addr, uniq, bounds, positions, blocks
            )
            raw = np.empty(dsel.shape[0], dtype=np.uint8)
            state = np.zeros(duniq.shape[0], dtype=np.int8)
            byte_addr = daddr >> (shift - PAGE_SHIFT)
            blocks = d.blocks(self._page_code)
            direct.read_entries(duniq, dbounds, byte_addr, blocks, direct.GAP_BYTES, raw, state)
        finally:
            with c.lock:
                self._direct_readers -= 1
                c.lock.notify_all()
        bad = np.flatnonzero(state)
        if bad.shape[0]:
            p = int(duniq[bad[0]])
            code = int(self._page_code[p])
            what = direct.STATES[int(state[bad[0]])]
            raise TableFileError(
                self.sources[code].path,
                f"damaged slice file (block {p - int(d.first_page[code])} of {self.name}: {what})",
            )
        self.cache.direct_blocks += duniq.shape[0]
        put(dsel, daddr, raw)
        return sel, addr, uniq, bounds

    def read_byte(self, page: int, addr: int) -> int | None:
        """A single probe's missing byte at address ``addr`` (in page ``page``) read
        straight from its group-coded block, the first time the page is missed (a second
        miss, while the page is among the last :attr:`BlockCache.slots` (at most
        :data:`SEEN_LIMIT`) read so, leaves it to be cached: None); None too for a block
        that is not group-coded or whose slice stays resident. :class:`TableFileError`
        naming the block if it is damaged."""
        c = self.cache
        with c.lock:
            d = self.direct
            if not direct.AVAILABLE or page >= d.sizes.shape[0] or d.sizes[page] < 0:
                return None
            if self._seen.pop(page, None) is not None:
                return None  # missed twice: worth a slot
            self._seen[page] = None
            if len(self._seen) > min(c.slots, SEEN_LIMIT):
                del self._seen[next(iter(self._seen))]
            self._direct_readers += 1
        code = int(self._page_code[page])
        k = page - int(d.first_page[code])
        try:
            place = (  # direct.PLACE
                int(d.fds[code]), int(d.offsets[page]), int(d.sizes[page]), int(d.zcrcs[page]),
                int(d.groups_at[code]), int(d.row_lens[code]), int(d.shifts[code]), k,
            )  # fmt: skip
            state, b = direct.read_byte(
                place,
                d.tables[int(d.tabidx[code])],
                addr & (BLOCK_BYTES - 1),
                np.empty(d.max_size + 8, dtype=np.uint8),
                np.empty(int(d.row_lens[code]), dtype=np.uint16),
            )
        finally:
            with c.lock:
                self._direct_readers -= 1
                c.lock.notify_all()
        if state != direct.OK:
            raise TableFileError(
                self.sources[code].path,
                f"damaged slice file (block {k} of {self.name}: {direct.STATES[state]})",
            )
        c.direct_blocks += 1
        return int(b)

    def one(self, page: int, run: Callable[[], tuple[int, int]]) -> tuple[int, int]:
        """``run()`` again with page ``page`` pinned in the cache (a single probe's miss)."""
        c = self.cache
        pinned = c.acquire(self, np.array([page], dtype=np.int64))
        try:
            return run()
        finally:
            c.release(pinned)
