"""Capture positions of slices that leave captures to the prober, resolved through the
positions after their captures (:func:`tablebase.rules.captures.capture_successors`, each
once): a level of the capture tree at a time (:mod:`tablebase.probe.database`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from tablebase.probe.locate import turned, white_view
from tablebase.probe.status import MUST_CAPTURE
from tablebase.rules.captures import capture_successors
from tablebase.rules.movebuffer import new_successor_buffer_nb, new_workspace_nb


@njit(cache=True, inline="always")
def _room(a, need):
    """``a`` if it holds ``need`` items, else a copy at least twice as long."""
    if a.shape[0] >= need:
        return a
    out = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True)
def expand_captures(rules, wtm, wm, wk, bm, bk):
    """The positions after each legal capture of the positions given (each must capture),
    white to move (``kwm, kwk, kbm, kbk``), with ``owner`` (the position they follow), and
    ``best`` per position: 1 where a capture takes the opponent's last piece (won; its
    other captures are left out), else -1 (a capture position has a move: at least lost)."""
    nsq = rules.nsq
    n = wm.shape[0]
    cap = max(16, 4 * n)
    kids = [np.empty(cap, dtype=np.uint64) for _ in range(4)]
    kwm, kwk, kbm, kbk = kids[0], kids[1], kids[2], kids[3]
    owner = np.empty(cap, dtype=np.int64)
    best = np.full(n, -1, dtype=np.int8)
    succ = new_successor_buffer_nb()
    ws = new_workspace_nb()
    count = 0
    for j in range(n):
        a, b, c, d = white_view(nsq, wtm[j], wm[j], wk[j], bm[j], bk[j])
        m = capture_successors(rules, True, a, b, c, d, succ, ws)
        start = count
        kwm = _room(kwm, count + m)
        kwk = _room(kwk, count + m)
        kbm = _room(kbm, count + m)
        kbk = _room(kbk, count + m)
        owner = _room(owner, count + m)
        for k in range(m):
            if (succ[k, 0] | succ[k, 1]) == 0:  # the opponent has no pieces left: won
                best[j] = 1
                count = start
                break
            kwm[count] = turned(succ[k, 0], nsq)
            kwk[count] = turned(succ[k, 1], nsq)
            kbm[count] = turned(succ[k, 2], nsq)
            kbk[count] = turned(succ[k, 3], nsq)
            owner[count] = j
            count += 1
    return kwm[:count], kwk[:count], kbm[:count], kbk[:count], owner[:count], best


@njit(cache=True)
def fold_results(best, owner, results):
    """``best[owner[k]]`` = the best, for its mover, of itself and ``-results[k]`` (the
    results of the positions after its captures), entries still to be resolved
    (:data:`~tablebase.probe.status.MUST_CAPTURE`) left out."""
    for k in range(owner.shape[0]):
        r = results[k]
        if r == MUST_CAPTURE:
            continue
        if -r > best[owner[k]]:
            best[owner[k]] = -r
