"""Verification of a database: every file checked, every stored value re-derived from its
successors, every WDL code checked against the values.

For each slice, the pair and the slices it depends on are loaded (each file's metadata
checked against its digest again, :func:`tablebase.storage.reader.check_file`, and each
part against its checksum); each (or a random sample of) position's byte is recomputed from
the legal moves and the stored bytes of the successors with the rules engine, and must equal
the stored byte; and the slice's WDL part must be the one its values give, entry for entry
(:func:`tablebase.storage.checks.wdl_disagreements`). A WDL-only copy has no values to
re-derive it from: its files are checked (digests, checksums, the WDL part read whole) and,
given the full database it was exported from (``values_db``), each WDL part is compared
with the full database's values, whose digest the copy recorded at export
(``values_sha256``). A file that fails is listed as damaged, with the reason, and the
others are still checked; ``*.h5`` files that are not slice files are listed apart.

Within a memory (``memory``, ``tablebase verify --memory``) that a pair's tables and its
dependencies' do not fit, its slices are checked on their sample without loading them:
the successors' values are read block by block from the files (:mod:`tablebase.build.sampled`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tablebase.build.sampled import check_sample, tables_bytes
from tablebase.build.task import FlatTables, _counts, entry_position
from tablebase.material.index import BINOM
from tablebase.material.slices import Slice, build_key, pair_dependencies
from tablebase.rules.variants import Variant
from tablebase.solve import skeleton
from tablebase.solve.records import Shape, Tables
from tablebase.storage.checks import check_group_index, wdl_disagreements
from tablebase.storage.listing import slice_files
from tablebase.storage.reader import check_file, has_values, read_attrs, read_slice, read_wdl_part
from tablebase.storage.slicefile import TableFileError, checksum, slice_path


@dataclass(frozen=True)
class SliceCheck:
    """One slice's check: positions re-derived (``checked``) and those that disagree, and
    the WDL entries that disagree with the values (-1: the WDL part was not compared)."""

    slice: str
    checked: int
    bad_fens: tuple[str, ...]
    bad_count: int
    wdl_bad: int = 0
    wdl_fens: tuple[str, ...] = ()
    note: str = ""


@dataclass
class VerifyReport:
    """What :func:`verify_database` found: per slice its check, the damaged files (path,
    reason) and the ``*.h5`` files that are not slice files (path, reason)."""

    checks: list[SliceCheck] = field(default_factory=list)
    damaged: list[tuple[Path, str]] = field(default_factory=list)
    others: list[tuple[Path, str]] = field(default_factory=list)
    #: slice files that read but could not be re-derived (a file they need is damaged)
    unverified: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def failures(self) -> int:
        """Inconsistent positions and WDL entries, damaged, unverified files and files that
        are not slices."""
        bad = sum(c.bad_count + max(0, c.wdl_bad) for c in self.checks)
        return bad + len(self.damaged) + len(self.others) + len(self.unverified)

    def summary(self) -> tuple:
        """A comparable digest of the outcome (for tests and the fuzz script)."""
        return (
            tuple((c.slice, c.checked, c.bad_count, c.wdl_bad) for c in self.checks),
            tuple((str(p), r) for p, r in self.damaged),
            tuple(str(p) for p, _ in self.others),
        )


def verify_database(
    db: Path | str,
    variant: Variant,
    sample: int | None = None,
    seed: int = 0,
    threads: int = 1,
    values_db: Path | str | None = None,
    on_check: Callable[[SliceCheck], None] | None = None,
    on_damaged: Callable[[Path, str], None] | None = None,
    only: frozenset[str] | None = None,
    on_unverified: Callable[[Path, str], None] | None = None,
    memory: int | None = None,
) -> VerifyReport:
    """Check every slice file of ``db`` (see the module docstring); ``sample`` limits each
    slice to that many random positions (the WDL part is compared whole). A pair that
    cannot be read is checked slice by slice, so a damaged file fails alone. ``values_db``:
    for a WDL-only copy, the full database to compare its WDL parts with. ``on_check`` and
    ``on_damaged`` (and ``on_unverified``, for a slice whose pair or dependencies cannot
    be read) are called as results come; ``only``: the names of the slices to check
    (default: all). ``memory``: bytes the check may hold; a pair whose tables (with its
    dependencies) need more is checked on its sample with its values read by blocks
    (:mod:`tablebase.build.sampled`), or, without ``sample``, left unverified saying so."""
    db = Path(db)
    listing = slice_files(db)
    report = VerifyReport(others=list(listing.others))
    slices = sorted((s for s, _ in listing.slices), key=build_key)
    if only is not None:
        slices = [s for s in slices if s.name in only]
    present = {s.name for s in slices}

    def damaged(path: Path, reason: str) -> None:
        report.damaged.append((path, reason))
        if on_damaged is not None:
            on_damaged(path, reason)

    def unverified(path: Path, reason: str) -> None:
        report.unverified.append((path, reason))
        if on_unverified is not None:
            on_unverified(path, reason)

    def checked(c: SliceCheck) -> None:
        report.checks.append(c)
        if on_check is not None:
            on_check(c)

    bad_files: set[str] = set()
    full = _holds_values(listing.slices)
    for pair in dict.fromkeys(s.pair for s in slices):  # build order; each pair read once
        mine = [s for s in pair if s.name in present]
        need = _loaded_bytes(db, variant, pair) if full and memory is not None else 0
        by_blocks = memory is not None and need > memory
        for s in mine:  # every file's metadata and parts, checked afresh
            try:
                if by_blocks:  # its parts are read in runs of blocks with its sample
                    check_file(slice_path(db, s), recheck=True)
                else:
                    _check_parts(db, variant, s, full)
                check_group_index(slice_path(db, s))  # as a batch reads blocks directly
            except TableFileError as e:
                damaged(e.path, e.reason)
                bad_files.add(s.name)
        if not full:
            for s in mine:
                if s.name not in bad_files:
                    try:
                        checked(_check_wdl_copy(db, variant, s, values_db))
                    except TableFileError as e:
                        damaged(e.path, e.reason)
            continue
        good = [s for s in mine if s.name not in bad_files]
        if not good:
            continue
        if by_blocks:
            for s in good:
                path = slice_path(db, s)
                if sample is None:
                    assert memory is not None  # by_blocks: only under a memory cap
                    unverified(
                        path,
                        f"its pair and dependencies need {need / 2**30:.1f} GiB to be checked "
                        f"whole, over the memory ({memory / 2**30:.1f} GiB): --sample checks "
                        "it within the memory",
                    )
                    continue
                try:
                    checked(_check_by_blocks(db, variant, s, sample, seed, threads))
                except TableFileError as e:  # its own file, or one its successors are in
                    if e.path == path:
                        damaged(e.path, e.reason)
                    else:
                        unverified(path, str(e))
            continue
        try:
            tables = pair_tables(db, variant, pair)
        except TableFileError as e:  # a file of the pair, or a dependency, is damaged or missing
            for s in good:
                if e.path == slice_path(db, s):
                    damaged(e.path, e.reason)
                    bad_files.add(s.name)
                else:
                    unverified(slice_path(db, s), str(e))
            continue
        for s in good:
            c = _check_loaded(tables, variant, s, sample, seed, threads)
            try:
                checked(_with_wdl_check(c, db, variant, s, tables.view(s)))
            except TableFileError as e:
                damaged(e.path, e.reason)
    return report


def _holds_values(files: list[tuple[Slice, Path]]) -> bool:
    """True for a full database: the first readable slice file has values."""
    for _, f in files:
        try:
            return has_values(read_attrs(f))
        except TableFileError:
            continue
    return True


def _check_parts(db: Path, variant: Variant, s: Slice, full: bool) -> None:
    """Check the file of slice ``s`` again (its metadata against the digest) and read its
    WDL part whole (against its checksums); in a WDL-only copy nothing more reads it, in a
    full database its values are read and checked with its pair (:func:`pair_tables`)."""
    read_wdl_part(slice_path(db, s), variant, s, True, recheck=True)


def _with_wdl_check(
    c: SliceCheck, db: Path, variant: Variant, s: Slice, values: np.ndarray
) -> SliceCheck:
    """``c`` with the comparison of the WDL part of slice ``s`` with its ``values``."""
    path = slice_path(db, s)
    if read_attrs(path)["format_version"] == 1:  # its WDL codes are its values'
        return c
    packed, stored = read_wdl_part(path, variant, s)
    bad = wdl_disagreements(variant, s, values, packed, stored)
    fens = tuple(entry_position(variant, s, int(i)).fen() for i in bad[:20])
    return SliceCheck(c.slice, c.checked, c.bad_fens, c.bad_count, int(bad.shape[0]), fens)


def _check_wdl_copy(
    db: Path, variant: Variant, s: Slice, values_db: Path | str | None
) -> SliceCheck:
    """The check of slice ``s`` of a WDL-only copy: against the values of ``values_db``
    (their digest first compared with the one recorded at export), or none (-1)."""
    path = slice_path(db, s)
    if values_db is None:
        return SliceCheck(s.name, 0, (), 0, -1, (), "WDL part read and checked by its digests")
    values = read_slice(slice_path(values_db, s), variant, s)
    recorded = read_attrs(path).get("values_sha256")
    if recorded is not None and recorded != checksum(values):
        raise TableFileError(path, f"was exported from other values than {values_db}'s")
    packed, stored = read_wdl_part(path, variant, s)
    bad = wdl_disagreements(variant, s, values, packed, stored)
    fens = tuple(entry_position(variant, s, int(i)).fen() for i in bad[:20])
    return SliceCheck(s.name, 0, (), 0, int(bad.shape[0]), fens, f"against {values_db}")


def verify_slice(
    db: Path, variant: Variant, s: Slice, sample: int | None = None, seed: int = 0, threads: int = 1
) -> SliceCheck:
    """Check slice ``s`` of ``db``; ``sample`` limits it to that many random positions."""
    return verify_pair(db, variant, s.pair, sample, seed, threads, only=s)[0]


def verify_pair(
    db: Path,
    variant: Variant,
    pair: tuple[Slice, ...],
    sample: int | None = None,
    seed: int = 0,
    threads: int = 1,
    only: Slice | None = None,
) -> list[SliceCheck]:
    """Check every slice of ``pair`` (or ``only`` that one) with the pair and its
    dependencies read once; ``sample`` limits each slice to that many random positions."""
    tables = pair_tables(db, variant, pair)
    return [
        _check_loaded(tables, variant, s, sample, seed, threads)
        for s in pair
        if only is None or s == only
    ]


def pair_members(pair: tuple[Slice, ...]) -> tuple[Slice, ...]:
    """The slices a check of ``pair`` reads: the pair, then its dependencies in order."""
    return (*pair, *sorted(pair_dependencies(pair[0])))


def pair_tables(db: Path, variant: Variant, pair: tuple[Slice, ...]) -> FlatTables:
    """The pair and its dependencies read from ``db`` into one array, with two-byte values
    if any of them stores two-byte values (distances past 254 plies)."""
    members = pair_members(pair)
    wide = any(read_attrs(slice_path(db, s)).get("value_bits", 8) == 16 for s in members)
    tables = FlatTables(variant, members, np.uint16 if wide else np.uint8)
    for s in members:
        tables.load(db, s)
    return tables


def sample_indices(size: int, sample: int, seed: int) -> np.ndarray:
    """``sample`` distinct entries of ``size``, sorted, drawn at random with memory in
    proportion to the sample (numpy's ``choice`` without replacement shuffles all of a
    large slice's indices when the sample is over a fiftieth of it: 1.9 GB for 0402):
    enough draws with replacement that their distinct values outnumber the sample, then
    the sample chosen among those."""
    rng = np.random.default_rng(seed)
    if 2 * sample > size:
        return np.sort(rng.choice(size, sample, replace=False).astype(np.int64))
    # m draws give size * (1 - exp(-m / size)) distinct values on average
    draws = int(-size * np.log1p(-sample / size) * 1.02) + 64
    out = _distinct(rng.integers(0, size, draws, dtype=np.int64))
    while out.shape[0] < sample:  # rare: fewer distinct values than the average
        more = rng.integers(0, size, draws // 16 + 64, dtype=np.int64)
        out = _distinct(np.concatenate((out, more)))
    keep = rng.choice(out.shape[0], sample, replace=False)
    return np.sort(out[keep])


def _distinct(a: np.ndarray) -> np.ndarray:
    """The distinct values of ``a``, sorted (``np.unique`` took 80 times a sort's time on
    ten million int64 here)."""
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def _sample_of(size: int, sample: int | None, seed: int) -> np.ndarray:
    """The entries checked of a slice of ``size``: all, or ``sample`` of them at random."""
    if sample is None or sample >= size:
        return np.arange(size, dtype=np.int64)
    return sample_indices(size, sample, seed)


def _loaded_bytes(db: Path, variant: Variant, pair: tuple[Slice, ...]) -> int:
    """Bytes the loaded check of ``pair`` holds: its tables and its dependencies' (one
    array, two bytes a value if one of them needs two), and the WDL part of its largest
    slice read whole with the part its values give."""
    members = pair_members(pair)
    wide = False
    for s in members:
        try:
            wide = wide or read_attrs(slice_path(db, s)).get("value_bits", 8) == 16
        except TableFileError:  # missing or damaged: reported where the check reads it
            continue
    largest = max(s.size(variant) for s in pair)
    return tables_bytes(variant, members, 2 if wide else 1) + largest // 2


def _check_by_blocks(
    db: Path, variant: Variant, s: Slice, sample: int, seed: int, threads: int
) -> SliceCheck:
    """Check slice ``s`` on its sample with the values read by blocks
    (:func:`tablebase.build.sampled.check_sample`)."""
    members = pair_members(s.pair)
    indices = _sample_of(s.size(variant), sample, seed)
    bad_idx, wdl_bad, wdl_fens = check_sample(db, variant, s, members, indices, threads)
    fens = [entry_position(variant, s, int(idx)).fen() for idx in bad_idx[:20]]
    return SliceCheck(
        s.name,
        int(indices.shape[0]),
        tuple(fens),
        int(bad_idx.shape[0]),
        wdl_bad,
        wdl_fens,
        "values read by blocks; wdl part compared at the sample",
    )


def _check_loaded(
    tables: FlatTables, variant: Variant, s: Slice, sample: int | None, seed: int, threads: int
) -> SliceCheck:
    """Check slice ``s`` in ``tables`` (its pair and dependencies loaded)."""
    off, size = tables.where[s]
    indices = _sample_of(size, sample, seed)
    bad = skeleton.verify_range(
        Tables(tables.vals, tables.offsets),
        variant.rules,
        Shape(_counts(s), BINOM),
        off,
        indices,
        max(1, threads) * 4,
    )
    bad_idx = indices[bad]
    fens = [entry_position(variant, s, int(idx)).fen() for idx in bad_idx[:20]]
    return SliceCheck(s.name, int(indices.shape[0]), tuple(fens), int(bad_idx.shape[0]))
