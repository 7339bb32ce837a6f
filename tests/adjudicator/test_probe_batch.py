"""The batched probe path of ``/probe`` (issue 54) against the one-at-a-time probes, on
concrete positions of the 2-3 piece International database: ``Tablebase.probe_many`` (the
positions after each move, read in one batch) against ``Tablebase.probe`` of each; the
count-aware search, whose children are read a batch per node, against the same search over
a prober that reads one position at a time through ``probe_wdl`` and ``probe_dtw``; the
service's move rows against ``Tablebase.best_moves``; and the answer cache (a repeated
``/probe`` answered with the same bytes; answers with an unknown value not kept)."""

from __future__ import annotations

import pytest
from conftest import session_database
from fastapi.testclient import TestClient

from adjudicator.drawrules import RuleOptions
from adjudicator.service.answers import ENTRY_OVERHEAD, AnswerCache, split_budget
from adjudicator.service.app import create_app, final
from adjudicator.service.server import worker_settings
from adjudicator.service.service import Service
from adjudicator.service.settings import ServiceSettings
from tablebase.probe.cache import MIN_SLOTS, BlockCache
from tablebase.probe.database import MissingSliceError, Tablebase
from tablebase.rules import legal_moves, play
from tablebase.rules.countsearch import under_count
from tablebase.rules.position import Position
from tablebase.rules.variants import INTERNATIONAL
from tablebase.storage.chunkio import BLOCK_BYTES

# Positions of two and three pieces (men, kings, captures, a man about to crown, a capture
# of the last piece), and two of four pieces, outside the 2-3 piece database.
FENS = [
    "W:WK38:B4,18",
    "W:W33:B2",
    "B:WK1,K7:BK50",
    "W:WK46,K50:BK5",
    "W:W28:B23",
    "W:W10:BK46",
    "B:W6:B45,K50",
    "W:WK27:BK32",
    "B:W7,K44:BK5",
    "W:W11,12:B40,41",
]
MISSING = ("W:W11,12:B40,41",)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return session_database(tmp_path_factory, "international", 3)


def successors(fens: list[str] | tuple[str, ...]) -> list[Position]:
    """The positions after every move of every position of ``fens``."""
    out = []
    for fen in fens:
        pos = Position.from_fen(fen, INTERNATIONAL)
        out += [play(pos, m) for m in legal_moves(pos)]
    return out


def one_at_a_time(tb: Tablebase, pos: Position):
    try:
        return tb.probe(pos)
    except MissingSliceError:
        return None


@pytest.mark.parametrize("blocks", [None, MIN_SLOTS])
def test_probe_many_gives_what_each_probe_gives(db, blocks, monkeypatch):
    cache = BlockCache("64M" if blocks is None else blocks * BLOCK_BYTES)
    batches = []
    with Tablebase(db, cache=cache) as tb:
        real = tb.probe_batch

        def spy(*arrays):
            batches.append(arrays[0].shape[0])
            return real(*arrays)

        monkeypatch.setattr(tb, "probe_batch", spy)
        positions = successors([f for f in FENS if f not in MISSING])
        got = tb.probe_many(positions)
        with Tablebase(db, cache="64M") as alone:
            expected = [one_at_a_time(alone, p) for p in positions]
    assert None not in expected and got == expected
    assert {0, 1, -1} <= {v[0] for v in got if v is not None}
    assert 0 in {v[1] for v in got if v is not None}  # a capture of the last piece
    assert batches and max(batches) > 1  # the entries not cached, read as one batch


def test_probe_many_leaves_a_position_outside_the_tables_to_probe_alone(db):
    with Tablebase(db, cache="64M") as tb:
        assert tb.probe_many([]) == []
        inside = successors(FENS[:1])
        outside = successors(MISSING)
        got = tb.probe_many([*inside, *outside])
        assert got[len(inside) :] == [None] * len(outside)
        assert got[: len(inside)] == [tb.probe(p) for p in inside]
        with pytest.raises(MissingSliceError):
            tb.probe(outside[0])


class OneAtATime:
    """A prober that reads one position at a time through probe_wdl and probe_dtw (no
    ``probe``, no ``probe_many``): the search's sequential path."""

    def __init__(self, tb: Tablebase) -> None:
        self.tb = tb
        self.variant = tb.variant
        self.reads = 0

    def probe_wdl(self, pos: Position) -> int:
        self.reads += 1
        return self.tb.probe_wdl(pos)

    def probe_dtw(self, pos: Position) -> int | None:
        return self.tb.probe_dtw(pos)


def test_the_count_search_batched_gives_what_it_gives_one_at_a_time(db, monkeypatch):
    counter = RuleOptions().counter(INTERNATIONAL)
    differ = 0
    with Tablebase(db, cache="64M") as tb:
        batches = []
        real = tb.probe_many

        def spy(positions):
            batches.append(len(positions))
            return real(positions)

        monkeypatch.setattr(tb, "probe_many", spy)
        sequential = OneAtATime(tb)
        for fen in FENS:
            if fen in MISSING:
                continue
            pos = Position.from_fen(fen, INTERNATIONAL)
            values = set()
            for elapsed in (0, 3, 6, 8, 9):
                batched = under_count(tb, pos, counter, elapsed, shortcut=False)
                alone = under_count(sequential, pos, counter, elapsed, shortcut=False)
                assert batched == alone, (fen, elapsed)
                values.add((batched[1], tuple(batched[2])))
            differ += len(values) > 1
    assert sequential.reads > 0 and max(batches) > 1  # a node's children: one batch
    assert differ >= 1  # some value turns as the count runs: the search went deeper


def test_the_service_rows_are_the_values_of_best_moves(db):
    with Tablebase(db, cache="64M") as tb:
        service = Service({"international": db}, ServiceSettings(), BlockCache("64M"))
        try:
            for fen in FENS:
                if fen in MISSING:
                    continue
                rows = service.probe("international", fen)["moves"]
                best = tb.best_moves(fen)
                assert [(r["move"], r["result"], r["dtw"]) for r in rows] == [
                    (m.text, m.result, m.dtw) for m in best
                ], fen
        finally:
            service.close()


def test_a_repeated_probe_is_answered_with_the_same_bytes_from_the_cache(db):
    app = create_app({"international": db}, ServiceSettings(cache_bytes=64 << 20))
    with TestClient(app) as client:
        url = "/probe?variant=international&fen=W:WK38:B4,18&elapsed=3"
        first = client.get(url)
        answers: AnswerCache = app.state.answers
        assert (answers.hits, len(answers)) == (0, 1)
        second = client.get(url)
        assert answers.hits == 1
        assert second.status_code == first.status_code == 200
        assert second.content == first.content
        assert second.headers["content-type"] == first.headers["content-type"]
        assert client.get(url.replace("elapsed=3", "elapsed=4")).json()["count"]["elapsed"] == 4
        assert len(answers) == 2


def test_answers_with_an_unknown_value_are_not_final():
    known = {"result_under_count": "win", "moves": [{"result_under_count": "draw"}]}
    assert final(known)
    assert not final({**known, "result_under_count": "unknown"})
    assert not final({**known, "moves": [{"result_under_count": "unknown"}]})


def test_the_answer_cache_evicts_the_least_recently_used_past_its_bytes():
    cache = AnswerCache(3 * (100 + ENTRY_OVERHEAD))
    for k in "abc":
        cache.put(k, bytes(100))
    assert cache.get("a") == bytes(100)  # a is now the most recently used
    cache.put("d", bytes(100))
    assert cache.get("b") is None and cache.get("a") is not None
    assert len(cache) == 3 and cache.used <= cache.capacity
    cache.put("huge", bytes(cache.capacity))
    assert cache.get("huge") is None


def test_the_workers_share_the_memory_budget_and_the_connections():
    share = worker_settings(ServiceSettings(cache_bytes=100 << 20, max_connections=1000), 2)
    assert (share.cache_bytes, share.max_connections, share.workers) == (50 << 20, 500, 1)
    blocks, answers = split_budget(share.cache_bytes)
    assert blocks + answers == 50 << 20 and 0 < answers <= 16 << 20
    assert split_budget(MIN_SLOTS * BLOCK_BYTES) == (MIN_SLOTS * BLOCK_BYTES, 0)
