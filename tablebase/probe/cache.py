"""A bounded cache of table blocks between the slice files and every probe.

A :class:`BlockCache` holds up to ``capacity`` bytes of blocks
(:data:`~tablebase.storage.chunkio.BLOCK_BYTES` each, :mod:`tablebase.probe.blocks`) in one
array, its *slots*; the memory is taken from the system as slots are first filled, never
more than the capacity. When every slot is taken, the least recently used blocks are
evicted (chosen in groups of a sixty-fourth of the cache, oldest first, so that a miss does
not scan the whole cache). One cache may serve several databases and threads.

A :class:`PagedPart` is one part (``values`` or ``wdl``) of one database as seen by the
compiled probes: each slice opened gets a range of *pages* (its blocks, in order) at a
byte address ``bases[code]``, and ``pages[page]`` is the slot holding that block, or a
negative number if it is not in the cache. A probe computes its entry's byte address
``bases[code] + entry * width`` and reads ``arena[slot * BLOCK_BYTES + address %
BLOCK_BYTES]`` (:func:`read_entry`); where the page is missing it reports the page, and the
caller has the block read (:meth:`BlockCache.acquire`, which *pins* it: it stays until
:meth:`BlockCache.release`) and probes again. A batch is answered in rounds: the positions
whose blocks are cached at once, then the missing blocks grouped (each read once per batch
when the batch's blocks fit in the cache) and the positions that need them.

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

import numpy as np
from numba import njit

from tablebase.storage.chunkio import BLOCK_BYTES

PAGE_SHIFT = BLOCK_BYTES.bit_length() - 1
assert 1 << PAGE_SHIFT == BLOCK_BYTES
PAGE_MASK = BLOCK_BYTES - 1
NOT_CACHED = -1  # pages[p]: the block is not in the cache
IN_FLIGHT = -2  # pages[p]: a thread is reading the block
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

    Arrays read by the compiled probes: ``meta`` (``meta[code]`` the byte address of slice
    ``code``'s first block, -1 if the slice is not open; ``meta[4096 + code]`` bytes per
    entry), ``cache.arena``, ``pages`` and ``cache.stamps``."""

    def __init__(self, cache: BlockCache, name: str) -> None:
        self.cache = cache
        self.name = name
        self.meta = np.full(8192, -1, dtype=np.int64)
        self.pages = np.full(0, NOT_CACHED, dtype=np.int32)
        self._page_code = np.zeros(0, dtype=np.int16)
        self.sources: dict[int, object] = {}  # code -> tablebase.probe.blocks.PartSource
        self.resident: set[int] = set()  # codes whose blocks stay
        self.stored = np.zeros(4096, dtype=np.bool_)  # wdl: the slice stores captures
        self.ref = weakref.ref(self, cache._died)  # how the cache names its owner

    def add(self, code: int, source, resident: bool) -> None:  # type: ignore[no-untyped-def]
        """Give slice ``code`` (its blocks read by ``source``, a
        :class:`~tablebase.probe.blocks.PartSource`) its pages."""
        c = self.cache
        with c.lock:
            if code in self.sources:
                source.close()
                return
            first = self.pages.shape[0]
            grown = np.full(first + source.blocks, NOT_CACHED, dtype=np.int32)
            grown[:first] = self.pages
            codes = np.empty(first + source.blocks, dtype=np.int16)
            codes[:first] = self._page_code
            codes[first:] = code
            old = self.pages
            self._page_code = codes
            self.pages = grown
            old[:] = NOT_CACHED  # a thread holding the old table sees misses only
            self.sources[code] = source
            if resident:
                self.resident.add(code)
            self.stored[code] = bool(getattr(source, "captures_stored", True))
            self.meta[4096 + code] = source.width
            self.meta[code] = first << PAGE_SHIFT  # published last: the slice is open

    def is_open(self, code: int) -> bool:
        return self.meta[code] >= 0

    def read_page(self, page: int, out: np.ndarray) -> None:
        code = int(self._page_code[page])
        block = page - (int(self.meta[code]) >> PAGE_SHIFT)
        self.sources[code].read(block, out)  # type: ignore[attr-defined]

    def code_of_page(self, page: int) -> int:
        return int(self._page_code[page])

    def close(self) -> None:
        """Drop every block of this part from the cache and close its files."""
        c = self.cache
        with c.lock:
            self.meta[:4096] = -1
            self.pages[:] = NOT_CACHED  # before its slots are freed: a thread holding it misses
            c.forget(self)
            self.pages = np.full(0, NOT_CACHED, dtype=np.int32)
            self._page_code = np.zeros(0, dtype=np.int16)
            for s in self.sources.values():
                s.close()  # type: ignore[attr-defined]
            self.sources.clear()
            self.resident.clear()

    def fill(self, run: Callable[[np.ndarray | None], tuple[np.ndarray, int]]) -> None:
        """Answer a batch through the cache: ``run(sel)`` probes the positions ``sel`` of
        the batch (None: all of them), writing the answers it can and returning, per
        position probed, the page it lacks (-1 where answered), and how many lack one. The
        missing pages are grouped, read (each once while the batch's pages fit in the
        cache) and pinned while the positions that need them are probed again."""
        need, missed = run(None)
        if not missed:
            return
        sel = np.flatnonzero(need >= 0)
        pg = need[sel]
        c = self.cache
        while sel.shape[0]:
            order = np.argsort(pg, kind="stable")
            sel, pg = sel[order], pg[order]
            uniq, first = np.unique(pg, return_index=True)
            bounds = np.append(first, pg.shape[0])
            left_sel: list[np.ndarray] = []
            left_pg: list[np.ndarray] = []
            k = 0
            while k < uniq.shape[0]:
                group = uniq[k : k + c.batch_limit()]
                pinned = c.acquire(self, group)
                try:
                    sub = sel[bounds[k] : bounds[k + group.shape[0]]]
                    again, _ = run(sub)
                finally:
                    c.release(pinned)
                rest = again >= 0
                if rest.any():
                    left_sel.append(sub[rest])
                    left_pg.append(again[rest])
                k += group.shape[0]
            sel = np.concatenate(left_sel) if left_sel else sel[:0]
            pg = np.concatenate(left_pg) if left_pg else pg[:0]

    def one(self, page: int, run: Callable[[], int]) -> int:
        """``run()`` again with page ``page`` pinned in the cache (a single probe's miss)."""
        c = self.cache
        pinned = c.acquire(self, np.array([page], dtype=np.int64))
        try:
            return run()
        finally:
            c.release(pinned)


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
        # (weakref of the part, page) of each slot's block
        self.owner: list[tuple[weakref.ref, int] | None] = [None] * self.slots
        self.resident = np.zeros(self.slots, dtype=np.bool_)  # pinned for good
        self._dead: list[weakref.ref] = []  # parts collected: their slots are freed
        self.lock = threading.Condition(threading.RLock())
        self._free = list(range(self.slots - 1, -1, -1))
        self._victims: list[int] = []
        self.resident_limit = self.slots // 4
        self.resident_slots = 0
        self.reads = 0  # blocks read from files
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
    def _died(self, ref: weakref.ref) -> None:
        self._dead.append(ref)  # atomic; the slots are freed by the next thread to take one

    def _free_slot(self, s: int) -> None:
        if self.resident[s]:
            self.resident[s] = False
            self.resident_slots -= 1
        self.owner[s] = None
        self.pins[s] = 0
        self.stamps[s] = -1
        self._free.append(s)

    def _evict(self, s: int) -> None:
        """Unmap the block in slot ``s`` (under the lock; the slot is then the caller's)."""
        own = self.owner[s]
        if own is not None:
            part, page = own[0](), own[1]
            if part is not None and part.pages.shape[0] > page and part.pages[page] == s:
                part.pages[page] = NOT_CACHED
            self.owner[s] = None
            self.evictions += 1

    def _take_slots(self, k: int) -> list[int]:
        """Up to ``k`` slots to fill (under the lock): free ones, then the least recently
        used unpinned ones, evicted (fewer if the rest are pinned). A few slots at a time
        come from a list of the oldest computed for a sixty-fourth of the cache at once;
        many at a time, from one partial sort of the whole cache."""
        if self._dead:  # parts collected since the last time: one pass frees their slots
            dead = []
            while self._dead:
                dead.append(self._dead.pop())
            gone = {id(ref) for ref in dead}  # ``dead`` keeps the ids unique meanwhile
            for s, own in enumerate(self.owner):
                if own is not None and id(own[0]) in gone:
                    self._free_slot(s)
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
                for s in pick.tolist():
                    self._evict(s)
                    out.append(s)
                self._victims = []
            return out
        for _ in range(need):
            s = self._victim(group)
            if s < 0:
                break
            self._evict(s)
            out.append(s)
        return out

    def _victim(self, group: int) -> int:
        """The least recently used unpinned slot, from the list of the ``group`` oldest
        (made again when used up); -1 if every slot is pinned."""
        for _ in range(2):
            while self._victims:
                s = self._victims.pop()
                if not self.pins[s] and self.owner[s] is not None:
                    return s
            age = np.where(self.pins > 0, np.iinfo(np.int64).max, self.stamps[:-1])
            pick = np.argpartition(age, group - 1)[:group] if group < self.slots else age.argsort()
            pick = pick[np.argsort(-age[pick], kind="stable")]  # the oldest popped first
            self._victims = [int(s) for s in pick if self.pins[s] == 0]
        return -1

    def acquire(self, part: PagedPart, pages: np.ndarray) -> list[int]:
        """Pin as many of ``pages`` of ``part`` as the cache can hold at once (at least
        one: waits for other threads' blocks while every slot is pinned or every page
        wanted is being read by another thread), reading those not cached; the slots
        pinned, for :meth:`release`. Raises the :class:`TableFileError` of a damaged
        block (nothing left pinned)."""
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
                    ref = part.ref
                    todo = list(zip(missing.tolist(), slots, strict=True))
                    for p, slot in todo:
                        self.owner[slot] = (ref, p)
                if pinned or todo:
                    break
                if not waiting and int((self.pins > 0).sum()) <= self.resident_slots:
                    raise RuntimeError("block cache: no slot to read a block into")
                self.lock.wait(0.05)
        error: BaseException | None = None
        done: list[tuple[int, int]] = []
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
            failed = []
            for (p, slot), err in zip(todo, results, strict=True):
                if err is None:
                    done.append((p, slot))
                else:
                    failed.append((p, slot))
                    error = error or err
        with self.lock:
            if todo:
                for p, slot in failed:
                    if part.pages.shape[0] > p:
                        part.pages[p] = NOT_CACHED
                    self._free_slot(slot)
            for p, slot in done:
                part.pages[p] = slot  # mapped once its bytes are in place
                self.reads += 1
                code = part.code_of_page(p)
                if code in part.resident and self.resident_slots < self.resident_limit:
                    self.pins[slot] += 1  # stays: never released
                    self.resident[slot] = True
                    self.resident_slots += 1
            pinned.extend(slot for _, slot in done)
            self.lock.notify_all()
        if error is not None:
            self.release(pinned)
            raise error
        return pinned

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
            for s in slots:
                self.pins[s] -= 1
            self.lock.notify_all()

    def forget(self, part: PagedPart) -> None:
        """Free every slot holding a block of ``part`` (under the lock; the part closes)."""
        with self.lock:
            for s, own in enumerate(self.owner):
                if own is not None and own[0] is part.ref:
                    self._free_slot(s)
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


# --- compiled reads -------------------------------------------------------------------------


@njit(cache=True, inline="always")
def read_entry(meta, arena, pages, stamps, code, entry, tick):
    """The value at ``entry`` of slice ``code`` (``meta[4096 + code]`` bytes,
    little-endian), or ``-3 - page`` for a page not in the cache (``-2`` if the slice is
    not open)."""
    base = meta[code]
    if base < 0:
        return -2
    width = meta[4096 + code]
    addr = base + entry * width
    p = addr >> PAGE_SHIFT
    if p >= pages.shape[0]:
        return -3 - p
    s = pages[p]
    if s < 0:
        return -3 - p
    if stamps[s] != tick:  # written once a batch: a store per probe would bounce the line
        stamps[s] = tick
    o = (np.int64(s) << PAGE_SHIFT) | (addr & PAGE_MASK)
    v = np.int64(arena[o])
    if width == 2:
        v |= np.int64(arena[o + 1]) << 8
    return v


@njit(cache=True, inline="always")
def read_code(meta, arena, pages, stamps, code, entry, tick):
    """The two-bit WDL code at ``entry`` of slice ``code`` (packed four to a byte), or
    ``-3 - page`` / ``-2`` as :func:`read_entry`."""
    base = meta[code]
    if base < 0:
        return -2
    addr = base + (entry >> 2)
    p = addr >> PAGE_SHIFT
    if p >= pages.shape[0]:
        return -3 - p
    s = pages[p]
    if s < 0:
        return -3 - p
    if stamps[s] != tick:  # written once a batch: a store per probe would bounce the line
        stamps[s] = tick
    o = (np.int64(s) << PAGE_SHIFT) | (addr & PAGE_MASK)
    return (np.int64(arena[o]) >> ((entry & 3) << 1)) & 3


@njit(cache=True, inline="always")
def next_tick(stamps):
    """Advance the cache's clock (the last element of ``stamps``) and return it: the
    stamp of every block a probe reads."""
    t = stamps[-1] + 1
    stamps[-1] = t
    return t
