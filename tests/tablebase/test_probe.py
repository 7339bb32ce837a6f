"""The prober API and the probe / stats / verify commands."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import tablebase
from tablebase.probe.database import decode
from tablebase.rules import legal_moves, play
from tablebase.rules.position import Position

CLI = [sys.executable, "-m", "tablebase.cli"]


def test_open_is_a_context_manager(db3_international) -> None:
    with tablebase.open(db3_international) as tb:
        assert tb.variant.name == "international"
        assert tb.probe_wdl("W:WK42:B22") == 1
        assert tb.probe_dtw("W:WK42:B22") == 7
        assert tb.probe_dtw("W:WK47:BK4") is None


def test_best_moves_agree_with_successor_probes(db3_international) -> None:
    with tablebase.open(db3_international) as tb:
        pos = Position.from_fen("W:W33:B2")
        best = tb.best_moves(pos)
        assert [m.result for m in best][0] == "win"
        assert best[0].dtw == 17
        for mv in best:
            wdl, dtw = tb.probe(play(pos, mv.move))
            assert mv.result == {1: "loss", 0: "draw", -1: "win"}[wdl]
            assert mv.dtw == (None if dtw is None else dtw + 1)
        assert {m.move for m in best} == set(legal_moves(pos))


def test_batch_probe_equals_single_probes(db3_international) -> None:
    rng = np.random.default_rng(1)
    fens = []
    with tablebase.open(db3_international) as tb:
        for _ in range(300):
            sq = rng.choice(np.arange(1, 51), 3, replace=False)
            kinds = rng.integers(0, 4, 3)
            boards = [0, 0, 0, 0]
            for s, k in zip(sq, kinds, strict=True):
                if k == 0 and s <= 5:
                    k = 1
                if k == 2 and s >= 46:
                    k = 3
                boards[k] |= 1 << int(s - 1)
            if not (boards[0] | boards[1]) or not (boards[2] | boards[3]):
                continue
            fens.append(Position(*boards, bool(rng.integers(0, 2))))
        arr = [
            np.array([getattr(p, f) for p in fens], dtype=np.uint64)
            for f in ("white_men", "white_kings", "black_men", "black_kings")
        ]
        wtm = np.array([p.white_to_move for p in fens])
        got = tb.probe_batch(*arr, wtm)
        for p, byte in zip(fens, got, strict=True):
            assert decode(int(byte)) == tb.probe(p)


def test_probe_cli_json(db3_international) -> None:
    r = subprocess.run(
        [*CLI, "probe", "--db", str(db3_international), "--json", "--moves", "W:WK42:B22", "-"],
        input="W:WK47:BK4\n",
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[0]["fen"] == "W:WK42:B22"
    assert lines[0]["result"] == "win" and lines[0]["dtw"] == 7
    assert lines[0]["moves"][0] == {"move": lines[0]["moves"][0]["move"], "result": "win", "dtw": 7}
    assert lines[1] == {
        "fen": "W:WK47:BK4",
        "result": "draw",
        "dtw": None,
        "moves": lines[1]["moves"],
    }
    bad = subprocess.run(
        [*CLI, "probe", "--db", str(db3_international), "W:W3:B1"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "promotion row" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_stats_and_verify_cli(db3_international) -> None:
    r = subprocess.run(
        [*CLI, "stats", "--db", str(db3_international), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = {json.loads(x)["material"]: json.loads(x) for x in r.stdout.splitlines()}
    assert rows["1010"]["longest_win"] == 17
    assert rows["1010"]["wins"] + rows["1010"]["draws"] + rows["1010"]["losses"] == 1985
    r = subprocess.run(
        [*CLI, "verify", "--db", str(db3_international), "--sample", "500"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "INCONSISTENT" not in r.stdout


def test_material_beyond_slice_codes_is_missing_not_wrapped(db3_international) -> None:
    """Eight or more pieces of one kind must name the real slice, not a wrapped code."""
    import pytest

    from tablebase.probe.database import MissingSliceError

    with tablebase.open(db3_international) as tb:
        for fen, name in [
            ("W:W31-38:B1", "8010"),
            ("W:W31-39:B1", "9010"),
            ("W:W31-50:B1-20", "200200"),
        ]:
            with pytest.raises(MissingSliceError) as e:
                tb.probe(fen)
            assert e.value.slice == name
        pos = Position.from_fen("W:W31-38:B1")
        arr = [
            np.array([getattr(pos, f)], dtype=np.uint64)
            for f in ("white_men", "white_kings", "black_men", "black_kings")
        ]
        with pytest.raises(MissingSliceError, match="8010"):
            tb.probe_batch(*arr)
