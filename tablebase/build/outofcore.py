"""The out-of-core pair task: a pair with men solved by bands (:mod:`tablebase.solve.bands`)
with its state on disk, under a memory cap, resumable band by band; the bands of one group
solved at once by different processes or machines if asked (:mod:`tablebase.build.clusterbands`).

Everything lives in the pair's scratch folder, ``<db>/.bands/<pair>/`` (:func:`scratch_folder`),
removed once the pair's files are written:

* ``plan.json`` (:data:`MANIFEST`): the pair, the band size, the number of bands and the width
  of the dependencies' values; written once, when the folder is made;
* ``deps.raw``: the dependencies' values, decompressed once, end to end as the flat tables
  (:func:`tablebase.material.slices.flat_offsets`), memory-mapped read-only by the bands;
  written under a temporary name and renamed when complete;
* ``band-<n>.u16``: band ``n``'s values (its configurations in band order, the white-to-move
  part then the black-to-move part, raw ``uint16``), and ``band-<n>.json``: its record (its
  largest value, its random accesses, the BLAKE2 digest of its file). Each is written by
  the band's own process only, under a name of its own, and renamed into place: the file
  first, then the record. **No file is written by two bands**, so bands solved at once on
  machines sharing the folder over NFS never write into one page (a memory-mapped page is
  written back whole);
* at the end: ``white.u16``, ``black.u16``, each part's values in configuration-rank order
  (configuration ``r`` at ``r * kk``) put together from the band files, one band at a time;
  then ``assembled.json`` (the random accesses of all bands), and the band files are
  removed; ``mirror.u16``, the black-to-move part in the mirror slice's order.

**Resume** (:meth:`Scratch.open`). A rerun with the same plan keeps a band whose record is
there and whose file still hashes to its digest, group by group: every band of a group
all of whose bands are kept, and those kept of the first group that is not complete; the
bands after that group are solved again (they may have read a band that is solved again).
A build killed at any point loses at most the bands in progress. Once ``assembled.json`` is
there, every band is kept.

**Memory.** The files are memory-mapped afresh for each band and each step of the end, and
let go after it, so that what stays resident is one band's window and what it touched;
:func:`task_memory` estimates it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tablebase.build.faults import SliceWriteError, describe
from tablebase.material.index import BINOM
from tablebase.material.slices import Slice, flat_offsets, pair_dependencies
from tablebase.rules.variants import Variant
from tablebase.solve import bands, men
from tablebase.solve.memory import FIXED_TASK_BYTES
from tablebase.storage.checks import CHECK_BLOCK_ENTRIES
from tablebase.storage.chunkio import BLOCK_BYTES
from tablebase.storage.reader import read_slice
from tablebase.storage.slicefile import SliceStats, slice_path
from tablebase.storage.values import value_dtype
from tablebase.storage.writer import write_slice

log = logging.getLogger("tablebase.build.outofcore")

MANIFEST = "plan.json"  # the plan, written once
ASSEMBLED = "assembled.json"  # the parts put together in rank order
# The attribute of the log records that say how far a pair is: (pair, bands done, bands);
# a build's progress display reads it (:class:`tablebase.build.schedule.BandRelay`)
BAND_PROGRESS = "band_progress"
FOLDER = ".bands"
END_STEP_BYTES = 64 << 20  # raw values mapped at a time by the end's steps (mirror, stats)


def scratch_folder(db: Path, pair: tuple[Slice, ...]) -> Path:
    """Where the out-of-core state of ``pair`` lives in database ``db``."""
    return db / FOLDER / "+".join(s.name for s in pair)


def write_memory(variant: Variant, pair: tuple[Slice, ...]) -> int:
    """Bytes the writing of the pair's slices holds with ``scratch``
    (:func:`tablebase.storage.writer.write_slice`): a block of the check read back (two-byte
    values, and their copy hashed), and 24 bytes per 16 KiB chunk of the larger slice's
    parts (each chunk's extent and CRC-32: 3.3 bytes per thousand entries), nothing of
    the size of its parts. The values, the bits of the entries that are not positions
    and the packed WDL part are memory-mapped files (page cache) and the file is built on
    disk; the few MiB that do not grow with the slice (the value histogram's counts per
    thread, the compression's look-ahead of a few chunks per thread, HDF5's caches) are in
    :data:`tablebase.solve.memory.FIXED_TASK_BYTES`, as for a task in memory."""
    size = max(s.size(variant) for s in pair)
    chunks = -(-size * 9 // (4 * BLOCK_BYTES))  # two-byte values and the WDL part
    return 4 * min(CHECK_BLOCK_ENTRIES, size) + 24 * chunks


def task_memory(variant: Variant, p: bands.Plan) -> int:
    """Estimated peak memory of the out-of-core task of plan ``p``: the larger of its
    largest band (:func:`tablebase.solve.bands.band_memory`) and the writing of its files,
    plus what any task holds."""
    return max(bands.band_memory(variant, p), write_memory(variant, p.pair)) + FIXED_TASK_BYTES


# The most configurations a band may hold whatever the cap, if set (an environment
# variable, so that a build's worker processes see it): tests and measurements cut small
# pairs into many bands with it.
BAND_CONFIGS_ENV = "TABLEBASE_BAND_CONFIGS"


def choose_plan(variant: Variant, pair: tuple[Slice, ...], cap: int) -> bands.Plan | None:
    """The plan with the largest bands whose task fits ``cap`` bytes (and at most
    :data:`BAND_CONFIGS_ENV` configurations, where set), None if even bands of one
    configuration do not (:func:`least_memory` says what they need)."""
    if least_memory(variant, pair) > cap:
        return None
    counts = np.array(tuple(pair[0]), dtype=np.int64)
    ordered = men.config_order(variant.squares, variant.per_row, counts, BINOM)
    size = int(np.diff(ordered[1]).max())  # the largest group
    if os.environ.get(BAND_CONFIGS_ENV):
        size = min(size, max(1, int(os.environ[BAND_CONFIGS_ENV])))
    while True:
        p = bands.plan(variant, pair, size, ordered)
        if task_memory(variant, p) <= cap:
            return p
        if size == 1:
            return None
        size = max(1, size // 2)


def least_memory(variant: Variant, pair: tuple[Slice, ...]) -> int:
    """The least memory the out-of-core task of ``pair`` needs, bounded, not planned (a plan
    of one configuration per band has millions of bands at seven pieces): for bands of ``b``
    configurations (``b`` a power of two), each reading at most two configurations per man
    of each of its own (a man's two forward steps), a window of at most ``b * (1 + 2 *
    men)`` configurations, the scratch of at most ``b`` threads, the plan with one band
    record per ``b`` configurations (:func:`tablebase.solve.bands.plan_bytes`); the
    smallest over ``b``."""
    counts = np.array(tuple(pair[0]), dtype=np.int64)
    kk = men.king_entries(variant.squares, counts, BINOM)
    per = 1 + 2 * int(counts[0] + counts[2])
    n = bands.config_count(variant, pair)
    steps = bands.READS_BYTES_PER_STEP * 2 * pair[0].men
    solve = min(
        max(bands.window_bytes(kk, b * per, 16), steps * b)
        + bands.scratch_bytes(variant, pair, b)
        + bands.plan_bytes(variant, pair, -(-n // b))
        for b in (1 << k for k in range(max(1, n.bit_length())))
    )
    return max(solve, write_memory(variant, pair)) + FIXED_TASK_BYTES


class OwnMirrorError(RuntimeError):
    """The two parts of a slice that is its own mirror disagree (a solver defect)."""


class Scratch:
    """The scratch folder of one pair (see the module docstring)."""

    def __init__(
        self, db: Path, variant: Variant, pair: tuple[Slice, ...], p: bands.Plan, wide: bool
    ) -> None:
        self.folder = scratch_folder(db, pair)
        self.variant, self.pair, self.plan, self.wide = variant, pair, p, wide
        self.entries = len(p.order) * p.kk
        self.head: dict[str, object] = {  # the manifest (JSON)
            "pair": [s.name for s in pair],
            "band_configs": p.band_configs,
            "bands": len(p.bands),
            "wide": wide,
        }

    @property
    def label(self) -> str:
        return "+".join(s.name for s in self.pair)

    # --- the plan and the bands' records ------------------------------------------------

    def open(self) -> frozenset[int]:
        """Make the folder ready (a folder of another plan is emptied); returns the numbers of
        the bands kept from an earlier run (verified, see the module docstring), and removes
        the records and files of the others."""
        try:
            same = json.loads((self.folder / MANIFEST).read_text()) == self.head
        except (OSError, ValueError):
            same = False
        if not same:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder.mkdir(parents=True)
            _write_atomically(self.folder / MANIFEST, json.dumps(self.head).encode())
            return frozenset()
        for tmp in self.folder.glob("*.tmp"):  # left by a killed writer
            tmp.unlink(missing_ok=True)
        if (self.folder / ASSEMBLED).exists():
            return frozenset(b.number for b in self.plan.bands)
        kept: set[int] = set()
        for group in self.plan.groups():
            ok = {b.number for b in group if self.verified(b)}
            kept |= ok
            if len(ok) < len(group):
                break
        for band in self.plan.bands:
            if band.number not in kept:
                self._record_path(band).unlink(missing_ok=True)
                self._band_path(band).unlink(missing_ok=True)
        return frozenset(kept)

    def verified(self, band: bands.Band) -> bool:
        """Whether band ``band``'s record is there and its file hashes to its digest."""
        rec = self.record(band)
        path = self._band_path(band)
        return rec is not None and path.exists() and rec.get("digest") == _file_digest(path)

    def record(self, band: bands.Band) -> dict | None:
        """Band ``band``'s record, None if it is not solved."""
        try:
            return json.loads(self._record_path(band).read_text())
        except (OSError, ValueError):
            return None

    def bands_done(self) -> int:
        """Bands whose record is in the folder now."""
        if (self.folder / ASSEMBLED).exists():
            return len(self.plan.bands)
        return len(band_records(self.folder))

    def _band_path(self, band: bands.Band) -> Path:
        return self.folder / f"band-{band.number}.u16"

    def _record_path(self, band: bands.Band) -> Path:
        return self.folder / f"band-{band.number}.json"

    # --- the files ----------------------------------------------------------------------

    def band_values(self, band: bands.Band) -> np.memmap:
        """Band ``band``'s values (both parts), mapped read-only."""
        n = 2 * self.plan.band_entries(band)
        return np.memmap(self._band_path(band), dtype=bands.RAW_DTYPE, mode="r", shape=(n,))

    def solve(self, band: bands.Band, threads: Callable[[], int]) -> None:
        """Solve ``band`` from the files of the bands it reads, into its own file, then its
        record (both under names of their own, renamed into place)."""
        deps, offsets = self.dependencies()
        tmp = _temporary(self._band_path(band))
        n = 2 * self.plan.band_entries(band)
        out = np.memmap(tmp, dtype=bands.RAW_DTYPE, mode="w+", shape=(n,))
        top, reads = bands.solve_band(
            self.variant, self.pair, self.plan, band, deps, offsets, self.band_values, out,
            threads,
        )  # fmt: skip
        out.flush()
        del out, deps
        _sync(tmp)
        os.replace(tmp, self._band_path(band))
        rec = {"top": top, "reads": reads, "digest": _file_digest(self._band_path(band))}
        _write_atomically(self._record_path(band), json.dumps(rec).encode())

    def _deps_path(self) -> Path:
        return self.folder / "deps.raw"

    def write_dependencies(self, db: Path) -> None:
        """``deps.raw`` (:func:`write_dependencies`), unless it is there already."""
        write_dependencies(self._deps_path(), db, self.variant, self.pair, self.wide)

    def dependencies(self) -> tuple[np.memmap, np.ndarray]:
        """The dependencies' values (two bytes each if ``wide``) mapped read-only, and their
        offsets (:meth:`write_dependencies` first)."""
        return map_dependencies(self._deps_path(), self.variant, self.pair, self.wide)

    def _part(self, name: str) -> Path:
        return self.folder / f"{name}.u16"

    def assemble(self) -> int:
        """``white.u16`` and ``black.u16`` from the band files, a band at a time (unless done
        already), then ``assembled.json`` and the band files removed; returns the random
        accesses of all bands."""
        done = self.folder / ASSEMBLED
        if done.exists():
            return int(json.loads(done.read_text())["reads"])
        for name in bands.PARTS:
            with open(self._part(name), "wb") as f:
                f.truncate(self.entries * 2)
        reads = 0
        for band in self.plan.bands:
            rec = self.record(band)
            assert rec is not None, f"{self.label}: band {band.number} is not solved"
            reads += rec["reads"]
            white, black = (
                np.memmap(self._part(n), dtype=bands.RAW_DTYPE, mode="r+", shape=(self.entries,))
                for n in bands.PARTS
            )
            bands.place_band(self.plan, band, self.band_values(band), white, black)
            white.flush()
            black.flush()
            del white, black
        for name in bands.PARTS:
            _sync(self._part(name))
        _write_atomically(done, json.dumps({"reads": reads}).encode())
        for band in self.plan.bands:
            self._record_path(band).unlink(missing_ok=True)
            self._band_path(band).unlink(missing_ok=True)
        return reads

    def mirror(self, threads: int) -> None:
        """``mirror.u16``: the black-to-move part in the mirror slice's index order, a run
        of configurations at a time."""
        path = self.folder / "mirror.u16"
        with open(path, "wb") as f:
            f.truncate(self.entries * 2)
        step = max(1, END_STEP_BYTES // (2 * self.plan.kk))
        n = len(self.plan.order)
        for c0 in range(0, n, step):
            black = np.memmap(self._part("black"), dtype=bands.RAW_DTYPE, mode="r",
                              shape=(self.entries,))  # fmt: skip
            out = np.memmap(path, dtype=bands.RAW_DTYPE, mode="r+", shape=(self.entries,))
            bands.mirror_values(self.variant, self.pair, black, out, c0, min(n, c0 + step), threads)
            out.flush()
            del out, black

    def check_own_mirror(self) -> None:
        """For a slice that is its own mirror: its black-to-move part, mirrored, must equal
        its white-to-move part (both solved, see :func:`tablebase.solve.men.solvable`);
        :class:`OwnMirrorError` naming the first entry that differs, else nothing."""
        step = END_STEP_BYTES // 2
        for a in range(0, self.entries, step):
            b = min(self.entries, a + step)
            white, mirror = (
                np.memmap(path, dtype=bands.RAW_DTYPE, mode="r", shape=(self.entries,))
                for path in (self._part("white"), self.folder / "mirror.u16")
            )
            diff = np.flatnonzero(white[a:b] != mirror[a:b])
            if len(diff):
                e = a + int(diff[0])
                raise OwnMirrorError(
                    f"{self.label}: entry {e} is {int(white[e])} with white to move but "
                    f"{int(mirror[e])} in the mirrored black-to-move part "
                    f"({len(diff)} entries differ in this block)"
                )
            del white, mirror

    def slice_values(self, s: Slice) -> Path:
        """The raw file of slice ``s``'s values in its index order."""
        return self._part("white") if s == self.pair[0] else self.folder / "mirror.u16"

    def remove(self) -> None:
        remove_scratch(self.folder)


def _deps_layout(
    variant: Variant, pair: tuple[Slice, ...], wide: bool
) -> tuple[np.ndarray, int, type, list[Slice], dict[int, int]]:
    deps = sorted(pair_dependencies(pair[0]))
    sizes = {d.code: d.size(variant) for d in deps}
    offsets, total = flat_offsets(sizes)
    return offsets, max(1, total), np.uint16 if wide else np.uint8, deps, sizes


def write_dependencies(
    path: Path, db: Path, variant: Variant, pair: tuple[Slice, ...], wide: bool
) -> None:
    """The values of every slice ``pair`` needs, read and checked from ``db``, end to end as
    the flat tables (:func:`tablebase.material.slices.flat_offsets`, two bytes each if
    ``wide``) into the file ``path``, one slice mapped at a time (written under a temporary
    name and renamed); nothing if ``path`` is there already."""
    if path.exists():
        return
    offsets, total, dtype, deps, sizes = _deps_layout(variant, pair, wide)
    tmp = _temporary(path)
    with open(tmp, "wb") as f:
        f.truncate(total * np.dtype(dtype).itemsize)
    for d in deps:
        out = np.memmap(tmp, dtype=dtype, mode="r+", shape=(total,))
        pos = int(offsets[d.code])
        read_slice(slice_path(db, d), variant, d, out=out[pos : pos + sizes[d.code]])
        out.flush()
        del out
    _sync(tmp)
    os.replace(tmp, path)


def map_dependencies(
    path: Path, variant: Variant, pair: tuple[Slice, ...], wide: bool
) -> tuple[np.memmap, np.ndarray]:
    """The dependencies' values written by :func:`write_dependencies` mapped read-only, and
    their offsets."""
    offsets, total, dtype, _, _ = _deps_layout(variant, pair, wide)
    return np.memmap(path, dtype=dtype, mode="r", shape=(total,)), offsets


def remove_scratch(folder: Path) -> None:
    """Remove the scratch folder ``folder`` of a pair, and ``<db>/.bands`` if left empty."""
    shutil.rmtree(folder, ignore_errors=True)
    parent = folder.parent
    if parent.exists() and not any(parent.iterdir()):
        parent.rmdir()


def band_records(folder: Path) -> list[Path]:
    """The records of the bands solved in the scratch folder ``folder``."""
    return sorted(folder.glob("band-*.json"))


def _temporary(path: Path) -> Path:
    """A name of its own beside ``path`` for one writer (``*.tmp``)."""
    return path.with_name(f"{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def _sync(path: Path) -> None:
    """``path``'s data on disk (on NFS: on the server) before it is renamed or listed."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = _temporary(path)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _file_digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while chunk := f.read(END_STEP_BYTES):
            h.update(chunk)
    return h.hexdigest()


def slice_stats(scr: Scratch, s: Slice) -> tuple[SliceStats, int]:
    """The counts of slice ``s`` from its raw values, a run of configurations at a time;
    and the largest value (to choose the width its values are written with)."""
    kk = scr.plan.kk
    n = len(scr.plan.order)
    counts = np.array(tuple(s), dtype=np.int64)
    step = max(1, END_STEP_BYTES // (2 * kk))
    positions = wins = losses = top = 0
    first = -1
    for c0 in range(0, n, step):
        vals = np.memmap(scr.slice_values(s), dtype=bands.RAW_DTYPE, mode="r", shape=(scr.entries,))
        p, w, lo, t, f = bands.range_counts(
            vals, scr.variant.squares, scr.variant.per_row, counts, BINOM, kk, c0,
            min(n, c0 + step),
        )  # fmt: skip
        del vals
        positions, wins, losses = positions + int(p), wins + int(w), losses + int(lo)
        if t > top:
            top, first = int(t), int(f)
    return SliceStats(positions, wins, positions - wins - losses, losses, top - 1 if wins else -1,
                      first if wins else -1), top  # fmt: skip


def narrow_values(scr: Scratch, s: Slice, top: int) -> np.ndarray:
    """The values of ``s`` mapped read-only, one byte each where they fit (copied into
    ``<slice>.u8``, a run at a time), else two."""
    src = scr.slice_values(s)
    if value_dtype(top - 1) != np.uint8:
        return np.memmap(src, dtype=bands.RAW_DTYPE, mode="r", shape=(scr.entries,))
    dst = scr.folder / f"{s.name}.u8"
    with open(dst, "wb") as f:
        f.truncate(scr.entries)
    step = END_STEP_BYTES // 2
    for a in range(0, scr.entries, step):
        b = min(scr.entries, a + step)
        vals = np.memmap(src, dtype=bands.RAW_DTYPE, mode="r", shape=(scr.entries,))
        out = np.memmap(dst, dtype=np.uint8, mode="r+", shape=(scr.entries,))
        out[a:b] = vals[a:b]
        out.flush()
        del out, vals
    return np.memmap(dst, dtype=np.uint8, mode="r", shape=(scr.entries,))


def open_scratch(
    db: Path, variant: Variant, pair: tuple[Slice, ...], p: bands.Plan, wide: bool
) -> tuple[Scratch, frozenset[int]]:
    """The first step of the out-of-core task: the scratch folder of ``pair`` made ready,
    the bands kept from an earlier run (logged) and the dependencies decompressed; returns
    the folder and the kept bands' numbers."""
    scr = Scratch(db, variant, pair, p, wide)
    kept = scr.open()
    if kept:
        nb = len(p.bands)
        log.info(
            "%s: %d of %d bands kept from an earlier run", scr.label, len(kept), nb,
            extra={BAND_PROGRESS: (scr.label, len(kept), nb)},
        )  # fmt: skip
    scr.write_dependencies(db)
    return scr, kept


def solve_one(scr: Scratch, band: bands.Band, threads: Callable[[], int]) -> None:
    """Solve ``band`` (the bands it reads are solved), and log it with its progress
    (``extra[BAND_PROGRESS]``: the pair, the bands done, the bands)."""
    scr.solve(band, threads)
    nb, done = len(scr.plan.bands), scr.bands_done()
    log.info(
        "%s: band %d of %d solved (%d bands done)", scr.label, band.number + 1, nb, done,
        extra={BAND_PROGRESS: (scr.label, done, nb)},
    )  # fmt: skip


def finish(
    scr: Scratch,
    db: Path,
    threads: int,
    parent_gone: Callable[[], bool],
    fen_of: Callable[[Slice, int], str],
) -> tuple[tuple[SliceStats, ...], int]:
    """The last step, every band solved: the parts put together, the mirror, the counts,
    the pair's files written (``fen_of(slice, entry)``: the FEN of a slice's entry, for
    its longest win) and the folder removed; returns (stats per slice, random accesses)."""
    reads = scr.assemble()
    scr.mirror(threads)
    if len(scr.pair) == 1:
        scr.check_own_mirror()
    out = []
    for s in scr.pair:
        stats, top = slice_stats(scr, s)
        fen = fen_of(s, stats.longest_win_index) if stats.wins else ""
        values = narrow_values(scr, s, top)
        if parent_gone():
            os._exit(1)  # the build that asked for this table is gone: write nothing
        try:
            write_slice(db, scr.variant, s, values, stats, fen, scratch=scr.folder)
        except OSError as e:
            raise SliceWriteError(s.name, str(slice_path(db, s)), describe(e)) from None
        del values
        out.append(stats)
    scr.remove()
    return tuple(out), reads


def solve_and_write(
    db: Path,
    variant: Variant,
    pair: tuple[Slice, ...],
    p: bands.Plan,
    wide: bool,
    threads: Callable[[], int],
    parent_gone: Callable[[], bool],
    fen_of: Callable[[Slice, int], str],
) -> tuple[tuple[SliceStats, ...], int, int, float]:
    """Solve ``pair`` by the bands of ``p`` in its scratch folder, one after the other
    (resuming the bands an earlier run left), and write its files (:func:`finish`); returns
    (stats per slice, random accesses, bands kept from an earlier run, seconds of the end:
    assembling, mirror, counts, writing)."""
    scr, kept = open_scratch(db, variant, pair, p, wide)
    for band in p.bands:
        if band.number not in kept:
            solve_one(scr, band, threads)
    t0 = time.perf_counter()
    stats, reads = finish(scr, db, threads(), parent_gone, fen_of)
    return stats, reads, len(kept), time.perf_counter() - t0
