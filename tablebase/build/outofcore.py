"""The out-of-core pair task: a pair with men solved by bands (:mod:`tablebase.solve.bands`)
with its state on disk, under a memory cap, resumable band by band.

Everything lives in the pair's scratch folder, ``<db>/.bands/<pair>/`` (:func:`scratch_folder`),
removed once the pair's files are written:

* ``deps.raw``: the dependencies' values, decompressed once, end to end as the flat tables
  (:func:`tablebase.material.slices.flat_offsets`), memory-mapped read-only by the solve;
* ``white.u16``, ``black.u16``: the raw values of each part (:data:`tablebase.solve.bands.PARTS`),
  written band by band; ``mirror.u16``: the black-to-move part in the mirror slice's order,
  made at the end;
* ``manifest.json``: the plan (band size, bands) and, per band solved, its largest value,
  its random accesses and the BLAKE2 digest of its values in both parts; rewritten
  atomically after each band, once the band's values are flushed to disk.

**Resume.** A rerun with the same plan keeps every band listed whose values still hash to
its digest (a band that does not is solved again, and so are those after it); a build
killed at any point loses at most the band in progress.

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
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tablebase.build.faults import SliceWriteError, describe
from tablebase.material.index import BINOM
from tablebase.material.slices import Slice, flat_offsets, pair_dependencies
from tablebase.rules.variants import Variant
from tablebase.solve import bands
from tablebase.solve.whole import FIXED_TASK_BYTES
from tablebase.storage.files import SliceStats, read_slice, slice_path
from tablebase.storage.values import value_dtype

log = logging.getLogger("tablebase.build.outofcore")

MANIFEST = "manifest.json"
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
    (:func:`tablebase.storage.files.write_slice`): a block of the check read back (two-byte
    values, and their copy hashed), nothing of the size of a slice. The values, the bits
    of the entries that are not positions and the packed WDL part are memory-mapped files
    (page cache) and the file is built on disk; the few MiB that do not grow with the
    slice (the value histogram's counts per thread, the compression's look-ahead of a few
    16 KiB chunks per thread, HDF5's chunk cache) are in
    :data:`tablebase.solve.whole.FIXED_TASK_BYTES`, as for a task in memory."""
    from tablebase.storage.files import CHECK_BLOCK_ENTRIES

    return 4 * min(CHECK_BLOCK_ENTRIES, max(s.size(variant) for s in pair))


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
    size = _largest_group(variant, pair)
    if os.environ.get(BAND_CONFIGS_ENV):
        size = min(size, max(1, int(os.environ[BAND_CONFIGS_ENV])))
    while True:
        p = bands.plan(variant, pair, size)
        if task_memory(variant, p) <= cap:
            return p
        if size == 1:
            return None
        size = max(1, size // 2)


def least_memory(variant: Variant, pair: tuple[Slice, ...]) -> int:
    """The least memory the out-of-core task of ``pair`` needs: bands of one configuration,
    each reading at most two configurations per man (a man's two forward steps), so a
    window of ``1 + 2 * men`` configurations at most (bounded, not planned: a plan of one
    configuration per band has millions of bands at seven pieces)."""
    counts = np.array(tuple(pair[0]), dtype=np.int64)
    from tablebase.solve import men

    kk = men.king_entries(variant.squares, counts, BINOM)
    window = 1 + 2 * int(counts[0] + counts[2])
    solve = bands.window_bytes(kk, window, 16) + bands.scratch_bytes(variant, pair)
    return max(solve, write_memory(variant, pair)) + FIXED_TASK_BYTES


def _largest_group(variant: Variant, pair: tuple[Slice, ...]) -> int:
    from tablebase.solve import men

    _, groups = men.config_order(
        variant.squares, variant.per_row, np.array(tuple(pair[0]), dtype=np.int64), BINOM
    )
    return int(np.diff(groups).max())


class Scratch:
    """The scratch folder of one pair (see the module docstring)."""

    def __init__(self, db: Path, variant: Variant, pair: tuple[Slice, ...], p: bands.Plan):
        self.folder = scratch_folder(db, pair)
        self.variant, self.pair, self.plan = variant, pair, p
        self.entries = len(p.order) * p.kk
        self.manifest_path = self.folder / MANIFEST
        self.manifest = {
            "pair": [s.name for s in pair],
            "band_configs": max(b.stop - b.start for b in p.bands),
            "bands": len(p.bands),
            "deps": False,
            "done": {},
        }

    # --- the manifest -------------------------------------------------------------------

    def open(self) -> int:
        """Make the folder ready; returns the bands kept from an earlier run (verified)."""
        old = None
        if self.manifest_path.exists():
            try:
                old = json.loads(self.manifest_path.read_text())
            except (OSError, ValueError):
                old = None
        same = old is not None and all(
            old.get(k) == self.manifest[k] for k in ("pair", "band_configs", "bands")
        )
        if not same:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder.mkdir(parents=True)
            for name in bands.PARTS:
                with open(self._part(name), "wb") as f:
                    f.truncate(self.entries * 2)
            self._save()
            return 0
        self.manifest["deps"] = bool(old.get("deps")) and self._deps_path().exists()
        kept = 0
        raws = self.raws()
        for band in self.plan.bands:  # the bands in order while they verify
            rec = old["done"].get(str(band.number))
            if rec is None or rec.get("digest") != self._digest(band, raws):
                break
            self.manifest["done"][str(band.number)] = rec
            kept += 1
        del raws
        self._save()
        return kept

    def _save(self) -> None:
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.manifest))
        os.replace(tmp, self.manifest_path)

    def done(self, band: bands.Band) -> bool:
        return str(band.number) in self.manifest["done"]

    def record(self, band: bands.Band, top: int, reads: int, raws) -> None:
        """Band ``band`` solved: its values flushed, then listed with their digest."""
        for r in raws:
            r.flush()
        self.manifest["done"][str(band.number)] = {
            "top": top,
            "reads": reads,
            "digest": self._digest(band, raws),
        }
        self._save()

    def _digest(self, band: bands.Band, raws) -> str:
        h = hashlib.blake2b(digest_size=16)
        kk = self.plan.kk
        for r in self.plan.order[band.start : band.stop]:
            for raw in raws:
                h.update(raw[r * kk : (r + 1) * kk].tobytes())
        return h.hexdigest()

    def top(self) -> int:
        return max((d["top"] for d in self.manifest["done"].values()), default=0)

    def reads(self) -> int:
        return sum(d["reads"] for d in self.manifest["done"].values())

    # --- the files ----------------------------------------------------------------------

    def _part(self, name: str) -> Path:
        return self.folder / f"{name}.u16"

    def _deps_path(self) -> Path:
        return self.folder / "deps.raw"

    def raws(self) -> tuple[np.memmap, np.memmap]:
        """Each part's raw values, mapped afresh (let go of with the arrays)."""
        return tuple(
            np.memmap(self._part(n), dtype=bands.RAW_DTYPE, mode="r+", shape=(self.entries,))
            for n in bands.PARTS
        )  # type: ignore[return-value]

    def dependencies(self, db: Path, wide: bool) -> tuple[np.memmap, np.ndarray]:
        """The dependencies' values (``wide``: two bytes each) mapped read-only, and their
        offsets; decompressed into ``deps.raw`` the first time, one slice mapped at a
        time."""
        deps = sorted(pair_dependencies(self.pair[0]))
        sizes = {d.code: d.size(self.variant) for d in deps}
        offsets, total = flat_offsets(sizes)
        dtype = np.uint16 if wide else np.uint8
        path = self._deps_path()
        if not self.manifest["deps"]:
            with open(path, "wb") as f:
                f.truncate(max(1, total) * np.dtype(dtype).itemsize)
            for d in deps:
                out = np.memmap(path, dtype=dtype, mode="r+", shape=(max(1, total),))
                pos = int(offsets[d.code])
                read_slice(slice_path(db, d), self.variant, d, out=out[pos : pos + sizes[d.code]])
                out.flush()
                del out
            self.manifest["deps"] = True
            self._save()
        return np.memmap(path, dtype=dtype, mode="r", shape=(max(1, total),)), offsets

    def mirror(self, threads: int) -> None:
        """``mirror.u16``: the black-to-move part in the mirror slice's index order, a run
        of configurations at a time."""
        path = self.folder / "mirror.u16"
        with open(path, "wb") as f:
            f.truncate(self.entries * 2)
        step = max(1, END_STEP_BYTES // (2 * self.plan.kk))
        n = len(self.plan.order)
        for c0 in range(0, n, step):
            black = self.raws()[1]
            out = np.memmap(path, dtype=bands.RAW_DTYPE, mode="r+", shape=(self.entries,))
            bands.mirror_values(self.variant, self.pair, black, out, c0, min(n, c0 + step), threads)
            out.flush()
            del out, black

    def slice_values(self, s: Slice) -> Path:
        """The raw file of slice ``s``'s values in its index order."""
        return self._part("white") if s == self.pair[0] else self.folder / "mirror.u16"

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        parent = self.folder.parent
        if parent.exists() and not any(parent.iterdir()):
            parent.rmdir()


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
    """Solve ``pair`` by the bands of ``p`` in its scratch folder (resuming the bands an
    earlier run left) and write its files (``fen_of(slice, entry)``: the FEN of a slice's
    entry, for its longest win); returns (stats per slice, random accesses, bands kept from
    an earlier run, seconds of the end: mirror, counts, writing)."""
    import time

    from tablebase.storage.files import write_slice

    scr = Scratch(db, variant, pair, p)
    kept = scr.open()
    names = "+".join(s.name for s in pair)
    nb = len(p.bands)
    if kept:
        log.info(
            "%s: %d of %d bands kept from an earlier run", names, kept, nb,
            extra={BAND_PROGRESS: (names, kept, nb)},
        )  # fmt: skip
    vals, offsets = scr.dependencies(db, wide)
    del vals
    solved = [kept]

    def raws():
        return scr.raws()

    def finished(band: bands.Band, top: int, reads: int) -> None:
        scr.record(band, top, reads, scr.raws())
        solved[0] += 1
        log.info(
            "%s: band %d of %d solved (%d bands done)", names, band.number + 1, nb, solved[0],
            extra={BAND_PROGRESS: (names, solved[0], nb)},
        )  # fmt: skip

    for band in p.bands:  # each band with its own mappings, let go of after it
        if scr.done(band):
            continue
        deps, _ = scr.dependencies(db, wide)
        bands.solve_bands(
            variant, pair, bands.Plan(p.pair, p.order, p.kk, (band,)), deps, offsets, raws,
            threads, scr.done, finished,
        )  # fmt: skip
        del deps
    t0 = time.perf_counter()
    scr.mirror(threads())
    out = []
    for s in pair:
        stats, top = slice_stats(scr, s)
        fen = fen_of(s, stats.longest_win_index) if stats.wins else ""
        values = narrow_values(scr, s, top)
        if parent_gone():
            os._exit(1)  # the build that asked for this table is gone: write nothing
        try:
            write_slice(db, variant, s, values, stats, fen, scratch=scr.folder)
        except OSError as e:
            raise SliceWriteError(s.name, str(slice_path(db, s)), describe(e)) from None
        del values
        out.append(stats)
    reads = scr.reads()
    scr.remove()
    return tuple(out), reads, kept, time.perf_counter() - t0
