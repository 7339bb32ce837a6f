"""Engines as their users run them: the ``--engine`` spec in both shapes, the Hub options
checked against the parameters an engine declares, its folder, and Frisian over Hub (the
engine told ``variant=frisian``, the game refereed by the Frisian rules)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from match_books import FAKES, PYTHON, book_engine, entries, line_of

from adjudicator.cli import main
from adjudicator.match.enginespec import SpecError, parse_spec
from adjudicator.match.hub import Param, check_options
from adjudicator.match.schedule import build
from adjudicator.pdn import read_games
from tablebase.rules import Position
from tablebase.rules.variants import FRISIAN


def test_the_short_forms_still_read():
    assert parse_spec("dxp:127.0.0.1:27531").ports == (27531,)
    assert parse_spec("dxp:localhost:27531,27532").ports == (27531, 27532)
    assert parse_spec("dxp-listen:4000").port == 4000
    hub = parse_spec("hub:./scan hub")
    assert (hub.kind, hub.args, hub.dir, hub.options) == ("hub", ("./scan", "hub"), None, ())


def test_the_long_form_in_cutechess_shape(tmp_path):
    (tmp_path / "scan").write_text("")
    spec = parse_spec(
        f"name=Scan cmd=./scan arg=hub dir={tmp_path} proto=hub option.book=false "
        "option.tt-size=20 depth=6"
    )
    assert spec.kind == "hub" and spec.name == "Scan"
    assert spec.args == (str(tmp_path / "scan"), "hub")  # ./scan in its folder, no shell
    assert spec.dir == str(tmp_path)
    assert spec.options == (("book", "false"), ("tt-size", "20"))
    assert spec.depth == 6
    dxp = parse_spec("proto=dxp host=10.0.0.2 port=27531,27532 name=Moby")
    assert (dxp.kind, dxp.host, dxp.ports, dxp.name) == ("dxp", "10.0.0.2", (27531, 27532), "Moby")
    assert parse_spec("cmd=scan arg=hub").args == ("scan", "hub")  # found on the PATH


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cmd=x bogus=1", "unknown key 'bogus'"),
        ("cmd=x proto=uci", "proto must be hub, dxp or dxp-listen"),
        ("proto=hub arg=hub", "a Hub engine needs cmd=PROGRAM"),
        ("cmd=x dir=/no/such/folder", "dir=/no/such/folder is not a folder"),
        ("proto=dxp port=1 option.a=b", "DXP has no engine options"),
        ("proto=dxp cmd=moby port=1", "the referee does not start DXP engines"),
        ("proto=dxp", "needs port="),
        ("dxp:h:1,1", "port 1 given twice"),
        ("dxp:h:99999", "not a port number"),
        ("cmd=x depth=0", "depth must be a whole number >= 1"),
        ("cmd=x name=a name=b", "name= given twice"),
        ("scan hub", "is not NAME=VALUE"),
        ("tcp:1:2", "unknown kind 'tcp'"),
    ],
)
def test_bad_specs_are_named(text, message):
    with pytest.raises(SpecError, match=message):
        parse_spec(text)


SCAN_PARAMS = [
    Param("variant", "normal", "enum", ("normal", "killer", "bt", "frisian", "losing")),
    Param("book", "true", "bool"),
    Param("tt-size", "24", "int", min="16", max="30"),
]


def test_options_are_checked_against_the_declared_parameters():
    check_options("Scan", SCAN_PARAMS, (("book", "false"), ("tt-size", "16")))
    with pytest.raises(ValueError, match=r"unknown option 'hash' \(its parameters: variant, "):
        check_options("Scan", SCAN_PARAMS, (("hash", "64"),))
    with pytest.raises(ValueError, match="book=yes: the value must be true or false"):
        check_options("Scan", SCAN_PARAMS, (("book", "yes"),))
    with pytest.raises(ValueError, match="tt-size=31: the value must be between 16 and 30"):
        check_options("Scan", SCAN_PARAMS, (("tt-size", "31"),))
    with pytest.raises(ValueError, match="variant=chess: the value must be one of normal,"):
        check_options("Scan", SCAN_PARAMS, (("variant", "chess"),))


def test_the_schedule_pairs_openings_with_both_colours():
    games = build(2, "match", 5, [2, 0, 1])
    assert [(p.number, p.white, p.black, p.opening) for p in games] == [
        (1, 0, 1, 2), (2, 1, 0, 2), (3, 0, 1, 0), (4, 1, 0, 0), (5, 0, 1, 1),
    ]  # fmt: skip
    robin = build(3, "roundrobin", 2, [0])
    assert [(p.white, p.black) for p in robin] == [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]
    assert len({p.encounter for p in robin}) == 3


PARAMS = ('name=variant value=normal type=enum values="normal frisian"',
          "name=hash value=16 type=int min=1 max=64")  # fmt: skip


def long_spec(tmp_path: Path, extra: str, log: Path | None = None) -> str:
    """A book engine in the long form: ``cmd=python arg=hub_book.py ...`` plus ``extra``."""
    book = tmp_path / "b.json"
    book.write_text("{}")
    spec = f"name=Booky cmd={PYTHON} arg={FAKES / 'hub_book.py'} arg=--book arg={book}"
    spec += " arg=--param 'arg=name=hash value=16 type=int min=1 max=64'"
    if log is not None:
        spec += f" arg=--log arg={log}"
    return f"{spec} {extra}"


def test_a_hub_engine_starts_in_its_folder_with_its_options(tmp_path):
    folder = tmp_path / "engine-home"
    folder.mkdir()
    log = tmp_path / "log.txt"
    spec = long_spec(tmp_path, f"dir={folder} option.hash=32", log)
    result = CliRunner().invoke(
        main, ["match", "--engine", spec, "--engine", spec, "--games", "1", "--time", "1"]
    )
    assert result.exit_code == 0, result.output
    lines = log.read_text().splitlines()
    assert f"cwd {folder}" in lines
    assert "set-param name=hash value=32" in lines
    assert lines.index("set-param name=hash value=32") < lines.index(f"cwd {folder}")


def test_an_unknown_option_stops_the_match_before_it_starts(tmp_path):
    spec = long_spec(tmp_path, "option.threads=2")
    pdn = tmp_path / "never.pdn"
    result = CliRunner().invoke(
        main, ["match", "--engine", spec, "--engine", spec, "--pdn", str(pdn)]
    )
    assert result.exit_code == 2
    assert "error: engine Booky: unknown option 'threads' (its parameters: hash)" in result.output
    assert "Traceback" not in result.output and not pdn.exists()


def test_a_frisian_match_over_hub_tells_the_variant_and_uses_the_frisian_rules(tmp_path):
    fen = "W:W46,47:B5,6"
    start = Position.from_fen(fen, FRISIAN)
    moves = line_of(start)
    log = tmp_path / "log.txt"
    hub = book_engine(tmp_path / "fr.json", entries(start, moves), "Fries", params=PARAMS, log=log)
    (tmp_path / "fr.txt").write_text(fen + "\n")
    pdn = tmp_path / "fr.pdn"
    result = CliRunner().invoke(
        main,
        ["match", "--variant", "frisian", "--engine", hub, "--engine", hub,
         "--openings", str(tmp_path / "fr.txt"), "--games", "1", "--pdn", str(pdn)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "set-param name=variant value=frisian" in log.read_text().splitlines()
    (game,) = read_games(str(pdn))
    assert game.tags["GameType"] == str(FRISIAN.game_type)
    # the whole book line was played and ended by a Frisian rule, not a resignation
    assert len(game.moves) == len(moves) and game.tags["Termination"] != "resignation"


def test_frisian_needs_an_engine_that_declares_it(tmp_path):
    plain = book_engine(tmp_path / "b.json", {}, "Plain")
    result = CliRunner().invoke(
        main, ["match", "--variant", "frisian", "--engine", plain, "--engine", plain]
    )
    assert result.exit_code == 2
    assert "declares no variant parameter, so it cannot be told to play frisian" in result.output
    result = CliRunner().invoke(
        main, ["match", "--variant", "frisian", "--engine", "dxp:h:1", "--engine", plain]
    )
    assert result.exit_code == 2 and "DXP carries International draughts only" in result.output


def test_dxp_engines_on_one_port_say_they_serve_one_game_at_a_time():
    from adjudicator.match.concurrency import port_notes

    specs = (parse_spec("dxp:127.0.0.1:27531"), parse_spec("dxp:127.0.0.1:27541,27542"))
    notes = port_notes(specs, 2)
    assert len(notes) == 1 and "engine 1 (dxp:127.0.0.1:27531) is DXP on 1 port" in notes[0]
    assert "at most 1 of its games run at once" in notes[0]
    assert port_notes(specs, 1) == []


def test_a_depth_is_sent_with_every_level_and_an_engine_s_own_depth_wins():
    from adjudicator.match.clock import Clock, TimeControl

    clock = Clock(TimeControl(minutes=1, depth=3))
    assert clock.level() == "level depth=3 time=60.000"
    assert clock.level(7) == "level depth=7 time=60.000"
    assert Clock(TimeControl(move_time=0.5)).level(2) == "level depth=2 move-time=0.5"
    assert Clock(TimeControl(minutes=1)).level() == "level time=60.000"
