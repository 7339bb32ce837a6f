"""Perft speed of our move generator against other engines, one line per engine.

    python scripts/bench_movegen.py [--variant international] [--depth 8] [--slow-depth 6]
                                    [--repeat 3]

Numba compilation (or loading its cache) is timed on its own and excluded from the figures.
Each engine counts the variant's start position to ``--depth`` plies (pure-Python peers
to ``--slow-depth``); the best of ``--repeat`` runs is reported as nodes per second, with the
ratio to our engine. Peers that are not installed are reported as such. International is
compared with dame-rs and py-draughts' turbo perft; Russian, Brazilian and Frisian with
py-draughts' boards (``draughts.boards.<variant>``, counted by push/pop recursion; its
Frisian board lists each route of a capture, so its node counts run a little higher).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

START = "W:W31-50:B1-20"  # International; other variants start from their own position


def best_of(repeat: int, count: Callable[[], int]) -> tuple[int, float]:
    """(nodes, best wall time in seconds) over ``repeat`` runs."""
    best = float("inf")
    nodes = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        nodes = count()
        best = min(best, time.perf_counter() - t0)
    return nodes, best


def ours(depth: int, variant: str = "international") -> Callable[[], int]:
    from tablebase.rules import perftcount
    from tablebase.rules.movebuffer import new_move_buffer, new_workspace
    from tablebase.rules.position import Position

    pos = Position.start(variant)
    v = pos.variant
    own_m, own_k, opp_m, opp_k = pos.side_boards
    stack = new_move_buffer(depth + 1)
    ws = new_workspace()

    def count() -> int:
        return int(perftcount.perft(v.rules, True, (own_m, own_k, opp_m, opp_k), depth, stack, ws))

    return count


def dame_rs(depth: int) -> Callable[[], int]:
    import dame

    board = dame.Board(START)
    return lambda: dame.perft(board, depth)


def py_draughts(depth: int) -> Callable[[], int]:
    from draughts import StandardBoard
    from draughts.engines.turbo import perft_from_board

    board = StandardBoard.from_fen(START)
    return lambda: perft_from_board(board, depth)


def py_draughts_board(variant: str) -> Callable[[int], Callable[[], int]]:
    """py-draughts' Russian or Brazilian board, counted by push/pop recursion (bulk at 1)."""

    def make(depth: int) -> Callable[[], int]:
        import importlib

        board = importlib.import_module(f"draughts.boards.{variant}").Board()

        def count(d: int) -> int:
            moves = list(board.legal_moves)
            if d == 1:
                return len(moves)
            total = 0
            for m in moves:
                board.push(m)
                total += count(d - 1)
                board.pop()
            return total

        return lambda: count(depth)

    return make


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variant",
        default="international",
        choices=["international", "russian", "brazilian", "frisian"],
        help="rule set (start position and peers)",
    )
    parser.add_argument("--depth", type=int, default=8, help="plies for compiled engines")
    parser.add_argument("--slow-depth", type=int, default=6, help="plies for pure-Python peers")
    parser.add_argument("--repeat", type=int, default=3, help="runs per engine (best kept)")
    args = parser.parse_args()

    t0 = time.perf_counter()
    ours(2, args.variant)()  # imports, compiles or loads the numba cache
    print(
        f"numba warm-up (compile or cache load, excluded below): {time.perf_counter() - t0:.2f} s"
    )

    if args.variant == "international":
        engines = [
            ("ours (numba)", ours, args.depth),
            ("dame-rs (Rust)", dame_rs, args.depth),
            ("py-draughts turbo (Python)", py_draughts, args.slow_depth),
        ]
    else:
        engines = [
            ("ours (numba)", lambda d: ours(d, args.variant), args.depth),
            ("py-draughts board (Python)", py_draughts_board(args.variant), args.slow_depth),
        ]
    print(f"variant {args.variant}")
    base = None
    for name, make, depth in engines:
        try:
            count = make(depth)
        except ImportError as e:
            print(f"{name:28s} not installed ({e.name})")
            continue
        nodes, seconds = best_of(args.repeat if depth >= args.depth else 1, count)
        rate = nodes / seconds
        if base is None:
            base = rate
        print(
            f"{name:28s} depth {depth}  {nodes:>12,d} nodes  {seconds:8.3f} s  "
            f"{rate:>14,.0f} nodes/s  ratio to ours {rate / base:6.2f}"
        )


if __name__ == "__main__":
    main()
