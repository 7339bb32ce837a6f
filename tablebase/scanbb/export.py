"""Our database's win/draw/loss mapped onto Scan's index: export to Scan files, comparison.

**What Scan reads.** Scan looks a position up in its bitbases only when the side to move
cannot capture (it plays captures out itself, :class:`tablebase.scanbb.files.ScanBitbases`),
so an entry is *covered* when it is a position (no two men on one square) whose side to move
has no capture; every other entry is don't-care and takes the value of the run around it
(:mod:`tablebase.scanbb.codec`). A covered entry's value is our WDL code of the same
position: Scan's index and ours hold the same positions with the same run states
(:mod:`tablebase.scanbb.index`), and our WDL part gives every position without a capture its
own code in both of its forms (captures stored or left to the prober).

**How.** Scan's entries are walked in Scan's order, a chunk of boards at a time, in compiled
parallel code (:func:`scan_codes`): each thread takes a range of boards, decodes the men and
white kings once per run of boards that share them (:func:`tablebase.scanbb.index.
scan_prefix`), places the black kings, tests for a capture, and reads our code of each run
state at our entry (the black kings' rank is the same in both indexes, so our entry is a
base plus the same rank). The chunk's codes are then run-length coded (sequential, streaming)
and appended to the file. One slice's packed WDL part and one chunk of codes are in memory
at a time.

The comparison (:func:`compare_scan`) walks a Scan file the same way, decoding its runs
chunk by chunk, and counts the covered entries whose value differs from ours.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

from tablebase.material.index import BINOM, black_kings_at, mirror_run_code, run_states
from tablebase.material.slices import Slice
from tablebase.rules.captures import has_capture
from tablebase.rules.variants import Variant
from tablebase.scanbb.codec import (
    BYTE_LENGTHS,
    DONT_CARE,
    LENGTHS,
    bytes_bound,
    decode_runs,
    encode_runs,
    finish_runs,
    new_state,
)
from tablebase.scanbb.files import ScanFileError, bb_folder, id_path, read_bitbase, write_bitbase
from tablebase.scanbb.index import (
    MAX_SCAN_PIECES,
    ScanFormatError,
    ScanId,
    our_prefix,
    position_of_entry,
    scan_prefix,
    variant_suffix,
)
from tablebase.storage.listing import database_variant, slice_files
from tablebase.storage.reader import read_wdl

CHUNK_ENTRIES = 1 << 24  # Scan entries mapped and coded per step


# --- compiled ---------------------------------------------------------------------------------


@njit(cache=True)
def _codes_range(packed, b0, lo, hi, out, rules, binom, counts):
    """:func:`scan_codes` of Scan's boards ``lo..hi`` (of a chunk starting at ``b0``)."""
    nsq = rules.nsq
    width = rules.width
    limit = rules.king_limit
    nwm, nwk, nbm, nbk = counts[0], counts[1], counts[2], counts[3]
    cw = run_states(limit, nwm, nwk)
    cb = run_states(limit, nbm, nbk)
    per = cw * cb
    free = nsq - nwm - nbm
    d_bk = binom[free - nwk, nbk]
    last_q = -1
    wm = wk = bm = taken = np.uint64(0)
    valid = False
    base = 0
    for b in range(lo, hi):
        q = b // d_bk
        r = b - q * d_bk
        if q != last_q:
            wm, wk, bm, valid = scan_prefix(q, nsq, width, nwm, nwk, nbm, binom)
            if valid:
                base = our_prefix(nsq, width, (wm, wk, bm), (nwm, nwk, nbm, nbk), binom) * d_bk
                taken = wm | bm | wk
            last_q = q
        o = (b - b0) * per
        if valid:
            bk = black_kings_at(r, nbk, free - nwk, binom, taken)
            valid_here = not has_capture(rules, True, wm, wk, bm, bk)
        else:
            valid_here = False
        if not valid_here:
            for j in range(per):
                out[o + j] = DONT_CARE
            continue
        e0 = (base + r) * per
        for wc in range(cw):
            ours = e0 + mirror_run_code(limit, nwk, wc) * cb
            for bc in range(cb):
                e = ours + bc
                c = np.int64((packed[e >> 2] >> ((e & 3) * 2)) & 3)
                out[o + wc * cb + bc] = (3 - c) % 3  # ours: draw 0 win 1 loss 2; Scan's: 0 2 1


@njit(cache=True, parallel=True)
def scan_codes(packed, b0, b1, out, rules, binom, counts, nparts):
    """Scan's code of every entry of Scan's boards ``b0..b1`` of a slice into ``out`` (the
    boards' run states side by side): the value for the side to move (0 draw, 1 loss, 2
    win) from our packed WDL part ``packed``, or :data:`DONT_CARE`. ``counts``: the slice's
    ``(wm, wk, bm, bk)``; ``nparts`` ranges of boards in parallel."""
    n = b1 - b0
    step = (n + nparts - 1) // nparts
    for k in prange(nparts):
        lo = b0 + k * step
        hi = min(b1, lo + step)
        if lo < hi:
            _codes_range(packed, b0, lo, hi, out, rules, binom, counts)


@njit(cache=True)
def count_disagreements(expected, found, n):
    """``(covered, differing, first)`` over ``n`` entries: entries of ``expected`` that are
    not :data:`DONT_CARE`, those whose ``found`` value differs, the first of them (-1)."""
    covered = 0
    differing = 0
    first = -1
    for i in range(n):
        c = expected[i]
        if c == DONT_CARE:
            continue
        covered += 1
        if found[i] != c:
            if first < 0:
                first = i
            differing += 1
    return covered, differing, first


# --- per slice ----------------------------------------------------------------------------------


def _threads() -> int:
    return max(1, numba.get_num_threads())


def slice_codes(variant: Variant, s: Slice, packed: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """Scan's codes of slice ``s`` chunk by chunk, ``(first entry, codes)``; the array is
    reused: consume it before asking for the next."""
    cw, cb = s.run_states(variant)
    per = cw * cb
    boards = s.boards(variant)
    step = max(1, CHUNK_ENTRIES // per)
    out = np.empty(min(step, boards) * per, dtype=np.uint8)
    counts = np.array(tuple(s), dtype=np.int64)
    nparts = 4 * _threads()
    for b0 in range(0, boards, step):
        b1 = min(boards, b0 + step)
        view = out[: (b1 - b0) * per]
        scan_codes(packed, b0, b1, view, variant.rules, BINOM, counts, nparts)
        yield b0 * per, view


def coded_chunks(chunks: Iterator[tuple[int, np.ndarray]]) -> Iterator[np.ndarray]:
    """The bytes of a file of the codes of ``chunks``, chunk by chunk."""
    state = new_state()
    for _, codes in chunks:
        buf = np.empty(bytes_bound(codes.shape[0], int(state[1])), dtype=np.uint8)
        k = encode_runs(codes, state, LENGTHS, buf)
        yield buf[:k]
    buf = np.empty(bytes_bound(0, int(state[1])), dtype=np.uint8)
    yield buf[: finish_runs(state, LENGTHS, buf)]


# --- databases ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScanExportReport:
    """What an export wrote: files, their entries and bytes, the seconds it took, the
    largest ``bb-size`` for which every file Scan loads is there (0: none), and how many of
    the files an earlier, interrupted export had written and this one kept (``resume``)."""

    files: int
    entries: int
    bytes: int
    seconds: float
    bb_size: int
    kept: int = 0


def complete_bb_size(slices: set[Slice]) -> int:
    """The largest ``n`` such that ``slices`` has every slice of 2..n pieces (0: none)."""
    from tablebase.material.slices import all_slices

    n = 1
    while n < MAX_SCAN_PIECES and all(s in slices for s in all_slices(n + 1, n + 1)):
        n += 1
    return n if n >= 2 else 0


def export_scan(
    src: Path | str,
    dst: Path | str,
    on_file: Callable[[ScanId, int], None] | None = None,
    resume: bool = False,
    on_kept: Callable[[ScanId, int], None] | None = None,
) -> ScanExportReport:
    """Write every slice of the database ``src`` as a Scan bitbase file under ``dst`` (the
    folder to use as Scan's ``data``: files go to ``dst/bb<suffix>/<n>/<name>``).
    ``on_file(id, bytes)`` after each file. Raises ValueError (no database, a variant Scan
    has no bitbases of, ``dst`` already holding bitbases of the variant) and
    :class:`tablebase.storage.slicefile.TableFileError` for a damaged source file.

    ``resume``: ``dst`` may hold the files of an earlier export of the same database that
    was interrupted. A file is written under a temporary name and renamed once it decodes
    to its length, so each file there is whole: one that decodes to the length Scan expects
    is kept (``on_kept(id, bytes)``), any other is written again. Nothing checks that the
    kept files came from this database: ``tablebase compare-scan`` does."""
    t0 = time.perf_counter()
    src, dst = Path(src), Path(dst)
    if not src.is_dir():
        raise ValueError(f"database directory {src} does not exist")
    files = slice_files(src).slices
    if not files:
        raise ValueError(f"no slice files in {src}")
    variant = database_variant(src)
    variant_suffix(variant)  # ScanFormatError (a ValueError) for a variant Scan lacks
    folder = dst / bb_folder(variant)
    if not resume and folder.exists() and any(folder.iterdir()):
        raise ValueError(
            f"{folder} already exists: export into a folder without it, or resume an "
            "interrupted export of this database into it (--resume)"
        )
    files = sorted(files, key=lambda f: (f[0].pieces, ScanId.of_slice(f[0]).name))
    total_bytes = entries = kept = 0
    for s, path in files:
        if s.pieces > MAX_SCAN_PIECES:
            raise ScanFormatError(f"slice {s.name}: Scan's index holds at most 7 pieces")
        sid = ScanId.of_slice(s)
        size = s.size(variant)
        target = id_path(dst, variant, sid)
        if resume and target.exists():
            try:
                n = read_bitbase(target, size).shape[0]
            except ScanFileError:
                pass  # not whole or not of this index: written again
            else:
                total_bytes += n
                entries += size
                kept += 1
                if on_kept is not None:
                    on_kept(sid, n)
                continue
        packed = read_wdl(path, variant, s)
        n = write_bitbase(target, coded_chunks(slice_codes(variant, s, packed)), size)
        del packed
        total_bytes += n
        entries += size
        if on_file is not None:
            on_file(sid, n)
    bb_size = complete_bb_size({s for s, _ in files})
    seconds = time.perf_counter() - t0
    return ScanExportReport(len(files), entries, total_bytes, seconds, bb_size, kept)


@dataclass
class FileComparison:
    """One Scan file against its slice: covered entries compared, how many differ, the first
    that differs (its Scan entry and FEN) or why the file could not be compared."""

    sid: ScanId
    covered: int = 0
    differing: int = 0
    first_entry: int = -1
    first_fen: str = ""
    error: str = ""


@dataclass
class ScanComparison:
    """A Scan folder against a database: one :class:`FileComparison` per slice of the
    database (a missing or damaged file as an error)."""

    variant: Variant
    files: list[FileComparison] = field(default_factory=list)

    @property
    def covered(self) -> int:
        return sum(f.covered for f in self.files)

    @property
    def differing(self) -> int:
        return sum(f.differing for f in self.files)

    @property
    def errors(self) -> list[FileComparison]:
        return [f for f in self.files if f.error]


def compare_file(
    variant: Variant, s: Slice, packed: np.ndarray, data: np.ndarray
) -> FileComparison:
    """Compare the bytes ``data`` of a Scan file (of the right decoded length) with our
    packed WDL part of slice ``s`` on every covered entry."""
    sid = ScanId.of_slice(s)
    result = FileComparison(sid)
    cursor = np.zeros(2, dtype=np.int64)
    found = np.empty(0, dtype=np.uint8)
    for start, codes in slice_codes(variant, s, packed):
        n = codes.shape[0]
        if found.shape[0] < n:
            found = np.empty(n, dtype=np.uint8)
        got = decode_runs(data, cursor, BYTE_LENGTHS, found[:n])
        if got != n:
            raise ScanFileError(sid.name, "ends early")  # read_bitbase checked the length
        covered, differing, first = count_disagreements(codes, found, n)
        result.covered += int(covered)
        result.differing += int(differing)
        if first >= 0 and result.first_entry < 0:
            result.first_entry = start + int(first)
            pos = position_of_entry(variant, sid, result.first_entry)
            result.first_fen = pos.fen() if pos is not None else ""
    return result


def compare_scan(
    db: Path | str,
    scan_root: Path,
    on_file: Callable[[FileComparison], None] | None = None,
    pieces: int | None = None,
) -> ScanComparison:
    """Compare the Scan bitbases under ``scan_root`` (the folder holding ``bb<suffix>``)
    with every slice of the database ``db`` (of up to ``pieces`` pieces if given)."""
    db = Path(db)
    if not db.is_dir():
        raise ValueError(f"database directory {db} does not exist")
    files = slice_files(db).slices
    if not files:
        raise ValueError(f"no slice files in {db}")
    variant = database_variant(db)
    variant_suffix(variant)
    report = ScanComparison(variant)
    for s, path in sorted(files, key=lambda f: (f[0].pieces, ScanId.of_slice(f[0]).name)):
        if pieces is not None and s.pieces > pieces:
            continue
        sid = ScanId.of_slice(s)
        try:
            data = read_bitbase(id_path(scan_root, variant, sid), s.size(variant))
        except ScanFileError as e:
            result = FileComparison(sid, error=str(e))
        else:
            result = compare_file(variant, s, read_wdl(path, variant, s), data)
        report.files.append(result)
        if on_file is not None:
            on_file(result)
    return report
