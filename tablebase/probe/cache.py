"""A bounded cache of table blocks between the slice files and every probe.

A :class:`BlockCache` holds up to ``capacity`` bytes of blocks
(:data:`~tablebase.storage.chunkio.BLOCK_BYTES` each, :mod:`tablebase.probe.blocks`) in one
array, its *slots*; the memory is taken from the system as slots are first filled, never
more than the capacity. When every slot is taken, the least recently used blocks are
evicted (chosen in groups of a sixty-fourth of the cache, oldest first, so that a miss does
not scan the whole cache). One cache may serve several databases and threads.

A :class:`PagedPart` is one part (``values`` or ``wdl``) of one database as seen by the
compiled probes: each slice opened gets a range of *pages* (its blocks, in order) at a
byte address, and the part's *table* (:mod:`tablebase.probe.pagetable`) maps each page to the
slot holding that block, or a negative number if it is not in the cache. A probe computes
its entry's byte address (the slice's first byte plus ``entry * width``) and reads
``arena[slot * BLOCK_BYTES + address % BLOCK_BYTES]``
(:func:`~tablebase.probe.pagetable.read_entry`); where the page is missing it reports the
page, and the caller has the block read (:meth:`BlockCache.acquire`, which *pins* it: it
stays until :meth:`BlockCache.release`) and probes again. A batch is answered in rounds
(:meth:`PagedPart.fill`): every position located and read where its block is cached, then
the missing blocks grouped (each read once per batch when the batch's blocks fit in the
cache) and the entries of the positions that need them read at the addresses found.

**Threads.** The slots, page tables and pins change only under the cache's lock and only
while the changing thread holds the GIL (Python statements, and compiled helpers that keep
the GIL); the compiled probes keep the GIL while they run (none is ``nogil``), so a probe
never sees a slot change under it. A block is evicted (its page unmapped) before its slot
is refilled, and a slot is filled (outside the lock: reading and inflating release the GIL)
before its page is mapped; a page being read is marked :data:`IN_FLIGHT`, and a second
thread wanting it waits for it. A page table that grows (a slice opened) is copied, the
copy published, and the old one emptied, all under the lock: a thread still holding the
old table sees only misses and asks again.

**Resident.** The blocks of slices of up to :data:`RESIDENT_PIECES` pieces stay pinned
once read, up to a quarter of the cache: every probe passes through them (captures lead
there), and they are small (all the 2-4 piece slices of International: 27 MiB).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from tablebase.probe import direct
from tablebase.probe.pagesort import by_page, coded_pages, split_pages
from tablebase.probe.pagetable import (
    IN_FLIGHT,
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

MIN_SLOTS = 4  # the smallest cache: a few blocks
RESIDENT_PIECES = 4  # slices of up to this many pieces stay cached once read
DEFAULT_SHARE = 4  # the default capacity: a quarter of the machine's memory
EVICT_SHARE = 64  # slots chosen for eviction at a time: a sixty-fourth of the cache
READ_THREADS = max(2, min(8, os.cpu_count() or 1))


def machine_memory() -> int:
    """Bytes of physical memory of the machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_capacity() -> int:
    """The default cache size: a fixed share (:data:`DEFAULT_SHARE`) of the machine's
    memory."""
    return machine_memory() // DEFAULT_SHARE


def cache_bytes(size: int | str | None) -> int:
    """Bytes of a cache size given as an integer, a text such as ``256M``, ``1G``,
    ``1.5GiB`` (binary multiples), or None (the default, :func:`default_capacity`);
    ``ValueError`` naming what is wrong."""
    # imported here, not at the top: tablebase.build.schedule brings the build's machinery
    # (process pools, the solver's modules) into `import tablebase`: +0.15 s on its 1.0 s
    # (best of 5, loaded 2-core machine, 2026-12-07)
    from tablebase.build.schedule import parse_size

    if size is None:
        return default_capacity()
    n = parse_size(size) if isinstance(size, str) else int(size)
    if n < MIN_SLOTS * BLOCK_BYTES:
        raise ValueError(
            f"cache size {size!r} is below the smallest cache, {MIN_SLOTS} blocks of "
            f"{BLOCK_BYTES} bytes ({MIN_SLOTS * BLOCK_BYTES} bytes)"
        )
    return n


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


SEEN_LIMIT = 1 << 16  # pages a part remembers a single probe read directly (a few MiB)


class BlockCache:
    """Up to ``capacity`` bytes of blocks (see the module docstring); ``capacity`` as
    :func:`cache_bytes` reads it (None: a quarter of the machine's memory)."""

    def __init__(self, capacity: int | str | None = None) -> None:
        nbytes = cache_bytes(capacity)
        self.slots = nbytes // BLOCK_BYTES
        self.capacity = self.slots * BLOCK_BYTES
        # zeroed lazily by the system: memory is taken as slots are first written
        self.arena = np.zeros(self.capacity, dtype=np.uint8)
        # last use of each slot (-1: free); the last element is the clock
        self.stamps = np.full(self.slots + 1, -1, dtype=np.int64)
        self.stamps[-1] = 0
        self.pins = np.zeros(self.slots, dtype=np.int32)
        # the part (its number in _parts, -1: none) and page of each slot's block
        self.owner_part = np.full(self.slots, -1, dtype=np.int64)
        self.owner_page = np.zeros(self.slots, dtype=np.int64)
        self._parts: dict[int, weakref.ref] = {}
        self._dead: list[int] = []  # parts collected: their slots are freed
        self._numbered = 0  # parts registered
        self.resident = np.zeros(self.slots, dtype=np.bool_)  # pinned for good
        self.lock = threading.Condition(threading.RLock())
        self._free = list(range(self.slots - 1, -1, -1))
        self._victims: list[int] = []
        self.resident_limit = self.slots // 4
        self.resident_slots = 0
        self.reads = 0  # blocks read from files
        self.direct_blocks = 0  # blocks whose entries batches read directly (not cached)
        self.evictions = 0
        self._pool: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"BlockCache({self.capacity} bytes, {self.slots} blocks of {BLOCK_BYTES})"

    @property
    def used(self) -> int:
        """Bytes of the cache holding blocks."""
        return (self.slots - len(self._free)) * BLOCK_BYTES

    def batch_limit(self) -> int:
        """Pages a batch reads and pins at a time: half of what is not resident."""
        return max(1, (self.slots - self.resident_slots) // 2)

    # --- slots -------------------------------------------------------------------------
    def register(self, part: PagedPart) -> int:
        """The number by which the slots name ``part`` (its slots are freed when it is
        collected)."""
        with self.lock:
            self._numbered += 1
            n = self._numbered

            def collected(_: object) -> None:  # its slots are freed by the next _take_slots
                self._dead.append(n)

            self._parts[n] = weakref.ref(part, collected)
            return n

    def _free_slots(self, slots: np.ndarray) -> None:
        """Free ``slots`` (under the lock; their pages already unmapped)."""
        if not slots.shape[0]:
            return
        self.resident_slots -= int(self.resident[slots].sum())
        self.resident[slots] = False
        self.owner_part[slots] = -1
        self.pins[slots] = 0
        self.stamps[slots] = -1
        self._free.extend(slots.tolist())

    def _evict(self, slots: np.ndarray) -> None:
        """Unmap the blocks in ``slots`` (under the lock; the slots are then the caller's)."""
        own = self.owner_part[slots]
        held = own >= 0
        for n in np.unique(own[held]).tolist():
            ref = self._parts.get(n)
            part = None if ref is None else ref()
            mine = slots[own == n]
            if part is not None:
                pages = part.pages
                pg = self.owner_page[mine]
                ok = pg < pages.shape[0]
                pg, mine = pg[ok], mine[ok]
                pages[pg[pages[pg] == mine]] = NOT_CACHED
        self.evictions += int(held.sum())
        self.owner_part[slots] = -1

    def _evict_one(self, s: int) -> None:
        """:meth:`_evict` of one slot, in plain Python (a single probe's miss)."""
        n = int(self.owner_part[s])
        if n >= 0:
            ref = self._parts.get(n)
            part = None if ref is None else ref()
            if part is not None:
                pages = part.pages
                page = int(self.owner_page[s])
                if page < pages.shape[0] and pages[page] == s:
                    pages[page] = NOT_CACHED
            self.evictions += 1
            self.owner_part[s] = -1

    def _take_slots(self, k: int) -> list[int]:
        """Up to ``k`` slots to fill (under the lock): free ones, then the least recently
        used unpinned ones, evicted (fewer if the rest are pinned). A few slots at a time
        come from a list of the oldest computed for a sixty-fourth of the cache at once;
        many at a time, from one partial sort of the whole cache."""
        if self._dead:  # parts collected since the last time: one pass frees their slots
            dead = []
            while self._dead:
                dead.append(self._dead.pop())
            for n in dead:
                self._parts.pop(n, None)
            self._free_slots(np.flatnonzero(np.isin(self.owner_part, dead)))
        take = min(k, len(self._free))
        out = self._free[len(self._free) - take :]
        del self._free[len(self._free) - take :]
        need = k - take
        group = max(1, self.slots // EVICT_SHARE)
        if need >= group:
            top = np.iinfo(np.int64).max
            age = np.where(self.pins > 0, top, self.stamps[:-1])
            age[out] = top  # taken from the free list just now
            need = min(need, int((age < top).sum()))
            if need > 0:
                pick = np.argpartition(age, need - 1)[:need] if need < self.slots else age.argsort()
                self._evict(pick)
                out.extend(pick.tolist())
                self._victims = []
            return out
        for _ in range(need):
            s = self._victim(group)
            if s < 0:
                break
            self._evict_one(s)
            out.append(s)
        return out

    def _victim(self, group: int) -> int:
        """The least recently used unpinned slot, from the list of the ``group`` oldest
        (made again when used up); -1 if every slot is pinned."""
        for _ in range(2):
            while self._victims:
                s = self._victims.pop()
                if not self.pins[s] and self.owner_part[s] >= 0:
                    return s
            age = np.where(self.pins > 0, np.iinfo(np.int64).max, self.stamps[:-1])
            pick = np.argpartition(age, group - 1)[:group] if group < self.slots else age.argsort()
            pick = pick[np.argsort(-age[pick], kind="stable")]  # the oldest popped first
            self._victims = pick[self.pins[pick] == 0].tolist()
        return -1

    def acquire(self, part: PagedPart, pages: np.ndarray) -> list[int]:
        """Pin as many of ``pages`` of ``part`` as the cache can hold at once (at least
        one: waits for other threads' blocks while every slot is pinned or every page
        wanted is being read by another thread), reading those not cached; the slots
        pinned, for :meth:`release`. Raises the :class:`TableFileError` of a damaged
        block (nothing left pinned)."""
        if len(pages) == 1:
            return self._acquire_one(part, int(pages[0]))
        pinned: list[int] = []
        todo: list[tuple[int, int]] = []
        pages = np.asarray(pages, dtype=np.int64)
        if pages.shape[0] and int(pages.max()) >= part.pages.shape[0]:
            raise IndexError(f"page {int(pages.max())} of {part.name} was never given")
        with self.lock:
            while True:
                table = part.pages
                cur = table[pages]
                held = cur[cur >= 0]
                np.add.at(self.pins, held, 1)
                pinned = held.tolist()
                waiting = bool((cur == IN_FLIGHT).any())
                missing = pages[cur == NOT_CACHED]
                slots = self._take_slots(missing.shape[0]) if missing.shape[0] else []
                if slots:
                    missing = missing[: len(slots)]
                    table[missing] = IN_FLIGHT
                    self.pins[slots] = 1
                    self.stamps[slots] = self.stamps[-1]
                    self.owner_part[slots] = part.number
                    self.owner_page[slots] = missing
                    todo = list(zip(missing.tolist(), slots, strict=True))
                if pinned or todo:
                    break
                if not waiting and int((self.pins > 0).sum()) <= self.resident_slots:
                    raise RuntimeError("block cache: no slot to read a block into")
                self.lock.wait(0.05)
        errors: dict[int, BaseException] = {}  # page -> its read's error
        done: list[tuple[int, int]] = []
        failed: list[tuple[int, int]] = []
        if todo:
            # the blocks in contiguous runs, one per reading thread (inflating releases the GIL)
            n = 1 if len(todo) < 8 else READ_THREADS
            step = -(-len(todo) // n)
            runs = [todo[i : i + step] for i in range(0, len(todo), step)]

            def read_run(run: list[tuple[int, int]]) -> list[BaseException | None]:
                return [self._read(part, p, slot) for p, slot in run]

            if len(runs) == 1:
                results = read_run(runs[0])
            else:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="blocks")
                results = [e for errs in self._pool.map(read_run, runs) for e in errs]
            for item, err in zip(todo, results, strict=True):
                if err is None:
                    done.append(item)
                else:
                    failed.append(item)
                    errors[item[0]] = err
        error: BaseException | None = None
        with self.lock:
            table = part.pages
            if failed:
                fp, fs = self._still_mine(part, failed)  # a closed part's read fails unseen
                table[fp] = NOT_CACHED
                self._free_slots(fs)
                error = errors[int(fp[0])] if fp.shape[0] else None
            if done:
                dp, ds = self._still_mine(part, done)  # not freed by a close meanwhile
                table[dp] = ds  # mapped once their bytes are in place
                self.reads += len(done)
                room = self.resident_limit - self.resident_slots
                if part.resident and room > 0:
                    stay = ds[part.resident_pages(dp)][:room]
                    self.pins[stay] += 1  # stays: never released
                    self.resident[stay] = True
                    self.resident_slots += stay.shape[0]
                pinned.extend(ds.tolist())
            self.lock.notify_all()
        if error is not None:
            self.release(pinned)
            raise error
        return pinned

    def _acquire_one(self, part: PagedPart, page: int) -> list[int]:
        """:meth:`acquire` of one page, in plain Python: a single probe's miss costs the
        block's read and little more."""
        if page >= part.pages.shape[0]:
            raise IndexError(f"page {page} of {part.name} was never given")
        with self.lock:
            while True:
                table = part.pages
                s = int(table[page])
                if s >= 0:
                    self.pins[s] += 1
                    return [s]
                if s == NOT_CACHED:
                    got = self._take_slots(1)
                    if got:
                        slot = got[0]
                        table[page] = IN_FLIGHT
                        self.pins[slot] = 1
                        self.stamps[slot] = self.stamps[-1]
                        self.owner_part[slot] = part.number
                        self.owner_page[slot] = page
                        break
                    if int((self.pins > 0).sum()) <= self.resident_slots:
                        raise RuntimeError("block cache: no slot to read a block into")
                self.lock.wait(0.05)
        error = self._read(part, page, slot)
        with self.lock:
            table = part.pages
            mine = (
                page < table.shape[0]
                and self.owner_part[slot] == part.number
                and self.owner_page[slot] == page
            )  # not freed by the part's closing meanwhile
            pinned = []
            if not mine:
                error = None  # the part closed meanwhile (its files too): the caller asks again
            elif error is not None:
                table[page] = NOT_CACHED
                self._free_slots(np.array([slot], dtype=np.int64))
            else:
                table[page] = slot  # mapped once its bytes are in place
                self.reads += 1
                if (
                    self.resident_slots < self.resident_limit
                    and int(part._page_code[page]) in part.resident
                ):
                    self.pins[slot] += 1  # stays: never released
                    self.resident[slot] = True
                    self.resident_slots += 1
                pinned = [slot]
            self.lock.notify_all()
        if error is not None:
            raise error
        return pinned

    def _still_mine(
        self, part: PagedPart, items: list[tuple[int, int]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pages and slots of ``items`` (page, slot) whose slots still hold ``part``'s
        page being read (under the lock): not freed by the part's closing meanwhile."""
        pg = np.array([p for p, _ in items], dtype=np.int64)
        sl = np.array([s for _, s in items], dtype=np.int64)
        ok = (self.owner_part[sl] == part.number) & (self.owner_page[sl] == pg)
        ok &= pg < part.pages.shape[0]
        return pg[ok], sl[ok]

    def _read(self, part: PagedPart, page: int, slot: int) -> BaseException | None:
        out = self.arena[slot * BLOCK_BYTES : (slot + 1) * BLOCK_BYTES]
        try:
            part.read_page(page, out)
        except Exception as e:  # handed back to the thread that asked
            return e
        return None

    def release(self, slots: list[int]) -> None:
        """Unpin slots that :meth:`acquire` pinned."""
        if not slots:
            return
        with self.lock:
            if len(slots) == 1:
                self.pins[slots[0]] -= 1
            else:
                np.subtract.at(self.pins, np.asarray(slots, dtype=np.int64), 1)
            self.lock.notify_all()

    def forget(self, part: PagedPart) -> None:
        """Free every slot holding a block of ``part`` (under the lock; the part closes)."""
        with self.lock:
            self._free_slots(np.flatnonzero(self.owner_part == part.number))
            self.lock.notify_all()


_DEFAULT: BlockCache | None = None
_DEFAULT_LOCK = threading.Lock()


def default_cache() -> BlockCache:
    """The process's shared cache for databases opened without a cache size (a quarter of
    the machine's memory, taken only as blocks are read)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = BlockCache(None)
        return _DEFAULT
