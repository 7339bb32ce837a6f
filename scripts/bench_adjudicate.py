"""Benchmark: replay games from PDN text with legality checks and all draw rules.

Generates random legal games (random playouts with our rules engine, half International, half
English, each stopped at its first terminal event under our draw rules or at --max-plies)
into a PDN file, then measures games per second replayed from that text:

- ours: ``adjudicator.rule_game`` (full legality checks, threefold, 25/16/5-move and 40-move
  rules) over every game, and over the International ones alone (to compare with dame-rs);
- the installed peers, in the same run, each with its own move parsing and draw rules, on the
  same games read by our PDN reader (the reading is included in every engine's time):
  ``dame`` (dame-rs, International only), py-draughts (``draughts.StandardBoard`` and
  ``AmericanBoard``) and pydraughts (``draughts.core.game.Game``). pydraughts and py-draughts
  both install a ``draughts`` package; when both are there, py-draughts owns
  ``draughts/__init__`` and pydraughts' ``draughts.core.game`` still imports, so both run.
  A peer that is not installed prints one line saying so. Slow peers stop after
  --peer-seconds; their rate is over the games they finished.

Every engine is measured ``--rounds`` times (default 3), the engines taking turns within each
round, and each line gives the engine's best round: on a shared machine the load of other
jobs comes and goes, and the best round is the least disturbed one of each engine alike.
One line per engine:

    python scripts/bench_adjudicate.py [--games 10000] [--max-plies 200] [--seed 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from adjudicator import RuleOptions, rule_game
from adjudicator.drawrules import DrawState
from adjudicator.pdn import PdnGame, PdnMove, read_games, write_game
from adjudicator.replay import terminal
from tablebase.rules import legal_moves, play
from tablebase.rules.notation import move_text
from tablebase.rules.position import Position
from tablebase.rules.variants import ENGLISH, INTERNATIONAL, Variant


def random_game(variant: Variant, rnd: random.Random, max_plies: int) -> tuple[list[str], str]:
    """A random playout: move texts and the PDN result (``*`` when cut at ``max_plies``)."""
    pos = Position.start(variant)
    state = DrawState(pos, RuleOptions())
    moves: list[str] = []
    while len(moves) < max_plies:
        legal = legal_moves(pos)
        move = rnd.choice(legal)
        moves.append(move_text(pos, move, legal))
        after = play(pos, move)
        draw = state.push(pos, move, after)
        pos = after
        if terminal(pos):
            return moves, variant.result_for(0 if pos.white_to_move else 2)
        if draw:
            return moves, variant.result_for(1)
    return moves, "*"


def corpus(path: Path, games: int, max_plies: int, seed: int) -> tuple[int, int]:
    """Write ``games`` random games to ``path``; return (games, plies)."""
    rnd = random.Random(seed)
    plies = 0
    with open(path, "w", encoding="utf-8") as out:
        for i in range(games):
            variant = INTERNATIONAL if i % 2 == 0 else ENGLISH
            moves, result = random_game(variant, rnd, max_plies)
            plies += len(moves)
            first = variant.white_moves_first
            pdn_moves = [
                PdnMove(ply // 2 + 1, "first" if ply % 2 == 0 else "second", t)
                for ply, t in enumerate(moves)
            ]
            tags = {
                "Event": f"random {i + 1}",
                "White": "rnd",
                "Black": "rnd",
                "Result": result,
                "GameType": str(variant.game_type),
            }
            del first
            out.write(write_game(PdnGame(i + 1, tags, pdn_moves, result), result) + "\n")
    return games, plies


def ours_replay(game: PdnGame, v: Variant) -> int:
    ruling = rule_game(game, variant=v)
    if ruling.is_error:
        raise SystemExit(f"our replay failed: {ruling.detail}")
    return ruling.ply


Replayer = Callable[[PdnGame, Variant], int]


def peer(path: Path, budget: float, replay_one: Replayer, variants: Iterable[Variant]):
    """Replay the games of ``variants`` with ``replay_one`` until ``budget`` seconds."""
    wanted = {v.game_type: v for v in variants}
    t = time.perf_counter()
    games = plies = 0
    for game in read_games(path):
        v = wanted.get(game.game_type)
        if v is None:
            continue
        plies += replay_one(game, v)
        games += 1
        if time.perf_counter() - t > budget:
            break
    return games, plies, time.perf_counter() - t


def mirrored(sq: int) -> int:
    """pydraughts and py-draughts number the English board from the other side."""
    return 33 - sq


def between(path: tuple[int, ...], v: Variant) -> set[int]:
    """Squares strictly between consecutive landing squares of a written capture path."""
    out: set[int] = set()
    for a, b in zip(path, path[1:], strict=False):
        (ra, ca), (rb, cb) = v.coords(a), v.coords(b)
        dr, dc = (rb > ra) - (rb < ra), (cb > ca) - (cb < ca)
        out.update(v.square_at(ra + k * dr, ca + k * dc) for k in range(1, abs(rb - ra)))
    return out


def dame_replay(game: PdnGame, v: Variant) -> int:
    import dame

    board = dame.Board()
    n = 0
    for m in game.moves:
        if m.text.count("x") > 1:  # a path: dame wants the captured squares, so match them
            jumped = between(m.squares, v)
            (move,) = [
                x
                for x in board.legal_moves
                if (x.from_square, x.to_square) == (m.squares[0], m.squares[-1])
                and set(x.captured) <= jumped
            ]
            board.push(move)
        else:
            board.push(m.text)
        n += 1
        if board.outcome() is not None:
            break
    return n


def pydraughts_board_replay(game: PdnGame, v: Variant) -> int:
    import draughts

    english = v is ENGLISH
    board = draughts.AmericanBoard() if english else draughts.StandardBoard()
    n = 0
    for m in game.moves:
        squares = [mirrored(s) for s in m.squares] if english else list(m.squares)
        board.push_uci(("x" if m.is_capture else "-").join(map(str, squares)))
        n += 1
        if board.game_over:
            break
    return n


def pydraughts_game_replay(game: PdnGame, v: Variant) -> int:
    from draughts.core.game import Game

    english = v is ENGLISH
    g = Game(variant="english" if english else "standard")
    n = 0
    for m in game.moves:
        squares = [mirrored(s) for s in m.squares] if english else list(m.squares)
        a, b = squares[0], squares[-1]
        steps = [s for s in g.legal_moves()[0] if s[0][0] == a and s[-1][1] == b]
        if len(squares) > 2:  # a path of landing squares
            steps = [s for s in steps if [s[0][0]] + [x[1] for x in s] == squares]
        if not steps:
            raise ValueError(f"pydraughts: {m.text} not legal")
        g.push(steps[0])
        n += 1
        if g.is_over():
            break
    return n


def available(check: Callable[[], object]) -> str | None:
    try:
        check()
    except Exception as error:  # noqa: BLE001 - any import failure means "not available"
        return f"{type(error).__name__}: {error}"
    return None


def _has_board() -> None:
    import draughts

    draughts.StandardBoard  # noqa: B018 - py-draughts' board class


def _has_game() -> None:
    from draughts.core.game import Game

    Game(variant="standard")


PEERS = [
    ("dame-rs (dame)", lambda: __import__("dame").Board(), dame_replay, (INTERNATIONAL,)),
    ("py-draughts (draughts)", _has_board, pydraughts_board_replay, (INTERNATIONAL, ENGLISH)),
    ("pydraughts (draughts.core)", _has_game, pydraughts_game_replay, (INTERNATIONAL, ENGLISH)),
]


def line(name: str, games: int, plies: int, seconds: float, note: str = "") -> str:
    return (
        f"{name:<28} {games:>6} games {plies:>9,} plies {seconds:>8.2f} s "
        f"{games / seconds:>9,.0f} games/s {plies / seconds:>11,.0f} plies/s{note}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=10_000)
    ap.add_argument("--max-plies", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--peer-seconds", type=float, default=30.0)
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="Measure every engine this many times, the engines taking turns within each "
        "round; each line is the engine's best round (a shared machine's load comes and goes).",
    )
    ap.add_argument("--out", type=Path, help="Keep the generated PDN file here.")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = args.out or Path(tmp) / "random.pdn"
        t = time.perf_counter()
        games, plies = corpus(path, args.games, args.max_plies, args.seed)
        print(
            f"corpus: {games} random games ({plies:,} plies, half International, half English) "
            f"generated in {time.perf_counter() - t:.1f} s; best of {args.rounds} rounds",
            flush=True,
        )
        both = (INTERNATIONAL, ENGLISH)
        peer(path, 5.0, ours_replay, both)  # warm the compiled code and caches
        cases = [
            ("ours (adjudicator)", ours_replay, variants, float("inf"))
            for variants in (both, (INTERNATIONAL,))
        ]
        for name, check, replay_one, variants in PEERS:
            missing = available(check)
            if missing:
                print(f"{name:<28} not available ({missing})", flush=True)
                continue
            cases.append((name, replay_one, variants, args.peer_seconds))
        best: dict[int, tuple[int, int, float]] = {}
        for _ in range(max(1, args.rounds)):
            for k, (_, replay_one, variants, budget) in enumerate(cases):
                g, p, sec = peer(path, budget, replay_one, variants)
                if k not in best or g / sec > best[k][0] / best[k][2]:
                    best[k] = (g, p, sec)
        for k, (name, _, variants, _) in enumerate(cases):
            scope = "+".join(v.name for v in variants)
            print(line(name, *best[k], f"  [{scope}]"), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
