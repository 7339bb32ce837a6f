"""A bounded cache of table blocks between the slice files and every probe.

A :class:`BlockCache` holds up to ``capacity`` bytes of blocks
(:data:`~tablebase.storage.chunkio.BLOCK_BYTES` each, :mod:`tablebase.probe.blocks`) in one
array, its *slots*; the memory is taken from the system as slots are first filled, never
more than the capacity. When every slot is taken, the least recently used blocks are
evicted (chosen in groups of a sixty-fourth of the cache, oldest first, so that a miss does
not scan the whole cache). One cache may serve several databases and threads.

The compiled probes see the cache through a part's page table
(:class:`tablebase.probe.pagedpart.PagedPart`, one per part of a database: what the cache
asks of a part is :class:`CachedPart`); the cache names each slot's part and page, so that
an evicted block is unmapped from its table.

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
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np

from tablebase.probe.pagetable import (
    IN_FLIGHT,
    NOT_CACHED,
)
from tablebase.storage.chunkio import BLOCK_BYTES

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


class CachedPart(Protocol):
    """What the cache asks of a part whose blocks it holds
    (:class:`tablebase.probe.pagedpart.PagedPart`)."""

    name: str
    number: int  # how the cache's slots name the part (:meth:`BlockCache.register`)
    resident: set[int]  # codes of the slices whose blocks stay once read

    @property
    def pages(self) -> np.ndarray:
        """The part's page table's entries: the slot of each page, or a negative number."""
        ...

    def read_page(self, page: int, out: np.ndarray) -> None:
        """The block of ``page`` read from its file into ``out``."""
        ...

    def resident_pages(self, pages: np.ndarray) -> np.ndarray:
        """Whether each of ``pages`` belongs to a slice whose blocks stay."""
        ...

    def page_stays(self, page: int) -> bool:
        """Whether ``page`` belongs to a slice whose blocks stay."""
        ...


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
    def register(self, part: CachedPart) -> int:
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

    def acquire(self, part: CachedPart, pages: np.ndarray) -> list[int]:
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

    def _acquire_one(self, part: CachedPart, page: int) -> list[int]:
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
                if self.resident_slots < self.resident_limit and part.page_stays(page):
                    self.pins[slot] += 1  # stays: never released
                    self.resident[slot] = True
                    self.resident_slots += 1
                pinned = [slot]
            self.lock.notify_all()
        if error is not None:
            raise error
        return pinned

    def _still_mine(
        self, part: CachedPart, items: list[tuple[int, int]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pages and slots of ``items`` (page, slot) whose slots still hold ``part``'s
        page being read (under the lock): not freed by the part's closing meanwhile."""
        pg = np.array([p for p, _ in items], dtype=np.int64)
        sl = np.array([s for _, s in items], dtype=np.int64)
        ok = (self.owner_part[sl] == part.number) & (self.owner_page[sl] == pg)
        ok &= pg < part.pages.shape[0]
        return pg[ok], sl[ok]

    def _read(self, part: CachedPart, page: int, slot: int) -> BaseException | None:
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

    def forget(self, part: CachedPart) -> None:
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
