"""Verification of a database: every stored value re-derived from its successors.

For each slice, the pair and the slices it depends on are loaded; each (or a random sample
of) position's byte is recomputed from the legal moves and the stored bytes of the
successors with the rules engine, and must equal the stored byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tablebase.build.task import FlatTables, _counts, entry_position
from tablebase.material.index import BINOM, REVERSE16
from tablebase.material.slices import Slice, build_key, pair_dependencies, parse_material
from tablebase.rules.variants import Variant
from tablebase.solve import runs as solve_runs
from tablebase.solve import whole as solve
from tablebase.storage.files import read_attrs, slice_path


def database_files(db: Path, variant: Variant) -> tuple[list[Slice], list[tuple[Path, str]]]:
    """The slices of the ``*.h5`` files in ``db`` (build order), and the other ``*.h5``
    files with the reason each is not a slice of a ``variant`` database (e.g. ``9999.h5``)."""
    slices, stray = [], []
    for f in sorted(Path(db).glob("*.h5")):
        try:
            slices.append(parse_material(f.stem))
        except ValueError as e:
            stray.append((f, str(e)))
    return sorted(slices, key=build_key), stray


@dataclass(frozen=True)
class SliceCheck:
    slice: str
    checked: int
    bad_fens: tuple[str, ...]
    bad_count: int


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


def pair_tables(db: Path, variant: Variant, pair: tuple[Slice, ...]) -> FlatTables:
    """The pair and its dependencies read from ``db`` into one array, with two-byte values
    if any of them stores two-byte values (distances past 254 plies)."""
    members = (*pair, *sorted(pair_dependencies(pair[0])))
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


def _check_loaded(tables, variant: Variant, s: Slice, sample, seed, threads) -> SliceCheck:
    """Check slice ``s`` in ``tables`` (its pair and dependencies loaded)."""
    off, size = tables.where[s]
    if sample is None or sample >= size:
        indices = np.arange(size, dtype=np.int64)
    else:
        indices = sample_indices(size, sample, seed)
    if variant.king_move_limit > 0:  # entries with king runs (Frisian)
        bad = solve_runs.verify_range(
            tables.vals,
            tables.offsets,
            variant.neighbours,
            variant.rules,
            BINOM,
            off,
            _counts(s),
            indices,
            max(1, threads) * 4,
        )
    else:
        bad = solve.verify_range(
            tables.vals,
            tables.offsets,
            variant.neighbours,
            variant.rules,
            BINOM,
            REVERSE16,
            off,
            _counts(s),
            indices,
            max(1, threads) * 4,
        )
    bad_idx = indices[bad]
    fens = [entry_position(variant, s, int(idx)).fen() for idx in bad_idx[:20]]
    return SliceCheck(s.name, int(indices.shape[0]), tuple(fens), int(bad_idx.shape[0]))
