"""Scan itself as the judge of bitbase files: start it on a folder of them, read its values.

Scan reads ``scan.ini`` and ``data/`` from its working folder, so :func:`scan_folder` makes
a working folder beside a copy of the binary: its ``scan.ini`` (the variant, ``bb-size``, no
opening book), its evaluation files, and ``data/bb<suffix>`` linked to the bitbases to try.

- :func:`hub_start` starts it as a Hub engine and sends ``init``: Scan loads every file of
  up to ``bb-size`` pieces then, and exits naming the first file that is missing or decodes
  to another length than its index, or answers ``ready``.
- :func:`scan_values` reads the values through Scan's own probing code. In its terminal
  mode Scan prints every position it shows with the result of its bitbase probe
  (``white to play, bitbase win``): that is ``bb::probe``, the function its search calls
  (captures played out, then the stored value read). A position is set with ``fen``; a
  Frisian position with king runs is reached by playing the moves that make them, after
  which Scan shows the position again, its runs counted by Scan.
- :func:`sample_lines` draws such lines: random positions of the index and random moves
  from them.

Scan is GPL-3 software, not part of this project: it is only run here, as a separate
program, never linked or copied.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from tablebase.rules import Move, legal_moves, play
from tablebase.rules.position import NO_RUNS, Position
from tablebase.rules.variants import Variant
from tablebase.scanbb.files import bb_folder
from tablebase.scanbb.index import position_of_entry, scan_ids

SCAN_VARIANT = {"international": "normal", "frisian": "frisian"}  # Scan's name of each
RESULT_OF_TEXT = {"win": 1, "draw": 0, "loss": -1}
TIMEOUT = 600  # seconds for one session of Scan
START_TIMEOUT = 300  # seconds for Scan to load its bitbases


class ScanEngineError(RuntimeError):
    """Scan refused its start-up, stopped, or answered something unexpected."""


def scan_folder(binary: Path | str, work: Path, variant: Variant, root: Path, bb_size: int) -> Path:
    """A working folder for Scan in ``work`` (created): the binary, ``scan.ini`` for
    ``variant`` with ``bb-size`` ``bb_size`` and no book, the evaluation files beside the
    binary, and ``data/bb<suffix>`` linked to the folder of that name under ``root``."""
    binary = Path(binary).resolve()
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, work / "scan")
    data = work / "data"
    data.mkdir(exist_ok=True)
    for f in (binary.parent / "data").glob("eval*"):
        target = data / f.name
        if not target.exists():
            os.symlink(f.resolve(), target)
    link = data / bb_folder(variant)
    if link.is_symlink() or link.exists():
        link.unlink()
    os.symlink((Path(root) / bb_folder(variant)).resolve(), link)
    (work / "scan.ini").write_text(
        f"variant = {SCAN_VARIANT[variant.name]}\nbook = false\nthreads = 1\n"
        f"tt-size = 20\nbb-size = {bb_size}\n"
    )
    return work


def hub_start(folder: Path, timeout: float = START_TIMEOUT) -> list[str]:
    """Start Scan as a Hub engine in ``folder``, send ``hub`` and ``init`` (which loads the
    bitbases), then ``quit`` once it answers ``ready``; Scan's lines. Raises
    :class:`ScanEngineError` with Scan's own message when it does not answer ``ready``.

    Scan reports a bad file on stderr and calls ``exit`` from its main thread; if its input
    thread is then waiting to hand over a line, that exit never returns (the input's
    condition variable is destroyed under a waiter). So nothing is sent after ``init``
    before ``ready``, and Scan is killed once it has written to stderr, or at ``timeout``.
    """
    proc = subprocess.Popen(
        ["./scan", "hub"], cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    errors: list[str] = []
    stderr = proc.stderr

    def watch_stderr() -> None:
        for text in stderr:
            errors.append(text.strip())
            proc.kill()  # Scan writes to stderr only when it stops

    threading.Thread(target=watch_stderr, daemon=True).start()
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    lines: list[str] = []
    try:
        proc.stdin.write("hub\ninit\n")
        proc.stdin.flush()
        for text in proc.stdout:
            lines.append(text.rstrip("\n"))
            if lines[-1] == "ready":
                proc.stdin.write("quit\n")
                proc.stdin.flush()
                break
        proc.wait(timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        pass
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    if "ready" not in lines:
        detail = errors or lines
        raise ScanEngineError(
            f"Scan did not start (exit {proc.returncode}): "
            + (detail[-1] if detail else "no answer")
        )
    return lines


@dataclass(frozen=True)
class Line:
    """What Scan is shown: a FEN (Scan's own form, colours' lists), then moves to play in it
    (``32-28``, ``29x18x23`` with the captured squares)."""

    fen: str
    moves: tuple[str, ...] = ()


def scan_values(folder: Path, lines: list[Line]) -> list[list[int | None]]:
    """For each line, the result Scan's bitbases give (+1 win, 0 draw, -1 loss for the side
    to move; None: Scan shows no bitbase value, the game being over or the position
    outside its bitbases) of the FEN's position and of the position after each move."""
    commands = ["0"]  # both sides played by hand: Scan never searches here
    for line in lines:
        commands.append(f"fen {line.fen}")
        commands.extend(line.moves)
    # no "q": Scan stops at the end of its input, its input thread done by then (see
    # hub_start on exiting while that thread waits)
    r = subprocess.run(
        ["./scan"], cwd=folder, input="\n".join(commands) + "\n", capture_output=True,
        text=True, timeout=TIMEOUT,
    )  # fmt: skip
    shown: list[int | None | str] = []
    for text in r.stdout.splitlines():
        t = text.strip()
        if t.endswith("to play") or " to play, bitbase " in t or t.endswith("wins #"):
            value = t.rsplit(" ", 1)[-1] if ", bitbase " in t else None
            shown.append(RESULT_OF_TEXT[value] if value else None)
        elif t in ("bad FEN", "illegal move", "???"):
            shown.append(t)
    if not shown:
        raise ScanEngineError(f"Scan showed nothing (exit {r.returncode}): {r.stderr.strip()}")
    shown = shown[1:]  # the start position, shown before any command
    out: list[list[int | None]] = []
    k = 0
    for line in lines:
        values: list[int | None] = []
        for what in (line.fen, *line.moves):
            if k >= len(shown):
                raise ScanEngineError(f"Scan stopped before {what!r} (exit {r.returncode})")
            v = shown[k]
            k += 1
            if isinstance(v, str):
                raise ScanEngineError(f"Scan answered {v!r} to {what!r} (in {line.fen})")
            values.append(v)
        out.append(values)
    return out


def move_text(move: Move) -> str:
    """A move as Scan's terminal reads it: ``32-28``, or ``from x to`` followed by ``x`` and
    each captured square (which picks one capture where several share their ends)."""
    if not move.captures:
        return f"{move.frm}-{move.to}"
    return f"{move.frm}x{move.to}" + "".join(f"x{c}" for c in move.captures)


def sample_lines(
    variant: Variant, pieces: int, n: int, rng: random.Random, plies: int = 4
) -> list[tuple[Line, list[Position]]]:
    """``n`` lines for :func:`scan_values` with the positions they show: each starts at a
    random entry of a random id of 2..``pieces`` pieces (a position without runs, either side
    to move, whose side to move has a move) and plays up to ``plies`` random legal moves, so
    that Frisian runs arise as they do in play."""
    ids = scan_ids(pieces)
    out: list[tuple[Line, list[Position]]] = []
    while len(out) < n:
        sid = rng.choice(ids)
        pos = position_of_entry(variant, sid, rng.randrange(sid.size(variant)))
        if pos is None:
            continue
        pos = pos.with_runs(NO_RUNS)
        if rng.random() < 0.5:
            pos = pos.flipped()
        if not legal_moves(pos):
            continue
        shown = [pos]
        moves: list[str] = []
        for _ in range(plies):
            legal = legal_moves(shown[-1])
            if not legal:
                break
            move = rng.choice(legal)
            after = play(shown[-1], move)
            if not legal_moves(after):  # Scan shows the game's end, not a bitbase value
                break
            moves.append(move_text(move))
            shown.append(after)
        out.append((Line(pos.fen(), tuple(moves)), shown))
    return out
