"""Out-of-core solving of a pair with men: bands of men configurations, solved values on disk.

:mod:`tablebase.solve.men` solves a pair one men configuration at a time, the groups of
equal advancement from the most advanced down; a configuration reads only its own entries
and those of configurations of the group before (one man's step more advanced), besides
the smaller slices its captures and promotions reach. So the pair need not be in memory:

* a **band** is a run of at most ``band_configs`` consecutive configurations of one group
  (in :func:`tablebase.solve.men.config_order`'s order, which ranks them within a group);
  the bands of a pair are its groups cut so, solved in order;
* **in memory** while a band is solved: a *window* of state words, both parts of the band's
  own configurations and of the configurations of the group before that its men's steps
  reach (:func:`reached_configs`), each configuration at a slot of the window
  (:func:`tablebase.solve.men._solve_config` reads configuration ``r`` at ``slots[r]``),
  plus the threads' configuration scratch (as in memory) and the dependencies' pages
  that the band touches;
* **solved values** (:data:`RAW_DTYPE`), band by band: a band's values are its own
  configurations' entries in band order, the white-to-move part then the black-to-move part
  (the latter in the first slice's board order, as the solver lays it out); a band's window
  is loaded from the values of the bands of the group before that hold what it reads
  (:meth:`Plan.sources`), so the values of two bands of one group never share storage
  and the bands of a group can be solved at once, on different machines
  (:mod:`tablebase.build.outofcore` keeps one file per band). At the end the bands are put
  in configuration-rank order (:func:`place_band`) and the mirror's part into its own index
  order (:func:`mirror_values`), configurations at a time.

A word read back from a value ``v`` is ``DEC | v`` (``v > 0``) or ``0`` (a draw): exactly
what :func:`tablebase.solve.men._men_steps` reads from the in-memory state (which holds
``DEC`` for entries that are not positions and ``0`` for undecided draws, both read as a
draw). Every configuration is solved by the same kernel from the same inputs, so the
values equal those of the in-memory solve (``tests/tablebase/test_bands.py``).

**Memory bound** (:func:`band_memory`): the largest window of the plan, ``2 * (own +
reached) * K`` words of 2 bytes (4 where a band's undecided words overflow and it is
solved again with four-byte words), the scratch of the threads a band can use (one per
configuration of the band, at most numba's threads), and the plan itself, 16 bytes per
configuration of the pair (:func:`plan_bytes`: the plan keeps how many configurations a
band reads, and finds them again when the band is solved); the dependencies are
memory-mapped raw values (:mod:`tablebase.build.outofcore`), whose pages are dropped after
each band.

**Which pairs**: any pair with men, and a slice that is its own mirror
(:func:`tablebase.solve.men.solvable`): the in-memory solve's limits on the king placements
per configuration are about its speed, not what bands can do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit, prange

from tablebase.material.index import BINOM, men_rank, unrank_colex
from tablebase.material.slices import Slice
from tablebase.rules.variants import Variant
from tablebase.solve import men
from tablebase.solve.records import PairWords, Shape, Tables
from tablebase.solve.stats import count_value
from tablebase.solve.whole import OVERFLOW, state_dtype

PARTS = ("white", "black")  # the raw value files of a pair's parts, by side to move
RAW_DTYPE = np.uint16  # a solved value on disk (a decided state word holds up to 15 bits)


@njit(cache=True)
def reached_configs(nsq, width, nbr, counts, binom, configs):
    """The men configurations (sorted ranks) that one quiet step of a man (not a promotion)
    leads to from the configurations ``configs`` of the slice of ``counts``: what a band of
    them reads of the pair (:func:`tablebase.solve.men._men_steps`). Configurations that are
    not positions (two men on a square) read nothing."""
    out = np.empty(configs.shape[0] * 2 * (counts[0] + counts[2]) + 1, dtype=np.int64)
    n = 0
    for i in range(configs.shape[0]):
        n = _config_steps(nsq, width, nbr, counts, binom, configs[i], out, n)
    return np.unique(out[:n])


@njit(cache=True)
def read_counts(nsq, width, nbr, counts, binom, order, cuts):
    """For each band ``order[cuts[b]:cuts[b + 1]]``, how many configurations it reads
    (``len(reached_configs(...))``, counted with a stamp per configuration, not sorted)."""
    stamp = np.zeros(order.shape[0], dtype=np.int32)
    steps = np.empty(2 * (counts[0] + counts[2]), dtype=np.int64)
    got = np.zeros(cuts.shape[0] - 1, dtype=np.int64)
    for b in range(cuts.shape[0] - 1):
        for i in range(cuts[b], cuts[b + 1]):
            n = _config_steps(nsq, width, nbr, counts, binom, order[i], steps, 0)
            for j in range(n):
                if stamp[steps[j]] != b + 1:
                    stamp[steps[j]] = b + 1
                    got[b] += 1
    return got


@njit(cache=True)
def _config_steps(nsq, width, nbr, counts, binom, r, out, n):
    """The ranks configuration ``r``'s quiet man steps lead to
    (:func:`tablebase.solve.men.quiet_man_steps`), into ``out`` from ``n`` on; returns the
    new end (two steps a man at most)."""
    a = nsq - width
    nbm = counts[2]
    n_bm = binom[a, nbm]
    wm = unrank_colex(np.int64(r // n_bm), counts[0], a, binom) << np.uint64(width)
    bm = unrank_colex(np.int64(r % n_bm), nbm, a, binom)
    if wm & bm:
        return n
    steps = np.empty((2 * nsq, 3), dtype=np.uint64)
    for white in (True, False):
        for i in range(men.quiet_man_steps(nsq, width, nbr, wm, bm, white, steps)):
            out[n] = men_rank(nsq, width, steps[i, 1], steps[i, 2], nbm, binom)
            n += 1
    return n


@njit(cache=True, parallel=True)
def load_words(raw, state, off, ranks, first, kk, vb):
    """The values of configurations ``ranks`` (``raw``: a part's values, configuration ``r``
    at ``r * kk``; a band's part, ``r`` its place in the band) into ``state`` as decided
    words, at slots ``first, first + 1, ...`` of the part at ``off``; a draw is 0."""
    dec = 1 << (2 * vb - 1)
    for i in prange(ranks.shape[0]):
        src = ranks[i] * kk
        dst = off + (first + i) * kk
        for j in range(kk):
            v = np.int64(raw[src + j])
            state[dst + j] = dec | v if v else 0


@njit(cache=True, parallel=True)
def store_values(state, off, raw, ranks, kk, vb):
    """The solved words of the configurations ``ranks`` (slots ``0, 1, ...`` of the part at
    ``off`` in ``state``) into ``raw`` as values (undecided: 0, a draw)."""
    dec = 1 << (2 * vb - 1)
    for i in prange(ranks.shape[0]):
        src = off + i * kk
        dst = ranks[i] * kk
        for j in range(kk):
            s = np.int64(state[src + j])
            raw[dst + j] = s ^ dec if s & dec else 0


@dataclass(frozen=True)
class Band:
    """Band ``number`` of a pair: configurations ``start..stop`` of its order (all of one
    group, ``group``), reading ``n_reads`` configurations of the group before
    (:meth:`Plan.reads`: made again when the band is solved, not held by the plan, whose
    bands would hold up to ``2 * men`` ranks per configuration)."""

    number: int
    group: int
    start: int
    stop: int
    n_reads: int

    def window_configs(self) -> int:
        """Configurations whose words the band's window holds (per part)."""
        return self.stop - self.start + self.n_reads


@dataclass(frozen=True)
class Plan:
    """A pair's bands: the pair, its configurations in solving order, the king placements
    of each (``kk``), and its bands in order."""

    pair: tuple[Slice, ...]
    order: np.ndarray
    kk: int
    bands: tuple[Band, ...]
    variant: Variant

    @property
    def largest_window(self) -> int:
        return max(b.window_configs() for b in self.bands)

    @property
    def band_configs(self) -> int:
        """The most configurations of a band (:func:`plan` with it gives this plan again)."""
        return max(b.stop - b.start for b in self.bands)

    def groups(self) -> list[list[Band]]:
        """The bands of each group, the groups in solving order."""
        out: list[list[Band]] = []
        for b in self.bands:
            if not out or out[-1][0].group != b.group:
                out.append([])
            out[-1].append(b)
        return out

    def band_entries(self, band: Band) -> int:
        """Entries of one part of ``band``'s values (both parts: twice as many)."""
        return (band.stop - band.start) * self.kk

    def reads(self, band: Band) -> np.ndarray:
        """The configurations (sorted ranks) of the group before that ``band`` reads."""
        v = self.variant
        own = self.order[band.start : band.stop]
        return reached_configs(
            v.squares, v.per_row, v.neighbours, _counts(self.pair[0]), BINOM, own
        )

    @cached_property
    def _positions(self) -> np.ndarray:
        pos: np.ndarray = np.empty(len(self.order), dtype=rank_dtype(len(self.order)))
        pos[self.order] = np.arange(len(self.order), dtype=pos.dtype)
        return pos

    def sources(self, band: Band) -> tuple[np.ndarray, list[tuple[Band, np.ndarray]]]:
        """What ``band`` reads (:meth:`reads`) in the order its window holds them (by their
        place in ``order``) and, for each band holding some of them in that order, the band
        and their places in its values."""
        pos = np.sort(self._positions[self.reads(band)]).astype(np.int64)
        starts = np.array([b.start for b in self.bands], dtype=np.int64)
        holder = np.searchsorted(starts, pos, side="right") - 1
        out = []
        for h in np.unique(holder):
            src = self.bands[int(h)]
            assert src.group < band.group, (band.number, src.number)  # solved before
            out.append((src, pos[holder == h] - src.start))
        return self.order[pos], out


def rank_dtype(n: int) -> type:
    """The narrowest of int32 and int64 that holds the places ``0..n`` (a place in a plan's
    order, a slot of a window)."""
    return np.int32 if n < (1 << 31) else np.int64


# Bytes a plan holds per configuration of its pair while one of its bands is solved: the
# order (int64), the place of each configuration in it (:meth:`Plan._positions`, int32 up
# to 2^31 configurations) and the configurations' slots in the band's window (int32). While
# the order is made it sits next to each configuration's advancement (int16), less.
PLAN_BYTES_PER_CONFIG = 8 + 4 + 4
BAND_RECORD_BYTES = 256  # a Band and its place in the tuple


def plan_bytes(variant: Variant, pair: tuple[Slice, ...], nbands: int = 1) -> int:
    """Memory of a plan of ``pair`` with ``nbands`` bands while a band is solved (see
    :data:`PLAN_BYTES_PER_CONFIG`)."""
    return PLAN_BYTES_PER_CONFIG * config_count(variant, pair) + BAND_RECORD_BYTES * nbands


def config_count(variant: Variant, pair: tuple[Slice, ...]) -> int:
    """Men configurations of the pair (ranks, those whose men share a square included)."""
    a = variant.squares - variant.per_row
    c = tuple(pair[0])
    return int(BINOM[a, c[0]] * BINOM[a, c[2]])


def _counts(s: Slice) -> np.ndarray:
    return np.array(tuple(s), dtype=np.int64)


def plan(
    variant: Variant,
    pair: tuple[Slice, ...],
    band_configs: int,
    ordered: tuple[np.ndarray, np.ndarray] | None = None,
) -> Plan:
    """The bands of ``pair`` with at most ``band_configs`` configurations each: every group
    of equal advancement cut into the fewest bands of equal size (``ordered``: the pair's
    :func:`tablebase.solve.men.config_order`, if made already)."""
    nsq, width = variant.squares, variant.per_row
    counts = _counts(pair[0])
    order, groups = ordered or men.config_order(nsq, width, counts, BINOM)
    kk = men.king_entries(nsq, counts, BINOM)
    cuts, group_of = [], []
    for g in range(len(groups) - 1):
        a, b = int(groups[g]), int(groups[g + 1])
        pieces = -(-(b - a) // max(1, band_configs))
        cuts += [a + (b - a) * k // pieces for k in range(pieces)]
        group_of += [g] * pieces
    cuts.append(int(groups[-1]))
    edges = np.array(cuts, dtype=np.int64)
    reads = read_counts(nsq, width, variant.neighbours, counts, BINOM, order, edges)
    bands = tuple(Band(i, g, cuts[i], cuts[i + 1], int(reads[i])) for i, g in enumerate(group_of))
    return Plan(pair, order, kk, bands, variant)


def window_bytes(kk: int, configs: int, vb: int = 8) -> int:
    """Bytes of a window of ``configs`` configurations per part (both parts) of ``kk``
    king placements, with ``2 * vb``-bit words."""
    return 2 * configs * kk * np.dtype(state_dtype(vb)).itemsize


def scratch_bytes(variant: Variant, pair: tuple[Slice, ...], band_configs: int) -> int:
    """The threads' configuration scratch (:func:`tablebase.solve.men.config_scratch`) for
    bands of ``band_configs`` configurations: a row per thread, of which a band touches at
    most one per configuration (:func:`tablebase.solve.men.solve_group`; the pages of a row
    never touched take no memory), so that the bands of one configuration that the
    largest configurations need (flying kings, 280 M placements) hold one row."""
    per = men.scratch_bytes(variant.squares, _counts(pair[0]), BINOM)
    return per * max(1, min(men.pool_threads(), band_configs))


# Bytes per man's step of a band's configurations while :func:`reached_configs` finds what
# the band reads (made once by :func:`plan`, again before the band is solved): the steps
# (int64), np.unique's sorted copy, its mask and its result
READS_BYTES_PER_STEP = 8 + 8 + 1 + 8


def reads_bytes(p: Plan) -> int:
    """The most :func:`reached_configs` holds for a band of plan ``p`` (two steps a man)."""
    return READS_BYTES_PER_STEP * 2 * p.pair[0].men * p.band_configs


def band_memory(variant: Variant, p: Plan) -> int:
    """The most a band of plan ``p`` holds in memory: the plan (:func:`plan_bytes`), the
    threads' scratch, and the larger of its window of two-byte words (a band whose words
    overflow is solved again with four-byte ones, in a window twice the size: counted) and
    the finding of what it reads (:func:`reads_bytes`, before the window is made)."""
    window = window_bytes(p.kk, p.largest_window, 16)
    return (
        plan_bytes(variant, p.pair, len(p.bands))
        + scratch_bytes(variant, p.pair, p.band_configs)
        + max(window, reads_bytes(p))
    )


class BandSolveError(RuntimeError):
    """A band's values do not fit even four-byte state words."""


def solve_band(
    variant: Variant,
    pair: tuple[Slice, ...],
    p: Plan,
    band: Band,
    vals: np.ndarray,
    offsets: np.ndarray,
    solved: Callable[[Band], np.ndarray],
    out: np.ndarray,
    threads: Callable[[], int],
) -> tuple[int, int]:
    """Solve ``band`` of plan ``p`` from its dependencies (``vals``, ``offsets``) and the
    values of the bands it reads (``solved(b)``: band ``b``'s values, see the module
    docstring), and write its values into ``out`` (``2 * p.band_entries(band)`` raw
    values); returns (largest value, random accesses)."""
    assert out.shape[0] == 2 * p.band_entries(band)
    for vb in (8, 16):
        got = _solve_band(variant, pair, p, band, vals, offsets, solved, out, threads, vb)
        if got is not None:
            return got
    raise BandSolveError(
        f"a value does not fit the 32-bit state word in {pair[0].name} (band {band.number})"
    )


def _solve_band(variant, pair, p, band, vals, offsets, solved, out, threads, vb):
    kk = p.kk
    own = p.order[band.start : band.stop]
    reads, sources = p.sources(band)
    nslots = band.window_configs()
    slots = np.full(len(p.order), -1, dtype=rank_dtype(max(len(p.order), nslots)))
    slots[own] = np.arange(len(own))
    slots[reads] = np.arange(len(own), nslots)
    state = np.empty(2 * nslots * kk, dtype=state_dtype(vb))
    offb = nslots * kk
    # a white man's step reads the black-to-move part, and the other way round; the reads
    # held by one band are consecutive slots of the window
    first = len(own)
    for src, places in sources:
        values, m = solved(src), p.band_entries(src)
        load_words(values[:m], state, 0, places, first, kk, vb)
        load_words(values[m:], state, offb, places, first, kk, vb)
        first += len(places)
        del values
    scratch = men.config_scratch(kk, men.pool_threads())
    none = np.zeros(0, dtype=np.uint8)
    counts = _counts(pair[0])
    n = threads()
    top, nreads, visits = men.solve_group(
        PairWords(state, 0, offb, vb, none, none, slots), Tables(vals, offsets),
        variant.rules, Shape(counts, BINOM), kk, own, n, scratch,
    )  # fmt: skip
    if top >= OVERFLOW:
        return None
    local = np.arange(len(own), dtype=np.int64)
    m = p.band_entries(band)
    store_values(state, 0, out[:m], local, kk, vb)
    store_values(state, offb, out[m:], local, kk, vb)
    return int(top), int(nreads) + int(visits)


def place_band(
    p: Plan, band: Band, values: np.ndarray, white: np.ndarray, black: np.ndarray
) -> None:
    """``band``'s values into each part's values in configuration-rank order (``white``,
    ``black``: configuration ``r`` at ``r * kk``)."""
    own = p.order[band.start : band.stop]
    m = p.band_entries(band)
    white.reshape(-1, p.kk)[own] = values[:m].reshape(-1, p.kk)
    black.reshape(-1, p.kk)[own] = values[m:].reshape(-1, p.kk)


def mirror_values(
    variant: Variant,
    pair: tuple[Slice, ...],
    black: np.ndarray,
    out: np.ndarray,
    c0: int,
    c1: int,
    threads: int,
) -> None:
    """Configurations ``c0..c1`` of the black-to-move part ``black`` (raw values in the first
    slice's board order) into the mirror slice's index order in ``out``
    (:func:`tablebase.solve.men.to_file_order`)."""
    none = np.zeros(0, dtype=np.uint8)
    men.to_file_order(
        black, out, (none, none), (variant.squares, variant.per_row),
        Shape(_counts(pair[0]), BINOM), max(1, threads) * 8, c0, c1,
    )  # fmt: skip


def solve_bands(
    variant: Variant,
    pair: tuple[Slice, ...],
    p: Plan,
    vals: np.ndarray,
    offsets: np.ndarray,
    threads: Callable[[], int],
) -> tuple[np.ndarray, np.ndarray]:
    """Every band of plan ``p`` solved in order, in memory; each part's values in
    configuration-rank order (what the scratch folder holds at the end, out of core)."""
    solved: dict[int, np.ndarray] = {}
    n = len(p.order) * p.kk
    white, black = np.zeros(n, RAW_DTYPE), np.zeros(n, RAW_DTYPE)
    for band in p.bands:
        out = np.zeros(2 * p.band_entries(band), RAW_DTYPE)
        solve_band(variant, pair, p, band, vals, offsets, lambda b: solved[b.number], out, threads)
        solved[band.number] = out
        place_band(p, band, out, white, black)
    return white, black


@njit(cache=True, parallel=True)
def range_counts(values, nsq, width, counts, binom, kk, c0, c1):
    """:func:`tablebase.solve.stats.value_counts` over the men configurations ``c0..c1`` of a
    slice of ``counts`` without king runs (``values``: the slice's, indexed by entry):
    ``(positions, wins,
    losses, largest win value, first entry holding it)``; a configuration whose men share a
    square holds no position."""
    a = nsq - width
    n_bm = binom[a, counts[2]]
    n = c1 - c0
    out = np.zeros((max(n, 1), 5), dtype=np.int64)
    for i in prange(n):
        r = c0 + i
        wm = unrank_colex(np.int64(r // n_bm), counts[0], a, binom) << np.uint64(width)
        bm = unrank_colex(np.int64(r % n_bm), counts[2], a, binom)
        if wm & bm:
            continue
        wins = losses = top = 0
        for j in range(r * kk, (r + 1) * kk):
            wins, losses, top = count_value(np.int64(values[j]), wins, losses, top)
        out[i, 0] = kk
        out[i, 1] = wins
        out[i, 2] = losses
        out[i, 3] = top
    top = out[:, 3].max()
    first = -1
    if top > 0:
        i = 0
        while out[i, 3] < top:
            i += 1
        for j in range((c0 + i) * kk, (c0 + i + 1) * kk):
            if values[j] == top:
                first = j
                break
    return out[:, 0].sum(), out[:, 1].sum(), out[:, 2].sum(), top, first
