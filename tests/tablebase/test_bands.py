"""Out-of-core solving by bands of men configurations (:mod:`tablebase.solve.bands`,
:mod:`tablebase.build.outofcore`): the same values as the in-memory solve on every pair of
three and four pieces with men, in every variant with the men solver, cut into several
bands; the task under a cap that the in-memory solve does not fit writes the same files;
a pair that does not fit the cap even out of core is refused before anything starts."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from tablebase.build import outofcore
from tablebase.build import task as generator
from tablebase.material.index import BINOM
from tablebase.material.slices import build_pairs, parse_slice
from tablebase.rules.variants import BRAZILIAN, ENGLISH, FRISIAN, INTERNATIONAL, RUSSIAN, Variant
from tablebase.solve import bands, men
from tablebase.storage.slicefile import slice_path
from tests.conftest import session_database, tablebase_cli
from tests.tablebase.conftest import same_table

VARIANTS = (ENGLISH, INTERNATIONAL, RUSSIAN, BRAZILIAN)


def men_pairs(variant: Variant) -> list:
    """The pairs of three and four pieces that the men solver takes."""
    return [p for p in build_pairs(4) if sum(tuple(p[0])) >= 3 and generator.by_men(variant, p)]


def groups_of(variant: Variant, pair) -> np.ndarray:
    counts = np.array(tuple(pair[0]), dtype=np.int64)
    return men.config_order(variant.squares, variant.per_row, counts, BINOM)[1]


def solved_by_bands(variant, pair, deps, band_configs):
    """The values of both slices of ``pair`` solved by bands of ``band_configs``, each part
    held as raw values in memory, and the plan."""
    p = bands.plan(variant, pair, band_configs)
    threads = lambda: generator.pass_threads(2)  # noqa: E731
    white, black = bands.solve_bands(variant, pair, p, deps.vals, deps.offsets, threads)
    mirror = np.zeros_like(black)
    bands.mirror_values(variant, pair, black, mirror, 0, len(p.order), 2)
    return white, mirror, p


@pytest.mark.parametrize(
    "variant",
    # every variant in the slow tier (English alone took 150 s of the quick tier; issue 51)
    [pytest.param(v, marks=pytest.mark.slow) for v in VARIANTS],
    ids=lambda v: v.name,
)
def test_every_pair_by_bands_equals_the_in_memory_solve(tmp_path_factory, variant) -> None:
    """Every pair of three and four pieces with men that the men solver takes, cut into
    bands of half its largest group (so that some groups are two bands and more): both
    slices' values equal those of the in-memory solve from the same dependencies."""
    db = session_database(tmp_path_factory, variant.name, 4)
    pairs = men_pairs(variant)
    assert len(pairs) >= 4
    for pair in pairs:
        deps = generator.dependency_tables(db, variant, pair)
        whole = generator.solve_tables(variant, pair, deps, 2)
        groups = groups_of(variant, pair)
        size = max(1, int(np.diff(groups).max()) // 2)
        white, mirror, p = solved_by_bands(variant, pair, deps, size)
        assert len(p.bands) > len(groups) - 1, pair  # some group cut into several bands
        name = "+".join(s.name for s in pair)
        np.testing.assert_array_equal(white, whole.view(pair[0]), err_msg=name)
        np.testing.assert_array_equal(mirror, whole.view(pair[1]), err_msg=name)


def test_a_band_reads_only_configurations_one_step_more_advanced() -> None:
    """English 1011+1110, the configuration of white man rank 7 and black man rank 20:
    what its band reads is exactly the configurations one quiet step of either man away
    (promotions leave the pair), found here by moving each man by hand."""
    from tablebase.material.index import men_rank, unrank_colex

    variant = ENGLISH
    pair = (parse_slice("1011"), parse_slice("1110"))
    counts = np.array(tuple(pair[0]), dtype=np.int64)
    nsq, width = variant.squares, variant.per_row
    a = nsq - width
    n_bm = int(BINOM[a, 1])
    r = 7 * n_bm + 20  # white man of rank 7, black man of rank 20
    got = bands.reached_configs(nsq, width, variant.neighbours, counts, BINOM, np.array([r]))
    wm = int(unrank_colex(np.int64(7), 1, a, BINOM)) << width
    bm = int(unrank_colex(np.int64(20), 1, a, BINOM))
    assert wm & bm == 0
    want = set()
    for white, movers, dirs in ((True, wm, (0, 1)), (False, bm, (2, 3))):
        f = movers.bit_length() - 1
        for d in dirs:
            t = int(variant.neighbours[f, d])
            if t < 0 or (wm | bm) >> t & 1:
                continue
            if white and t < width or not white and t >= nsq - width:
                continue  # a promotion leaves the pair
            w2, b2 = (wm ^ (1 << f) ^ (1 << t), bm) if white else (wm, bm ^ (1 << f) ^ (1 << t))
            want.add(int(men_rank(nsq, width, np.uint64(w2), np.uint64(b2), 1, BINOM)))
    assert set(got.tolist()) == want and len(want) >= 2


PAIR = ("1021", "2110")  # English, 4 pieces, solved by men configurations


@pytest.fixture
def english4_without_pair(tmp_path_factory, tmp_path) -> tuple[Path, Path]:
    """The English 2-4 database, and a copy of it without PAIR's files."""
    src = session_database(tmp_path_factory, "english", 4)
    db = tmp_path / "english"
    shutil.copytree(src, db)
    for name in PAIR:
        (db / f"{name}.h5").unlink()
    return src, db


@pytest.mark.slow  # over 30 s in the quick tier (issue 51): CI's slow tier runs it
def test_task_under_a_cap_solves_by_bands_and_writes_the_same_files(
    english4_without_pair, monkeypatch, caplog
) -> None:
    """The pair task with a cap one byte below its in-memory estimate solves by bands
    (cut to 400 configurations at most) and writes the same tables as the in-memory build;
    the scratch folder is gone afterwards and the log counts the bands."""
    src, db = english4_without_pair
    pair = tuple(parse_slice(n) for n in PAIR)
    cap = generator.pair_memory(ENGLISH, pair, db) - 1
    assert generator.out_of_core(ENGLISH, pair, cap, db)
    monkeypatch.setenv(outofcore.BAND_CONFIGS_ENV, "400")
    nbands = len(outofcore.choose_plan(ENGLISH, pair, cap).bands)
    assert nbands > 10
    with caplog.at_level(logging.INFO, logger="tablebase"):
        report = generator.run_pair_task("english", PAIR, str(db), 2, memory=cap)
    assert not report.skipped
    for s in pair:
        assert same_table(slice_path(src, s), slice_path(db, s)), s.name
    assert not (db / outofcore.FOLDER).exists()
    assert f"band {nbands} of {nbands} solved" in caplog.text


@pytest.mark.slow  # over 30 s in the quick tier (issue 51): CI's slow tier runs it
def test_slices_that_are_their_own_mirror_by_bands_equal_the_in_memory_solve(
    tmp_path_factory,
) -> None:
    """English 1010, 2020 and 1111, each its own mirror (a pair of one, which the in-memory
    passes solve whole): by bands of 50 configurations, the white-to-move part equals the
    in-memory values, and the black-to-move part, mirrored, equals it too."""
    db = session_database(tmp_path_factory, "english", 4)
    for name in ("1010", "2020", "1111"):
        pair = (parse_slice(name),)
        assert men.solvable(ENGLISH, pair) and not generator.by_men(ENGLISH, pair)
        deps = generator.dependency_tables(db, ENGLISH, pair)
        whole = generator.solve_tables(ENGLISH, pair, deps, 2)
        white, mirror, p = solved_by_bands(ENGLISH, pair, deps, 50)
        assert len(p.bands) > len(groups_of(ENGLISH, pair)) - 1, name  # a group cut in bands
        np.testing.assert_array_equal(white, whole.view(pair[0]), err_msg=name)
        np.testing.assert_array_equal(mirror, white, err_msg=name)


@pytest.mark.slow  # over 29 s in the quick tier (issue 51): CI's slow tier runs it
def test_an_own_mirror_slice_under_a_cap_is_written_out_of_core(
    tmp_path_factory, tmp_path, monkeypatch
) -> None:
    """``1111`` (English, its own mirror) with a cap below its in-memory task: solved by
    bands of 100 configurations, its two parts checked against each other, the same table
    written as by the in-memory build; a black-to-move part that disagrees (one value
    changed before the end) is refused, naming the entry, and nothing is written."""
    src = session_database(tmp_path_factory, "english", 4)
    db = tmp_path / "english"
    shutil.copytree(src, db)
    (db / "1111.h5").unlink()
    pair = (parse_slice("1111"),)
    cap = generator.pair_memory(ENGLISH, pair, db) - 1
    assert generator.out_of_core(ENGLISH, pair, cap, db)
    monkeypatch.setenv(outofcore.BAND_CONFIGS_ENV, "100")
    report = generator.run_pair_task("english", ("1111",), str(db), 2, memory=cap)
    assert not report.skipped and len(report.stats) == 1
    assert same_table(slice_path(src, pair[0]), slice_path(db, pair[0]))

    (db / "1111.h5").unlink()
    real = outofcore.Scratch.mirror

    def spoiled(self, threads):
        real(self, threads)
        m = np.memmap(self.folder / "mirror.u16", dtype=bands.RAW_DTYPE, mode="r+")
        m[12345] ^= 1
        m.flush()

    monkeypatch.setattr(outofcore.Scratch, "mirror", spoiled)
    with pytest.raises(outofcore.OwnMirrorError, match="1111: entry 12345 is"):
        generator.run_pair_task("english", ("1111",), str(db), 2, memory=cap)
    assert not (db / "1111.h5").exists()


def test_a_pair_solved_whole_in_memory_goes_out_of_core_by_men_under_a_cap(
    english4_without_pair, monkeypatch
) -> None:
    """A pair the in-memory solve takes whole (here: the king placements per configuration
    limit lowered below PAIR's 29, as for the largest flying-king configurations) can still
    be solved by men: under a cap below its in-memory task it goes out of core by bands and
    writes the same tables as the whole-pair build."""
    src, db = english4_without_pair
    pair = tuple(parse_slice(n) for n in PAIR)
    monkeypatch.setattr(men, "MAX_KING_ENTRIES", men.MIN_KING_ENTRIES)
    assert not generator.by_men(ENGLISH, pair) and men.solvable(ENGLISH, pair)
    cap = generator.pair_memory(ENGLISH, pair, db) - 1
    assert generator.out_of_core(ENGLISH, pair, cap, db)
    monkeypatch.setenv(outofcore.BAND_CONFIGS_ENV, "400")
    report = generator.run_pair_task("english", PAIR, str(db), 2, memory=cap)
    assert not report.skipped
    for s in pair:
        assert same_table(slice_path(src, s), slice_path(db, s)), s.name


def test_a_pair_of_men_only_is_solved_whole_with_its_dependencies_mapped_under_a_cap() -> None:
    """International 3040+4030 (seven men, one entry per configuration, 2.1 G configurations)
    under 20 GiB: by bands, its plan alone (16 bytes a configuration) would need more than
    the whole pair in memory (27.5 GiB, most of it its dependencies, 7-piece slices with a
    king among them), so it is solved whole with its dependencies mapped: its state words
    and the writing, 8.7 GiB; 1221+2112 (44 king placements and more per configuration)
    goes out of core by bands under 4 GiB."""
    cap = 20 << 30
    men_only = (parse_slice("3040"), parse_slice("4030"))
    whole = generator.pair_memory(INTERNATIONAL, men_only)
    assert whole > cap
    assert outofcore.least_memory(INTERNATIONAL, men_only) > whole
    assert generator.task_mode(INTERNATIONAL, men_only, cap) == generator.MAPPED
    mapped = generator.planned_memory(INTERNATIONAL, men_only, cap)
    assert mapped == generator.mapped_memory(INTERNATIONAL, men_only)
    assert 8 << 30 < mapped < 9 << 30
    six = (parse_slice("1221"), parse_slice("2112"))
    assert generator.task_mode(INTERNATIONAL, six, 4 << 30) == generator.BY_BANDS


@pytest.mark.slow  # over 30 s in the quick tier (issue 51): CI's slow tier runs it
def test_a_pair_whose_bands_outweigh_it_writes_the_same_files_with_dependencies_mapped(
    tmp_path_factory, tmp_path, caplog
) -> None:
    """English 1030+3010 (men only) under a cap one byte below its in-memory task: solved
    whole with its dependencies' values in a file of the scratch folder, mapped; the same
    tables as the in-memory build, and the scratch folder gone afterwards."""
    src = session_database(tmp_path_factory, "english", 4)
    db = tmp_path / "english"
    shutil.copytree(src, db)
    names = ("1030", "3010")
    for name in names:
        (db / f"{name}.h5").unlink()
    pair = tuple(parse_slice(n) for n in names)
    cap = generator.pair_memory(ENGLISH, pair, db) - 1
    assert generator.task_mode(ENGLISH, pair, cap, db) == generator.MAPPED
    with caplog.at_level(logging.INFO, logger="tablebase"):
        report = generator.run_pair_task("english", names, str(db), 2, memory=cap)
    assert not report.skipped
    assert "1030+3010: solved whole, its dependencies mapped from disk" in caplog.text
    for s in pair:
        assert same_table(slice_path(src, s), slice_path(db, s)), s.name
    assert not (db / outofcore.FOLDER).exists()


@pytest.mark.slow
def test_frisian_pairs_under_a_cap_are_solved_with_dependencies_mapped_to_the_same_files(
    tmp_path_factory, tmp_path
) -> None:
    """Frisian has king runs, so no pair is solved by men configurations or by bands: each
    four-piece pair with men whose task a cap one byte below its in-memory estimate sends
    out of core is solved whole with its dependencies mapped, and writes the same tables
    as the in-memory build; among them pairs whose slices have king runs (a side with a
    king and a man), and 1111, its own mirror."""
    src = session_database(tmp_path_factory, "frisian", 4)
    db = tmp_path / "frisian"
    shutil.copytree(src, db)
    mapped = []
    for pair in build_pairs(4):
        if pair[0].pieces < 4 or pair[0].men == 0:
            continue
        assert not men.solvable(FRISIAN, pair)
        cap = generator.pair_memory(FRISIAN, pair, db) - 1
        if generator.task_mode(FRISIAN, pair, cap, db) == generator.MAPPED:
            mapped.append((pair, cap))
    names = {"+".join(s.name for s in pair) for pair, _ in mapped}
    assert {"1021+2110", "1120+2011", "1111"} <= names
    assert any(s.run_states(FRISIAN) != (1, 1) for pair, _ in mapped for s in pair)
    for pair, _ in mapped:
        for s in pair:
            slice_path(db, s).unlink()
    for pair, cap in mapped:  # in build order: later pairs read the files of earlier ones
        report = generator.run_pair_task("frisian", tuple(s.name for s in pair), str(db), 2, cap)
        assert not report.skipped
        for s in pair:
            assert same_table(slice_path(src, s), slice_path(db, s)), s.name
    assert not (db / outofcore.FOLDER).exists()


def test_the_plan_counts_what_each_band_reads_as_the_band_finds_it() -> None:
    """The plan counts each band's reads with a stamp per configuration; the band, when it is
    solved, finds them again by sorting its men's steps (:meth:`Plan.reads`): the counts
    agree on International 2111+1121 cut into bands of 50 configurations, and each band
    reads only configurations of the group before."""
    pair = (parse_slice("2111"), parse_slice("1121"))
    p = bands.plan(INTERNATIONAL, pair, 50)
    assert len(p.bands) > 50
    positions = np.empty(len(p.order), dtype=np.int64)
    positions[p.order] = np.arange(len(p.order))
    starts = {b.group: b.start for b in reversed(p.bands)}
    for b in p.bands:
        reads = p.reads(b)
        assert len(reads) == b.n_reads, b.number
        if b.group == 0:
            assert b.n_reads == 0
        else:
            assert np.all((positions[reads] >= starts[b.group - 1]) & (positions[reads] < b.start))


def test_a_build_shows_the_bands_of_a_pair_out_of_core(
    english4_without_pair, monkeypatch, caplog
) -> None:
    """A local build of PAIR under a cap that sends it out of core, in bands of 400
    configurations: the build's progress hears of every band from the worker process, in
    order, the last saying all bands are done; the bar shows them beside the pair's name."""
    import io
    import sys

    from tablebase.build.progress import TerminalProgress
    from tablebase.build.schedule import LocalScheduler, graph_for_pairs

    _, db = english4_without_pair
    pair = tuple(parse_slice(n) for n in PAIR)
    cap = generator.pair_memory(ENGLISH, pair, db) - 1
    monkeypatch.setenv(outofcore.BAND_CONFIGS_ENV, "400")
    nbands = len(outofcore.choose_plan(ENGLISH, pair, cap).bands)
    monkeypatch.setattr(sys, "stderr", io.StringIO())

    class Recorded(TerminalProgress):
        def band(self, label: str, done: int, total: int) -> None:
            super().band(label, done, total)
            heard.append((label, done, total, self.bar.postfix))

    heard: list = []
    with caplog.at_level(logging.INFO, logger="tablebase"):  # the CLI's level
        LocalScheduler(jobs=1, threads=2, memory=cap).run(
            ENGLISH, graph_for_pairs(ENGLISH, [pair]), str(db), Recorded(slices_total=2)
        )
    label = "+".join(PAIR)
    assert [h[:3] for h in heard] == [(label, k, nbands) for k in range(1, nbands + 1)]
    assert heard[-1][3] == f"running {label} (bands {nbands}/{nbands})"


def test_a_complete_pair_loses_the_scratch_folder_a_kill_left(english4_without_pair) -> None:
    """A build killed after a pair's files were written, before its scratch folder was
    removed: the rerun finds the pair complete and removes the folder (and ``.bands``)."""
    src, db = english4_without_pair
    for name in PAIR:
        shutil.copy(src / f"{name}.h5", db / f"{name}.h5")
    pair = tuple(parse_slice(n) for n in PAIR)
    left = outofcore.scratch_folder(db, pair)
    left.mkdir(parents=True)
    (left / "band-0.u16").write_bytes(b"\0" * 64)
    report = generator.run_pair_task("english", PAIR, str(db), 1, memory=1 << 30)
    assert report.skipped
    assert not (db / outofcore.FOLDER).exists()


def test_a_pair_over_the_cap_even_out_of_core_is_refused_before_it_starts(
    english4_without_pair,
) -> None:
    """``generate --material 1021 --memory 200M``: the pair's in-memory task (256 MiB of
    interpreter and libraries alone) and its out-of-core task by bands of one configuration
    exceed the cap; the build stops before any worker starts with one line naming the least
    memory it needs, and writes nothing."""
    _, db = english4_without_pair
    pair = tuple(parse_slice(n) for n in PAIR)
    least = generator.planned_memory(ENGLISH, pair, 200 << 20)  # the way that needs least
    assert least <= outofcore.least_memory(ENGLISH, pair)
    r = tablebase_cli(
        "generate", "--variant", "english", "--material", "1021", "--memory", "200M",
        "--db", str(db), check=False,
    )  # fmt: skip
    assert r.returncode != 0
    lines = [x for x in r.stderr.splitlines() if "INFO" not in x and x.strip()]
    assert len(lines) == 1, r.stderr  # besides the log's line naming the build
    need = f"{least / (1 << 20):.1f} MiB"
    want = f"error: slice pair 1021+2110 needs an estimated {need} even out of core"
    assert lines[0].startswith(want), lines[0]
    assert lines[0].endswith(
        "more than the memory budget of 200.0 MiB (--memory); nothing was started"
    )
    assert "Traceback" not in r.stderr
    assert not (db / "1021.h5").exists() and not (db / outofcore.FOLDER).exists()


@pytest.mark.slow  # 8-30 s in the quick tier (issue 51): CI's slow tier runs it
def test_a_build_killed_in_the_middle_of_a_pair_resumes_by_band(tmp_path_factory, tmp_path) -> None:
    """English 1011+1110 solved out of core in bands of 10 configurations (about 80 bands):
    the build is killed (``kill -9`` of its process group) once the scratch folder holds the
    records of three bands solved; the rerun keeps at least those bands (the log says how
    many of how many), solves the rest and writes the same tables as the in-memory build,
    and the scratch folder is gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    src = session_database(tmp_path_factory, "english", 4)
    db = tmp_path / "english"
    shutil.copytree(src, db)
    names = ("1011", "1110")
    pair = tuple(parse_slice(n) for n in names)
    for s in pair:
        slice_path(db, s).unlink()
    cap = generator.pair_memory(ENGLISH, pair, db) - 1
    env = dict(os.environ, **{outofcore.BAND_CONFIGS_ENV: "10"})
    nbands = len(bands.plan(ENGLISH, pair, 10).bands)
    assert nbands > 20
    cmd = [
        sys.executable, "-m", "tablebase.cli", "generate", "--variant", "english",
        "--material", "1011", "--memory", str(cap), "--db", str(db), "--jobs", "1",
    ]  # fmt: skip
    folder = outofcore.scratch_folder(db, pair)
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )

    def bands_done() -> int:
        return len(outofcore.band_records(folder)) if folder.exists() else 0

    deadline = time.monotonic() + 600
    while bands_done() < 3:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = bands_done()
    assert 3 <= killed_at < nbands
    assert not slice_path(db, pair[0]).exists()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import re

    kept = re.search(rf"1011\+1110: (\d+) of {nbands} bands kept from an earlier run", r.stderr)
    assert kept is not None, r.stderr
    assert int(kept.group(1)) >= killed_at
    assert f"band {nbands} of {nbands} solved" in r.stderr
    for s in pair:
        assert same_table(slice_path(src, s), slice_path(db, s)), s.name
    assert not (db / outofcore.FOLDER).exists()


def _solve_band_in_process(db: str, names, band_configs: int, number: int, barrier) -> None:
    """In a process of its own: band ``number`` of English ``names`` solved into the
    scratch folder of ``db`` once every process is ready (``barrier``)."""
    pair = tuple(parse_slice(n) for n in names)
    p = bands.plan(ENGLISH, pair, band_configs)
    scr = outofcore.Scratch(Path(db), ENGLISH, pair, p, False)
    barrier.wait()
    outofcore.solve_one(scr, p.bands[number], lambda: generator.pass_threads(1))


@pytest.mark.slow  # over 29 s in the quick tier (issue 51): CI's slow tier runs it
def test_two_bands_of_a_group_solved_at_once_write_the_values_of_the_sequential_solve(
    tmp_path_factory, tmp_path
) -> None:
    """English 1011+1110 in bands of 10 configurations: the groups before one of several
    bands solved into the scratch folder, then two bands of that group solved by two
    processes at once (each its own files in the one folder): each band file holds the
    values the in-memory solve of every band in order gives its configurations, and each
    record's digest is its file's."""
    import multiprocessing as mp

    db = tmp_path / "english"
    shutil.copytree(session_database(tmp_path_factory, "english", 3), db)
    names = ("1011", "1110")
    pair = tuple(parse_slice(n) for n in names)
    p = bands.plan(ENGLISH, pair, 10)
    group = next(g for g in p.groups() if len(g) >= 2 and g[0].group > 0)
    scr, kept = outofcore.open_scratch(db, ENGLISH, pair, p, False)
    assert not kept
    for band in p.bands[: group[0].number]:
        outofcore.solve_one(scr, band, lambda: generator.pass_threads(1))
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [
        ctx.Process(target=_solve_band_in_process, args=(str(db), names, 10, b.number, barrier))
        for b in group[:2]
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    deps = generator.dependency_tables(db, ENGLISH, pair)
    threads = lambda: generator.pass_threads(1)  # noqa: E731
    white, black = bands.solve_bands(ENGLISH, pair, p, deps.vals, deps.offsets, threads)
    for band in group[:2]:
        own = p.order[band.start : band.stop]
        want = np.concatenate([white.reshape(-1, p.kk)[own], black.reshape(-1, p.kk)[own]])
        got = np.array(scr.band_values(band))
        np.testing.assert_array_equal(got, want.ravel(), err_msg=str(band.number))
        assert scr.record(band) is not None and scr.verified(band)
    assert not list(scr.folder.glob("*.tmp"))
