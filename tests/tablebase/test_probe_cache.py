"""Probing through a bounded block cache (:mod:`tablebase.probe.cache`).

The answers are compared with the stored arrays read whole by h5py (not through the
prober's block reads), over every slice: values and WDL-only, single probes and batches,
either side to move, through a cache of a few blocks (evicting all the time) and a large
one; a WDL-only copy whose capture positions are resolved through their captures, against
the values; older (format 2) files; a damaged block named as the whole-slice check named
it; probes from several threads sharing a small cache; a fresh WDL-only database probed
from eight threads at once, many times over."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest

import tablebase
from tablebase.material.index import BINOM, position_from_index
from tablebase.material.slices import parse_slice
from tablebase.probe.cache import BlockCache
from tablebase.rules import has_capture
from tablebase.rules.position import Position
from tablebase.storage.chunkio import BLOCK_BYTES, CRC_SUFFIX, BlockReader
from tablebase.storage.export import export_database
from tablebase.storage.reader import read_slice
from tablebase.storage.slicefile import TableFileError, slice_path
from tablebase.storage.values import decode
from tablebase.storage.writer import write_parts
from tests.conftest import tablebase_cli
from tests.tablebase.conftest import build_db

TINY = 4 * BLOCK_BYTES  # the smallest cache: four blocks


def stored(db: Path, s) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """The values and packed WDL codes of a slice, read whole by h5py."""
    with h5py.File(slice_path(db, s), "r") as f:
        return f["values"][...], f["wdl"][...]


def sample(variant, s, per_slice: int, seed: int):  # type: ignore[no-untyped-def]
    """Entries of slice ``s`` that are positions and their boards: random ones, and the
    first and last entry of every block of its values."""
    rng = np.random.default_rng(seed)
    size = s.size(variant)
    edges = np.arange(0, size, BLOCK_BYTES // 2)  # every block edge of 8- and 16-bit values
    idx = np.unique(np.concatenate([rng.integers(0, size, per_slice), edges, edges - 1]))
    idx = idx[(idx >= 0) & (idx < size)]
    keep, boards = [], [[], [], [], []]
    for i in idx.tolist():
        *b, ok = position_from_index(i, variant.squares, variant.per_row, *tuple(s), BINOM)
        if ok:
            keep.append(i)
            for g in range(4):
                boards[g].append(int(b[g]))
    return np.array(keep, dtype=np.int64), [np.array(b, dtype=np.uint64) for b in boards]


def flipped(variant, boards):  # type: ignore[no-untyped-def]
    """The same positions with black to move (turned, colours swapped)."""
    n = variant.squares

    def turn(x: np.ndarray) -> np.ndarray:
        out = np.zeros_like(x)
        for sq in range(n):
            out |= ((x >> np.uint64(sq)) & np.uint64(1)) << np.uint64(n - 1 - sq)
        return out

    wm, wk, bm, bk = boards
    return [turn(bm), turn(bk), turn(wm), turn(wk)]


def wdl_of_codes(packed: np.ndarray, idx: np.ndarray) -> np.ndarray:
    codes = (packed[idx >> 2] >> ((idx & 3) * 2).astype(np.uint8)) & 3
    return np.select([codes == 1, codes == 2], [1, -1], 0).astype(np.int8)


def wdl_of_values(values: np.ndarray) -> np.ndarray:
    return np.array([decode(int(v))[0] for v in values], dtype=np.int8)


def check_every_slice(db: Path, per_slice: int, singles: int) -> None:
    """Tiny-cache and large-cache answers against the stored arrays, every slice."""
    tiny = tablebase.open(db, cache=TINY)
    large = tablebase.open(db, cache="64M")
    tiny_wdl = tablebase.open(db, wdl_only=True, cache=TINY)
    v = tiny.variant
    assert tiny.slices()
    for n, s in enumerate(tiny.slices()):
        values, packed = stored(db, s)
        idx, boards = sample(v, s, per_slice, n)
        want = values[idx]
        want_wdl = wdl_of_codes(packed, idx)
        np.testing.assert_array_equal(want_wdl, wdl_of_values(want))  # the two parts agree
        np.testing.assert_array_equal(tiny.probe_batch(*boards, True), want, err_msg=s.name)
        np.testing.assert_array_equal(large.probe_batch(*boards, True), want, err_msg=s.name)
        black = flipped(v, boards)
        np.testing.assert_array_equal(tiny.probe_batch(*black, False), want, err_msg=s.name)
        got = tiny_wdl.probe_batch_wdl(*boards, True)
        np.testing.assert_array_equal(got, want_wdl, err_msg=s.name)
        got = tiny_wdl.probe_batch_wdl(*black, False)
        np.testing.assert_array_equal(got, want_wdl, err_msg=s.name)
        for j in np.linspace(0, idx.shape[0] - 1, min(singles, idx.shape[0])).astype(int):
            pos = Position(*(int(b[j]) for b in boards), True, v)
            assert tiny.probe_byte(pos) == want[j], (s.name, pos.fen())
            assert tiny_wdl.probe_wdl(pos) == want_wdl[j], (s.name, pos.fen())
            assert tiny_wdl.probe_wdl(pos.flipped()) == want_wdl[j], (s.name, pos.fen())
    assert tiny.cache.evictions > 0 and tiny_wdl.cache.evictions > 0
    assert tiny.cache.used <= TINY and large.cache.reads <= tiny.cache.reads


def test_a_cache_of_four_blocks_answers_as_the_stored_arrays(db3_international) -> None:
    check_every_slice(db3_international, 3000, 60)


@pytest.mark.slow
def test_a_cache_of_four_blocks_over_every_slice_of_2_to_4_pieces(tmp_path) -> None:
    db = build_db(tmp_path / "english", "english", 4)
    check_every_slice(db, 20_000, 150)


def test_captures_resolved_through_a_tiny_cache(db3_international, tmp_path) -> None:
    """A WDL-only copy leaving capture positions to the prober: each is resolved through
    the positions after its captures, read a block at a time; equal to the values."""
    copy = tmp_path / "international"
    export_database(db3_international, copy, wdl_only=True, resolve_captures=True)
    with h5py.File(copy / "1020.h5") as f:
        assert "captures" not in f["wdl"].attrs  # the form that leaves captures
    tb = tablebase.open(copy, wdl_only=True, cache=TINY)
    v = tb.variant
    captures = 0
    for n, s in enumerate(tb.slices()):
        values, _ = stored(db3_international, s)
        idx, boards = sample(v, s, 2000, 100 + n)
        want = wdl_of_values(values[idx])
        np.testing.assert_array_equal(tb.probe_batch_wdl(*boards, True), want, err_msg=s.name)
        for j in range(0, idx.shape[0], max(1, idx.shape[0] // 40)):
            pos = Position(*(int(b[j]) for b in boards), True, v)
            captures += has_capture(pos)
            assert tb.probe_wdl(pos) == want[j], pos.fen()
    assert captures > 0 and tb.cache.evictions > 0


def test_two_byte_values_through_a_tiny_cache(db3_international, tmp_path) -> None:
    """A slice stored with two bytes a value (as one whose distances pass 254 plies is),
    its values made to need the high byte: through a cache of four blocks, single and batch
    probes, either side to move, read both bytes (``probe_batch`` gives ``uint16``)."""
    db = tmp_path / "international"
    shutil.copytree(db3_international, db)
    tb0 = tablebase.open(db)
    v = tb0.variant
    s = max(tb0.slices(), key=lambda t: t.size(v))
    tb0.close()
    values, packed = stored(db, s)
    wide = values.astype(np.uint16)
    wide[wide != 0] += 512  # same parity: the same results, distances past one byte
    with h5py.File(slice_path(db, s), "r") as f:
        attrs = dict(f.attrs)
    write_parts(db, v, s, attrs, packed, wide)
    with h5py.File(slice_path(db, s), "r") as f:
        assert f["values"].dtype == np.uint16 and f["values"].chunks[0] == BLOCK_BYTES // 2
    tb = tablebase.open(db, cache=TINY)
    idx, boards = sample(v, s, 3000, 7)
    want = wide[idx]
    assert want.max() > 255
    got = tb.probe_batch(*boards, True)
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tb.probe_batch(*flipped(v, boards), False), want)
    for j in range(0, idx.shape[0], max(1, idx.shape[0] // 200)):
        pos = Position(*(int(b[j]) for b in boards), True, v)
        assert tb.probe_byte(pos) == want[j], pos.fen()
        assert tb.probe_byte(pos.flipped()) == want[j], pos.fen()
    assert tb.cache.evictions > 0


def as_format_2(src: Path, dst: Path) -> None:
    """Copy a database as format 2 wrote it: chunks of 2^18 entries, no block checksums."""
    dst.mkdir(parents=True)
    for path in sorted(src.glob("*.h5")):
        with h5py.File(path, "r") as f, h5py.File(dst / path.name, "w") as g:
            for k, val in f.attrs.items():
                g.attrs[k] = val
            g.attrs["format_version"] = 2
            for name in ("wdl", "values"):
                data = f[name][...]
                ds = g.create_dataset(
                    name, data=data, chunks=(min(1 << 18, data.shape[0]),), compression="gzip"
                )
                for k, val in f[name].attrs.items():
                    ds.attrs[k] = val


def test_format_2_files_are_checked_whole_then_read_by_blocks(db3_international, tmp_path):
    old = tmp_path / "old" / "international"
    as_format_2(db3_international, old)
    with h5py.File(old / "1020.h5") as f:
        assert "values" + CRC_SUFFIX not in f and f["values"].chunks[0] > BLOCK_BYTES
    tb = tablebase.open(old, cache=TINY)
    tw = tablebase.open(old, wdl_only=True, cache=TINY)
    v = tb.variant
    for n, s in enumerate(tb.slices()):
        values, packed = stored(db3_international, s)
        idx, boards = sample(v, s, 500, 200 + n)
        np.testing.assert_array_equal(tb.probe_batch(*boards, True), values[idx])
        np.testing.assert_array_equal(tw.probe_batch_wdl(*boards, True), wdl_of_codes(packed, idx))
    tb.close()  # its files are closed
    tw.close()
    # a damaged old file is refused whole on first use, named, as before
    with h5py.File(old / "0120.h5", "r+") as f:
        data = f["values"][...]
        data[-1] ^= 1
        f["values"][...] = data
    fresh = tablebase.open(old, cache=TINY)
    with pytest.raises(TableFileError, match=r"0120\.h5: checksum mismatch"):
        fresh.probe(Position.from_fen("W:WK38:B4,18", v))


def _damage_block(path: Path, part: str, block: int) -> None:
    reader = BlockReader(path, part)
    offset, size = int(reader.offsets[block]), int(reader.sizes[block])
    reader.close()
    data = bytearray(path.read_bytes())
    for k in range(offset + size // 3, offset + size // 3 + 8):
        data[k] ^= 0x5A
    path.write_bytes(bytes(data))


def test_a_damaged_block_is_named_when_read(db3_international, tmp_path) -> None:
    db = tmp_path / "international"
    shutil.copytree(db3_international, db)
    tb0 = tablebase.open(db)
    v = tb0.variant
    s = parse_slice("1020")
    assert s.size(v) > 2 * BLOCK_BYTES  # several blocks of values
    values, packed = stored(db, s)
    idx, boards = sample(v, s, 500, 7)
    in_block = idx // BLOCK_BYTES  # 8-bit values: BLOCK_BYTES entries a block
    assert values.dtype == np.uint8 and (in_block == 1).any() and (in_block != 1).any()
    _damage_block(db / "1020.h5", "values", 1)
    tb = tablebase.open(db, cache=TINY)
    bad = int(np.flatnonzero(in_block == 1)[0])
    good = np.flatnonzero(in_block != 1)
    with pytest.raises(TableFileError, match=r"1020\.h5: .*block 1 of /?values"):
        tb.probe(Position(*(int(b[bad]) for b in boards), True, v))
    with pytest.raises(TableFileError, match=r"1020\.h5"):
        tb.probe_batch(*boards, True)  # the batch needs the damaged block too
    # the other blocks still answer, and the WDL part is whole
    np.testing.assert_array_equal(
        tb.probe_batch(*(b[good] for b in boards), True), values[idx[good]]
    )
    tw = tablebase.open(db, wdl_only=True, cache=TINY)
    np.testing.assert_array_equal(tw.probe_batch_wdl(*boards, True), wdl_of_codes(packed, idx))
    # a whole read names the file and the block too, and nothing is left pinned
    with pytest.raises(TableFileError, match=r"1020\.h5"):
        read_slice(db / "1020.h5", v, s)
    assert int(tb.cache.pins.sum()) == tb.cache.resident_slots


@pytest.fixture(scope="module")
def format4_international(db3_international, tmp_path_factory) -> Path:
    """``db3_international`` written as format 4 wrote it: values in groups of 256 bytes,
    rows that do not say their group size."""
    from tablebase.storage import groupcode, writer
    from tablebase.storage.reader import read_attrs, read_wdl

    db = tmp_path_factory.mktemp("format4") / "international"
    db.mkdir()
    v = tablebase.open(db3_international).variant
    with pytest.MonkeyPatch.context() as m:
        m.setattr(writer, "FORMAT_VERSION", 4)
        m.setattr(writer, "VALUES_CODEC", "groups-256")
        m.setattr(groupcode, "GROUP_ATTR", "not_in_format_4")  # the size goes unsaid
        for path in sorted(db3_international.glob("*.h5")):
            s = parse_slice(path.stem)
            attrs = read_attrs(path)
            keep = {k: a for k, a in attrs.items() if k not in ("parts", "wdl_captures_stored")}
            write_parts(db, v, s, keep, read_wdl(path, v, s), read_slice(path, v, s),
                        attrs["wdl_captures_stored"])  # fmt: skip
    for path in db.glob("*.h5"):
        assert read_attrs(path)["format_version"] == 4
        with h5py.File(path, "r") as f:
            assert groupcode.GROUP_ATTR not in f["values_groups"].attrs
            chunk = f["values"].chunks[0]  # BLOCK_BYTES, or a smaller slice's size
            assert f["values_groups"].shape[1] == 1 + -(-chunk // 256)
    return db


@pytest.mark.parametrize(("form", "gap"), [("5", 0), ("5", None), ("4", None)])
def test_sparse_batches_read_group_coded_blocks_directly(
    db3_international, format4_international, monkeypatch, form, gap
):
    """With no slice kept resident and a cache of four blocks, a batch of a few positions a
    block reads their entries straight from the group-coded blocks (none is cached): the
    answers are the stored arrays', values and WDL, every slice, either side to move. The
    groups of blocks checked before are read apart (``gap`` 0) or with the bytes between
    them (the default); a format 4 database (values in groups of 256 bytes) reads the
    same."""
    from tablebase.probe import direct

    if gap is not None:
        monkeypatch.setattr(direct, "GAP_BYTES", gap)
    db = format4_international if form == "4" else db3_international
    tiny = tablebase.open(db, cache=TINY, resident_pieces=0)
    tiny_wdl = tablebase.open(db, wdl_only=True, cache=TINY, resident_pieces=0)
    v = tiny.variant
    for n, s in enumerate(tiny.slices()):
        values, packed = stored(db3_international, s)
        idx, boards = sample(v, s, 60, n)
        keep = few_a_block(idx, 3)  # up to three positions a block, in any order
        idx, boards = idx[keep], [b[keep] for b in boards]
        reads = tiny.cache.reads
        np.testing.assert_array_equal(tiny.probe_batch(*boards, True), values[idx], s.name)
        np.testing.assert_array_equal(
            tiny.probe_batch(*flipped(v, boards), False), values[idx], s.name
        )
        if s.size(v) >= BLOCK_BYTES:  # blocks of BLOCK_BYTES (a smaller one is read whole)
            assert tiny.cache.reads == reads  # nothing inflated into the cache
        want = wdl_of_codes(packed, idx)
        np.testing.assert_array_equal(tiny_wdl.probe_batch_wdl(*boards, True), want, s.name)
        np.testing.assert_array_equal(
            tiny_wdl.probe_batch_wdl(*flipped(v, boards), False), want, s.name
        )
        for j in range(min(20, idx.shape[0])):  # single probes: read directly, then cached
            pos = Position(*(int(b[j]) for b in boards), True, v)
            for _ in range(3):
                assert tiny.probe_byte(pos) == values[idx[j]], (s.name, pos.fen())
                assert tiny_wdl.probe_wdl(pos) == want[j], (s.name, pos.fen())
    assert tiny.cache.direct_blocks > 0 and tiny_wdl.cache.direct_blocks > 0
    assert tiny.cache.reads > 0 and tiny_wdl.cache.reads > 0  # pages missed twice: cached


def few_a_block(idx: np.ndarray, k: int) -> np.ndarray:
    """Where in ``idx`` the first ``k`` entries of each block are, shuffled (a batch's
    positions come in no order)."""
    block = idx // BLOCK_BYTES
    order = np.argsort(block, kind="stable")
    starts = np.searchsorted(block[order], block[order])
    rank = np.arange(idx.shape[0]) - starts
    keep = order[rank < k]
    return np.random.default_rng(len(idx)).permutation(keep)


def test_a_damaged_block_read_directly_is_named(db3_international, tmp_path) -> None:
    db = tmp_path / "international"
    shutil.copytree(db3_international, db)
    v = tablebase.open(db).variant
    s = parse_slice("1020")
    values, _ = stored(db, s)
    idx, boards = sample(v, s, 500, 7)
    keep = np.unique(idx // BLOCK_BYTES, return_index=True)[1]  # one position a block
    idx, boards = idx[keep], [b[keep] for b in boards]
    assert (idx // BLOCK_BYTES == 1).any()
    _damage_block(db / "1020.h5", "values", 1)
    tb = tablebase.open(db, cache=TINY, resident_pieces=0)
    with pytest.raises(TableFileError, match=r"1020\.h5: .*block 1 of values: checksum"):
        tb.probe_batch(*boards, True)
    good = idx // BLOCK_BYTES != 1
    np.testing.assert_array_equal(
        tb.probe_batch(*(b[good] for b in boards), True), values[idx[good]]
    )
    assert tb.cache.direct_blocks > 0
    r = tablebase_cli("verify", "--db", str(db), check=False)
    assert r.returncode == 1 and "1020.h5" in r.stdout + r.stderr


def test_threads_sharing_a_small_cache(db3_international) -> None:
    """Eight threads probe batches and single positions of every slice through one cache of
    six blocks: blocks are evicted under them all the time, every answer is right."""
    cache = BlockCache(6 * BLOCK_BYTES)
    tb = tablebase.open(db3_international, cache=cache)
    tw = tablebase.open(db3_international, wdl_only=True, cache=cache)
    v = tb.variant
    cases = []
    for n, s in enumerate(tb.slices()):
        values, packed = stored(db3_international, s)
        idx, boards = sample(v, s, 400, 300 + n)
        cases.append((s, boards, values[idx], wdl_of_codes(packed, idx)))
    errors: list[str] = []

    def work(k: int) -> None:
        rng = np.random.default_rng(k)
        try:
            for _ in range(12):
                s, boards, want, want_wdl = cases[int(rng.integers(len(cases)))]
                if not np.array_equal(tb.probe_batch(*boards, True), want):
                    errors.append(f"batch {s.name}")
                if not np.array_equal(tw.probe_batch_wdl(*boards, True), want_wdl):
                    errors.append(f"wdl batch {s.name}")
                for j in rng.integers(0, want.shape[0], 20):
                    pos = Position(*(int(b[j]) for b in boards), True, v)
                    if tb.probe_byte(pos) != want[j] or tw.probe_wdl(pos) != want_wdl[j]:
                        errors.append(f"single {pos.fen()}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not any(t.is_alive() for t in threads), "a probing thread did not finish"
    assert errors == []
    assert cache.evictions > 100 and cache.used <= 6 * BLOCK_BYTES
    assert int(cache.pins.sum()) == cache.resident_slots  # nothing left pinned


def test_threads_reading_blocks_directly(db3_international) -> None:
    """Six threads probe sparse batches and single positions of every slice through one
    cache of four blocks with no slice resident: the batches read group-coded blocks
    straight from the files, the singles read them directly and then through the cache;
    every answer is the stored arrays' and nothing is left pinned."""
    tb = tablebase.open(db3_international, cache=TINY, resident_pieces=0)
    tw = tablebase.open(db3_international, wdl_only=True, cache=TINY, resident_pieces=0)
    v = tb.variant
    cases = []
    for n, s in enumerate(tb.slices()):
        if s.size(v) < BLOCK_BYTES:
            continue
        values, packed = stored(db3_international, s)
        idx, boards = sample(v, s, 40, n)
        keep = np.unique(idx // BLOCK_BYTES, return_index=True)[1]
        idx, boards = idx[keep], [b[keep] for b in boards]
        cases.append((s, boards, values[idx], wdl_of_codes(packed, idx)))
    errors: list[str] = []

    def work(k: int) -> None:
        rng = np.random.default_rng(k)
        try:
            for _ in range(10):
                s, boards, want, want_wdl = cases[int(rng.integers(len(cases)))]
                if not np.array_equal(tb.probe_batch(*boards, True), want):
                    errors.append(f"batch {s.name}")
                if not np.array_equal(tw.probe_batch_wdl(*boards, True), want_wdl):
                    errors.append(f"wdl batch {s.name}")
                for j in rng.integers(0, want.shape[0], 10):
                    pos = Position(*(int(b[j]) for b in boards), True, v)
                    if tb.probe_byte(pos) != want[j] or tw.probe_wdl(pos) != want_wdl[j]:
                        errors.append(f"single {pos.fen()}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not any(t.is_alive() for t in threads), "a probing thread did not finish"
    assert errors == []
    assert tb.cache.direct_blocks > 0 and tw.cache.direct_blocks > 0
    assert int(tb.cache.pins.sum()) == 0 and int(tw.cache.pins.sum()) == 0
    tb.close()
    tw.close()


def test_wdl_only_probes_from_eight_threads_on_a_fresh_database(db3_international) -> None:
    """Eight threads probing a WDL-only database just opened (each slice opened by whichever
    thread needs it first) finish and agree with one thread, round after round. The prober
    before the cache could loop for ever here: a thread that found a slice in its dict of
    loaded tables took it for laid out while another thread was still laying the tables end
    to end, and one whose concatenation failed mid-way (the dict changed size under it)
    left a slice in the dict that no offset pointed to."""
    one = tablebase.open(db3_international, wdl_only=True, cache="16M")
    v = one.variant
    rng = np.random.default_rng(5)
    arrs: list[list[int]] = [[], [], [], []]
    for s in one.slices():
        for i in rng.integers(0, s.size(v), 300).tolist():
            *b, ok = position_from_index(i, v.squares, v.per_row, *tuple(s), BINOM)
            if ok:
                for g in range(4):
                    arrs[g].append(int(b[g]))
    boards = [np.array(a, dtype=np.uint64) for a in arrs]
    wtm = rng.integers(0, 2, boards[0].shape[0]).astype(bool)
    want = one.probe_batch_wdl(*boards, wtm)
    singles = [
        Position(*(int(b[i]) for b in boards), bool(wtm[i]), v) for i in range(0, len(wtm), 7)
    ]
    want_single = [one.probe_wdl(p) for p in singles]
    for round_ in range(25):
        tb = tablebase.open(db3_international, wdl_only=True, cache=8 * BLOCK_BYTES)
        errors: list[str] = []
        start = threading.Barrier(8)

        def work(k: int, tb=tb, errors=errors, start=start) -> None:  # type: ignore[no-untyped-def]
            try:
                start.wait()
                if k % 2:
                    if not np.array_equal(tb.probe_batch_wdl(*boards, wtm), want):
                        errors.append("batch")
                elif [tb.probe_wdl(p) for p in singles[k::2]] != want_single[k::2]:
                    errors.append("single")
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads), f"round {round_}: a thread is stuck"
        assert errors == [], f"round {round_}"
        tb.close()


def test_a_database_closed_while_its_block_is_read(db3_international, monkeypatch) -> None:
    """A database closed by one thread while another reads one of its blocks: the block is
    not mapped into the closed database's pages (its slot was freed with the rest, its file
    closed under the read), the probe opens the slice again and answers right, and nothing
    is left pinned."""
    from tablebase.probe import blocks

    tb = tablebase.open(db3_international, cache=TINY)
    v = tb.variant
    s = max(tb.slices(), key=lambda t: t.size(v))
    values, _ = stored(db3_international, s)
    idx, boards = sample(v, s, 10, 3)
    pos = Position(*(int(b[0]) for b in boards), True, v)
    reading, go = threading.Event(), threading.Event()
    real = blocks._Checked.read

    def slow(self, k: int, out: np.ndarray) -> None:  # type: ignore[no-untyped-def]
        if not go.is_set():
            reading.set()
            go.wait(60)
        real(self, k, out)

    monkeypatch.setattr(blocks._Checked, "read", slow)
    got: list[object] = []

    def probe() -> None:
        try:
            got.append(tb.probe_byte(pos))
        except Exception as e:  # noqa: BLE001 - compared below
            got.append(repr(e))

    t = threading.Thread(target=probe)
    t.start()
    assert reading.wait(60)
    tb.close()  # frees the slot being filled and closes the file being read
    go.set()
    t.join(60)
    assert got == [values[idx[0]]]
    c = tb.cache
    assert int(c.pins.sum()) == c.resident_slots  # nothing left pinned
    mapped = tb._values.pages[tb._values.pages >= 0]
    assert mapped.shape[0] == 1 == np.unique(mapped).shape[0]  # the block read again, once


def test_cache_sizes_and_the_default() -> None:
    from tablebase.probe.cache import cache_bytes, default_capacity, machine_memory

    assert cache_bytes("256M") == 256 << 20 and cache_bytes("1GiB") == 1 << 30
    assert cache_bytes(None) == default_capacity() == machine_memory() // 4
    with pytest.raises(ValueError, match="below the smallest cache"):
        BlockCache(1000)
    with pytest.raises(ValueError, match="memory size 'lots'"):
        BlockCache("lots")
    c = BlockCache("1M")
    assert c.capacity == 1 << 20 and c.slots == (1 << 20) // BLOCK_BYTES and c.used == 0


def test_cache_options_of_the_commands(db3_international, tmp_path) -> None:
    """``tablebase probe --cache``, ``adjudicator rule --cache``, and the service's
    ``ADJUDICATOR_CACHE_BYTES``: the same answers through a cache of a few blocks; a bad
    size is one line and exit status 2."""
    from click.testing import CliRunner
    from fastapi.testclient import TestClient

    from adjudicator.cli import main as adjudicator_cli
    from adjudicator.service.app import ServiceSettings, create_app
    from tablebase.rules.outcome import RESULT_NAMES

    fens = ["W:WK38:B4,18", "W:W33:B2", "B:WK46:B5,6"]
    plain = tablebase_cli("probe", "--db", str(db3_international), "--json", *fens)
    tiny = tablebase_cli("probe", "--db", str(db3_international), "--cache", "64K", "--json", *fens)
    assert tiny.stdout == plain.stdout and len(plain.stdout.splitlines()) == 3
    bad = tablebase_cli(
        "probe", "--db", str(db3_international), "--cache", "1K", fens[0], check=False
    )
    assert bad.returncode == 2 and "--cache" in bad.stderr and "smallest cache" in bad.stderr
    assert "Traceback" not in bad.stderr
    game = tmp_path / "g.pdn"
    game.write_text('[GameType "20"]\n[FEN "W:WK38:B4,18"]\n\n*\n')
    runner = CliRunner()
    args = ["rule", "--json", "--db", str(db3_international), str(game)]
    assert runner.invoke(adjudicator_cli, [*args, "--cache", "64K"]).output == (
        runner.invoke(adjudicator_cli, args).output
    )
    refused = runner.invoke(adjudicator_cli, [*args, "--cache", "lots"])
    assert refused.exit_code == 2 and "--cache: memory size 'lots'" in refused.output
    settings = ServiceSettings.from_env({"ADJUDICATOR_CACHE_BYTES": str(8 * BLOCK_BYTES)})
    assert settings.cache_bytes == 8 * BLOCK_BYTES
    with TestClient(create_app(db3_international, settings)) as client:
        probe = client.get("/probe", params={"fen": "W:WK38:B4,18"}).json()
        with tablebase.open(db3_international) as tb:
            wdl, dtw = tb.probe("W:WK38:B4,18")
        assert (probe["result"], probe["dtw"]) == (RESULT_NAMES[wdl], dtw)
        health = client.get("/health").json()
        # the budget holds the blocks and the recent answers (a sixteenth: 8 KiB), the
        # blocks rounded down to whole blocks
        assert health["cache"]["bytes"] == 7 * BLOCK_BYTES
        answers = health["answers"]  # the probe's answer, kept
        assert answers["bytes"] == BLOCK_BYTES // 2 and answers["entries"] == 1
        assert 0 < answers["used"] <= answers["bytes"]
        assert 0 < health["cache"]["used"] <= 7 * BLOCK_BYTES


def test_export_converts_format_4_groups(format4_international, db3_international, tmp_path):
    """``tablebase export`` of a format 4 database writes format 5: values in groups of 128
    bytes (their rows say so), WDL codes in groups of 256, the same tables."""
    from tablebase.storage import groupcode
    from tablebase.storage.reader import read_attrs, read_wdl

    new = tmp_path / "v5" / "international"
    export_database(format4_international, new)
    v = tablebase.open(db3_international).variant
    for path in sorted(db3_international.glob("*.h5")):
        s = parse_slice(path.stem)
        out = slice_path(new, s)
        assert read_attrs(out)["format_version"] == 5
        with h5py.File(out, "r") as f:
            assert f["values_groups"].attrs[groupcode.GROUP_ATTR] == 128
            assert f["wdl_groups"].attrs[groupcode.GROUP_ATTR] == 256
        np.testing.assert_array_equal(read_slice(out, v, s), read_slice(path, v, s))
        np.testing.assert_array_equal(read_wdl(out, v, s), read_wdl(path, v, s))


def test_a_batch_is_cut_into_the_blocks_read_directly_and_the_rest() -> None:
    """Pages 3, 5, 9 and 12 of a batch (positions 0-1, 2, 3-5, 6): pages 5 and 12 are
    group-coded (stored sizes >= 0), 3 not, 9 past the table; each side keeps its
    grouping, positions in order."""
    from tablebase.probe.pagesort import by_page, coded_pages, split_pages

    addr = np.array([12, 3, 9, 5, 9, 3, 9]) << 4
    sel = np.arange(7, dtype=np.int64) * 10
    sel, addr, uniq, bounds = by_page(sel, addr, 4, 13)
    assert uniq.tolist() == [3, 5, 9, 12] and bounds.tolist() == [0, 2, 3, 6, 7]
    sizes = np.full(13, -1, dtype=np.int64)
    sizes[[5, 12]] = 100
    ok, positions, blocks = coded_pages(uniq, bounds, sizes[:10])  # page 12 past these sizes
    assert ok.tolist() == [False, True, False, False] and (positions, blocks) == (1, 1)
    ok, positions, blocks = coded_pages(uniq, bounds, sizes)
    assert ok.tolist() == [False, True, False, True] and (positions, blocks) == (2, 2)
    dsel, daddr, duniq, dbounds, rsel, raddr, runiq, rbounds = split_pages(
        ok, sel, addr, uniq, bounds, positions, blocks
    )
    assert dsel.tolist() == [30, 0] and (daddr >> 4).tolist() == [5, 12]
    assert duniq.tolist() == [5, 12] and dbounds.tolist() == [0, 1, 2]
    assert rsel.tolist() == [10, 50, 20, 40, 60] and (raddr >> 4).tolist() == [3, 3, 9, 9, 9]
    assert runiq.tolist() == [3, 9] and rbounds.tolist() == [0, 2, 5]


@pytest.mark.parametrize(
    ("n", "pages", "seed"), [(0, 1, 0), (5, 1, 1), (1000, 7, 2), (300_000, 100_000, 3), (9, 500, 4)]
)
def test_a_batch_is_grouped_by_page_in_order(n: int, pages: int, seed: int) -> None:
    """:func:`by_page` against a stable sort: the positions of each page in the order given,
    the pages in order, each page's first position."""
    from tablebase.probe.pagesort import by_page

    rng = np.random.default_rng(seed)
    page = rng.integers(0, pages, n)
    addr = (page << 5) | rng.integers(0, 32, n)
    sel = rng.permutation(n).astype(np.int64)
    out_sel, out_addr, uniq, bounds = by_page(sel, addr, 5, pages)
    order = np.argsort(page, kind="stable")
    np.testing.assert_array_equal(out_sel, sel[order])
    np.testing.assert_array_equal(out_addr, addr[order])
    want = np.unique(page)
    np.testing.assert_array_equal(uniq, want)
    np.testing.assert_array_equal(bounds, np.searchsorted(page[order], np.append(want, pages)))


def test_a_single_look_up_answers_a_named_status(db3_international) -> None:
    """The WDL part's single look-up (:func:`tablebase.probe.lookup.result_quick`) answers
    a pair of :mod:`tablebase.probe.status`: ``NOT_OPEN`` and the slice's material code
    before its slice is opened, ``BLOCK_MISSING`` and the entry's address (in two-bit
    codes, within the slice's pages) before its block is read, ``FOUND`` and the result
    once it is: the result the values part gives."""
    from tablebase.probe.lookup import result_quick
    from tablebase.probe.pagetable import PAGE_SHIFT
    from tablebase.probe.status import BLOCK_MISSING, FOUND, NOT_OPEN

    with tablebase.open(db3_international) as full:
        want = full.probe_wdl("W:WK38:B4,18")
    tb = tablebase.open(db3_international, wdl_only=True, cache=TINY)
    v, c, part = tb.variant, tb.cache, tb._wdl
    p = Position.from_fen("W:WK38:B4,18", v)
    assert not has_capture(p)
    pos = (p.white_to_move, p.white_men, p.white_kings, p.black_men, p.black_kings)
    s = parse_slice("0120")

    def look() -> tuple[int, int]:
        return result_quick(part.table, c.arena, c.stamps, v.neighbours, v.rule_fields, pos)

    assert look() == (NOT_OPEN, s.code)
    tb._open(part, s)
    status, at = look()
    first = int(part.table[s.code]) >> PAGE_SHIFT
    assert status == BLOCK_MISSING
    assert first <= at >> (PAGE_SHIFT + 2) < first + part.sources[s.code].blocks
    assert part.one(at >> (PAGE_SHIFT + 2), look) == (FOUND, want)
    tb.close()
