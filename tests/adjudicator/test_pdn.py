"""Tests for adjudicator.pdn: the streaming PDN reader and the writer."""

from __future__ import annotations

import io
import pickle
import tracemalloc
from pathlib import Path

import pytest

from adjudicator.pdn import (
    FIRST,
    SECOND,
    PdnError,
    PdnGame,
    PdnMove,
    format_tags,
    read_games,
    write_game,
    write_games,
)

DATA_PDN = Path(__file__).resolve().parents[1] / "data" / "pdn"


def pdn_file(name: str) -> Path:
    """A file of tests/data/pdn; a missing one fails the test (never a skip)."""
    path = DATA_PDN / name
    assert path.is_file(), f"test data file missing: {path}"
    return path


def games_of(text: str, **options) -> list[PdnGame]:
    return list(read_games(io.StringIO(text), name="t.pdn", **options))


def one_game(text: str) -> PdnGame:
    games = games_of(text)
    assert len(games) == 1
    return games[0]


def move_ids(game: PdnGame) -> list[tuple[int, str, str]]:
    return [(m.number, m.side, m.text) for m in game.moves]


def error_of(text: str, **options) -> PdnError:
    with pytest.raises(PdnError) as caught:
        games_of(text, **options)
    return caught.value


# ----------------------------------------------------------------------- the real files


def test_wk2003_reads_all_23_games():
    games = list(read_games(pdn_file("wk2003.pdn")))
    assert len(games) == 23
    assert [g.index for g in games] == list(range(1, 24))
    assert all(g.error is None and g.game_type == 20 for g in games)
    assert all(g.result_token == g.tags["Result"] for g in games)
    assert sum(g.result_token == "1/2-1/2" for g in games) == 17


def test_wk2003_first_game():
    game = next(read_games(pdn_file("wk2003.pdn")))
    assert game.line == 1
    assert list(game.tags) == [
        "Event", "Date", "Site", "White", "Black", "Result", "Round", "GameType",
    ]  # fmt: skip
    assert game.tags["White"] == "Ndjofang, J.M."
    assert game.tags["Site"] == "Zwartewaterland, Netherlands"
    assert game.fen is None
    assert len(game.moves) == 80
    first, second = game.moves[:2]
    assert (first.number, first.side, first.text, first.squares) == (1, FIRST, "32-28", (32, 28))
    assert (first.line, first.col, first.ply, first.is_capture) == (10, 4, 0, False)
    assert (second.number, second.side, second.text, second.ply) == (1, SECOND, "17-22", 1)
    last = game.moves[-1]
    assert (last.number, last.side, last.text, last.is_capture) == (40, SECOND, "17x8", True)
    assert (last.line, last.col, last.ply) == (19, 59, 79)
    assert game.result_token == "1/2-1/2"  # alone on the next line


def test_wk2003_later_games():
    games = list(read_games(pdn_file("wk2003.pdn")))
    fourth = games[3]
    assert (fourth.line, fourth.tags["White"], fourth.result_token) == (72, "Weitsman,V.", "0-1")
    assert move_ids(fourth)[-1] == (48, SECOND, "12-17")
    tenth = games[9]
    assert tenth.tags["Black"] == "Boezjinski,E."
    assert len(tenth.moves) == 143
    assert move_ids(tenth)[-1] == (72, FIRST, "28x44")
    assert games[-1].line == 559


def test_oca_reads_all_43_english_games():
    games = list(read_games(pdn_file("OCA_2.0.pdn")))
    assert len(games) == 43
    assert all(g.error is None and g.game_type is None for g in games)
    assert all(g.result_token == g.tags["Result"] for g in games)
    first = games[0]
    assert first.tags["Event"] == "Manchester 1841"
    assert move_ids(first)[:2] == [(1, FIRST, "11-15"), (1, SECOND, "24-20")]
    last = first.moves[-1]
    assert (last.number, last.side, last.text) == (22, SECOND, "26x17x10x1")
    assert last.squares == (26, 17, 10, 1) and last.is_capture
    assert (last.line, last.col) == (11, 1)
    assert first.result_token == "0-1"
    assert games[-1].tags["Event"] == "Newcastle 1849, game 8"
    assert move_ids(games[-1])[-1] == (24, FIRST, "16-19")


def test_bad_nested_comment_gives_a_precise_error():
    path = pdn_file("bad-nested-comment.pdn")
    with pytest.raises(PdnError) as caught:
        list(read_games(path))
    error = caught.value
    assert "nested comment" in str(error)
    assert (error.line, error.col, error.game) == (1, 34, 1)
    assert error.file == str(path)
    assert str(error).startswith(f"{path}:1:34: game 1: nested comment")


def test_bad_nested_comment_collected_keeps_the_moves_read():
    (game,) = read_games(pdn_file("bad-nested-comment.pdn"), errors="collect")
    assert game.error is not None and "nested comment" in game.error.message
    assert [m.text for m in game.moves] == ["33-29", "19-23", "35-30"]


# ------------------------------------------------------------------------------ the tokens


def test_tag_values_keep_escaped_quotes_and_backslashes():
    game = one_game('[Event "The \\"Big\\" One"]\n[Site "C:\\\\dam"]\n1. 32-28 *\n')
    assert game.tags == {"Event": 'The "Big" One', "Site": "C:\\dam"}


def test_game_type_with_options_and_fen_passed_through():
    game = one_game('[GameType "20,W,10,10,N2,0"]\n[FEN "W:W31,32:B1,K10."]\n*\n')
    assert game.game_type == 20
    assert game.fen == "W:W31,32:B1,K10."
    assert one_game('[GameType "x"]\n*').game_type is None


def test_variations_are_skipped_even_nested():
    text = "1. 32-28 (1. 33-29 19-23 (1... 18-23 {c} 2-0) 2. 39-33) 17-22 2. 28x17 11x22 2-0"
    game = one_game(text)
    assert move_ids(game) == [
        (1, FIRST, "32-28"), (1, SECOND, "17-22"), (2, FIRST, "28x17"), (2, SECOND, "11x22"),
    ]  # fmt: skip
    assert [m.ply for m in game.moves] == [0, 1, 2, 3]
    assert game.result_token == "2-0"


def test_variation_over_several_lines():
    game = one_game("1. 32-28 (1. 33-29\n19-23\n2. 39-33) 17-22 *")
    assert [m.text for m in game.moves] == ["32-28", "17-22"]


def test_spaced_moves_are_joined():
    game = one_game("1. 32-28 1-  7 2. 37 - 32 7 x 18 *")
    assert [m.text for m in game.moves] == ["32-28", "1-7", "37-32", "7x18"]
    assert game.moves[1].squares == (1, 7)
    assert game.moves[1].col == 10


def test_colon_and_capital_x_are_captures():
    game = one_game("1. 32-28 19:28 2. 26:37:48 7X18 *")
    assert [m.text for m in game.moves] == ["32-28", "19x28", "26x37x48", "7x18"]
    assert game.moves[2].squares == (26, 37, 48)
    assert all(m.is_capture for m in game.moves[1:])


def test_nags_and_strength_marks_are_dropped():
    game = one_game("1. 32-28! $1 17-22?? 2. 28x17 (!) 11x22!? $14 3. 33-28+ ?! 22-27# 1-1")
    assert [m.text for m in game.moves] == ["32-28", "17-22", "28x17", "11x22", "33-28", "22-27"]
    assert game.result_token == "1-1"


@pytest.mark.parametrize("token", ["2-0", "1-1", "0-2", "1-0", "0-1", "1/2-1/2", "0-0", "*"])
def test_every_result_token_ends_the_game(token):
    game = one_game(f"1. 32-28 17-22 {token}")
    assert game.result_token == token
    assert len(game.moves) == 2


def test_moves_that_look_like_results():
    game = one_game("1. 1-10 10-1 2. 1-12 2-0")
    assert [m.text for m in game.moves] == ["1-10", "10-1", "1-12"]
    assert game.result_token == "2-0"
    assert one_game("1. 32-28 1 - 0").result_token == "1-0"


def test_comments_escape_lines_and_rest_of_line_comments():
    text = (
        "% an escape line: 1. 99-98 {\n"
        '[Event "e"]\n'
        "{a comment\nover [two] lines 2-0} 1. 32-28 ; 1-0 ignored {\n"
        "17-22 {short} 2. 28x17 *\n"
    )
    game = one_game(text)
    assert [m.text for m in game.moves] == ["32-28", "17-22", "28x17"]
    assert (game.moves[1].line, game.moves[1].col) == (5, 1)
    assert game.result_token == "*"


def test_numbers_glued_to_moves_and_second_player_numbers():
    game = one_game("12.32-28 17-22 13...22-27 14. ... 27-31 15.33-28 *")
    assert move_ids(game) == [
        (12, FIRST, "32-28"), (12, SECOND, "17-22"), (13, SECOND, "22-27"),
        (14, SECOND, "27-31"), (15, FIRST, "33-28"),
    ]  # fmt: skip


def test_sides_alternate_without_numbers():
    game = one_game('[FEN "B:W31-50:B1-20"]\n1... 17-22 32-28 22-27 31x22 *')
    assert move_ids(game) == [
        (1, SECOND, "17-22"), (2, FIRST, "32-28"), (2, SECOND, "22-27"), (3, FIRST, "31x22"),
    ]  # fmt: skip
    assert move_ids(one_game("32-28 17-22 33-29 *"))[-1] == (2, FIRST, "33-29")


def test_line_breaks_anywhere_between_tokens():
    game = one_game('[Event "e"]\n1.\n32-28\n17-22\n2.\n28x17\n\n*\n')
    assert move_ids(game) == [(1, FIRST, "32-28"), (1, SECOND, "17-22"), (2, FIRST, "28x17")]
    assert game.moves[2].line == 6


def test_crlf_and_byte_order_mark():
    game = one_game('\ufeff[Event "e"]\r\n1. 32-28 17-22 \r\n2-0\r\n')
    assert game.tags == {"Event": "e"}
    assert game.result_token == "2-0"


def test_non_breaking_space_counts_as_space():
    assert [m.text for m in one_game("1.\xa032-28\xa017-22 *").moves] == ["32-28", "17-22"]


# ------------------------------------------------------------------------ game boundaries


def test_next_tag_section_ends_a_game_without_result():
    games = games_of('[Event "a"]\n1. 32-28 17-22\n[Event "b"]\n1. 33-28 *\n')
    assert [g.tags["Event"] for g in games] == ["a", "b"]
    assert games[0].result_token is None and games[0].error is None
    assert (games[1].index, games[1].line) == (2, 3)


def test_games_with_tags_but_no_moves():
    games = games_of('[Event "a"]\n[Result "*"]\n\n[Event "b"]\n[Result "2-0"]\n\n')
    assert [(g.tags["Event"], g.moves, g.error) for g in games] == [
        ("a", [], None),
        ("b", [], None),
    ]


def test_games_without_tags_on_one_line():
    games = games_of("1. 32-28 17-22 2-0 1. 33-28 0-2\n")
    assert [(g.index, move_ids(g)[0], g.result_token) for g in games] == [
        (1, (1, FIRST, "32-28"), "2-0"),
        (2, (1, FIRST, "33-28"), "0-2"),
    ]


def test_empty_input():
    assert games_of("") == []
    assert games_of("\n\n  \n") == []


# ---------------------------------------------------------------------------------- errors


def test_error_message_names_file_line_column_and_game():
    error = error_of('[Event "a"]\n1. 32-28 *\n[Event "b"]\n1. 33-28 & 17-22 *\n')
    assert (error.file, error.line, error.col, error.game) == ("t.pdn", 4, 10, 2)
    assert str(error) == "t.pdn:4:10: game 2: unexpected character '&'"


@pytest.mark.parametrize(
    ("text", "message", "line", "col"),
    [
        ("1. 32-28 {a {b} } *", "nested comment", 1, 13),
        ("1. 32-28 {a\nb { c} *", "nested comment", 2, 3),
        ("1. 32-28 ) 17-22 *", "unbalanced ')'", 1, 10),
        ('[Event "a]\n*', "unterminated tag", 1, 1),
        ("[Event a]\n*", "malformed tag", 1, 1),
        ('[Event "a" b]\n*', "malformed tag", 1, 1),
        ("1. 32-28 17", "incomplete move '17'", 1, 10),
        ("1. 32-28 {a comment\nthat never ends", "unterminated comment starting here", 1, 10),
        ("1. 32-28 (1. 33-29\n17-22", "unterminated variation starting here", 1, 10),
    ],
)
def test_malformed_text_gives_a_precise_error(text, message, line, col):
    error = error_of(text)
    assert message in error.message
    assert (error.line, error.col, error.game) == (line, col, 1)


def test_truncated_file_yields_complete_games_then_errors(tmp_path):
    text = pdn_file("wk2003.pdn").read_text()
    cut = text.index("30. 39", text.index("Erdenebileg"))  # inside game 5's movetext
    for end, message in [(cut + 4, "unexpected end of file"), (cut + 6, "incomplete move '39'")]:
        path = tmp_path / "cut.pdn"
        path.write_text(text[:end])
        reader = read_games(path, strict=True)
        assert [next(reader).index for _ in range(4)] == [1, 2, 3, 4]
        with pytest.raises(PdnError) as caught:
            next(reader)
        assert (caught.value.game, caught.value.line) == (5, 113)
        assert message in str(caught.value)
        games = list(read_games(path, errors="collect", strict=True))
        assert len(games) == 5 and games[4].error is not None
        assert move_ids(games[4])[-1] == (29, SECOND, "23x34")


def test_truncated_inside_a_tag():
    error = error_of('[Event "a"]\n1. 32-28 *\n\n[Event "b"]\n[Site "Zwartewa')
    assert (error.message, error.line, error.col, error.game) == ("unterminated tag", 5, 1, 2)


def test_collect_reads_the_other_games():
    text = (
        '[Event "a"]\n1. 32-28 17-22 2-0\n\n'
        '[Event "b"]\n1. 32-28 17-22 2. 28x17 &11x22\n3. 33-28 1-1\n\n'
        '[Event "c"]\n1. 33-29 0-2\n'
    )
    games = games_of(text, errors="collect")
    assert [(g.index, g.tags["Event"]) for g in games] == [(1, "a"), (2, "b"), (3, "c")]
    assert games[0].error is None and games[2].error is None
    bad = games[1]
    assert bad.error is not None and (bad.error.line, bad.error.col) == (5, 25)
    assert [m.text for m in bad.moves] == ["32-28", "17-22", "28x17"]
    assert move_ids(games[2]) == [(1, FIRST, "33-29")]


def test_collect_skips_the_rest_of_a_broken_tag_section():
    text = '[Event "a"\n[Site "s"]\n1. 32-28 *\n\n[Event "b"]\n1. 33-28 *\n'
    games = games_of(text, errors="collect")
    assert [g.index for g in games] == [1, 2]
    assert games[0].error is not None and games[0].error.message == "unterminated tag"
    assert games[1].tags == {"Event": "b"} and games[1].error is None


def test_unclosed_comment_stops_at_the_next_tag_section():
    text = '[Event "a"]\n1. 32-28 {oops\n17-22 2-0\n\n[Event "b"]\n1. 33-28 *\n'
    games = games_of(text, errors="collect")
    assert [g.tags["Event"] for g in games] == ["a", "b"]
    error = games[0].error
    assert error is not None and "unterminated comment" in error.message
    assert (error.line, error.col) == (2, 10)
    assert games[1].error is None and [m.text for m in games[1].moves] == ["33-28"]
    with pytest.raises(PdnError, match="t.pdn:2:10: game 1: unterminated comment"):
        games_of(text)


def test_unclosed_variation_stops_at_the_next_tag_section():
    games = games_of('1. 32-28 (17-22\n[Event "b"]\n1. 33-28 *\n', errors="collect")
    assert len(games) == 2
    assert games[0].error is not None and "unterminated variation" in games[0].error.message
    assert games[1].tags == {"Event": "b"}


def test_errors_option_is_checked():
    with pytest.raises(ValueError):
        games_of("*", errors="ignore")


def test_pdn_error_survives_pickling():
    error = error_of("1. 32-28 & *")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.file, copy.line, copy.col, copy.game, str(copy)) == (
        error.file, error.line, error.col, error.game, str(error),
    )  # fmt: skip


# ------------------------------------------------------------------------------- streaming


class SynthesizedPdn(io.TextIOBase):
    """A large PDN file made up on demand, counting the characters handed to the reader."""

    name = "synth.pdn"

    def __init__(self, games: int) -> None:
        self.games = games
        self.chars_read = 0
        self._lines = self._generate()

    def _generate(self):
        for i in range(self.games):
            yield f'[Event "synthetic {i + 1}"]\n'
            yield '[GameType "20"]\n\n'
            for n in range(1, 21):
                yield f"{n}. 32-28 17-22 {n}... 28x17 11x22\n"
            yield "1-1\n\n"

    def readable(self) -> bool:
        return True

    def readline(self, size: int = -1) -> str:
        line = next(self._lines, "")
        self.chars_read += len(line)
        return line


def test_games_are_yielded_before_the_file_is_read():
    source = SynthesizedPdn(100_000)  # about 60 MB if it were ever read whole
    reader = read_games(source)
    first = next(reader)
    assert first.tags["Event"] == "synthetic 1" and len(first.moves) == 80
    assert source.chars_read < 2_000
    second = next(reader)
    assert second.index == 2 and source.chars_read < 4_000


def test_reading_a_large_stream_takes_constant_memory():
    source = SynthesizedPdn(400)
    tracemalloc.start()
    try:
        count = sum(1 for _ in read_games(source))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 400
    assert source.chars_read > 250_000
    # One game and the parser's state (measured: about 40 kB), never the whole stream.
    assert peak < 100_000, f"peak {peak} bytes: the stream seems to be held in memory"


def test_reads_stdin_like_and_binary_files(tmp_path):
    text = pdn_file("OCA_2.0.pdn").read_text()
    assert len(list(read_games(io.StringIO(text)))) == 43
    assert len(list(read_games(io.BytesIO(text.encode())))) == 43
    with pdn_file("OCA_2.0.pdn").open() as handle:
        assert len(list(read_games(handle))) == 43
    error = error_of("1. 32-28 &")
    assert error.file == "t.pdn"
    with pytest.raises(PdnError, match=r"^<stream>:1:10:"):
        list(read_games(io.StringIO("1. 32-28 &")))


# --------------------------------------------------------------------------------- writing


def test_format_tags_escapes():
    assert format_tags({"Event": 'a "b" \\ c', "Round": "1"}) == (
        '[Event "a \\"b\\" \\\\ c"]\n[Round "1"]\n'
    )


def test_write_game_layout_and_result():
    game = next(read_games(pdn_file("wk2003.pdn")))
    text = write_game(game, "2-0")
    head, body = text.split("\n\n")
    assert '[Result "2-0"]' in head and '[Result "1/2-1/2"]' not in head
    assert body.startswith("1. 32-28 17-22 2. 28x17 12x21 3. ")
    assert body.split()[-3:] == ["40.", "23x12", "17x8"][1:] + ["2-0"]
    assert all(len(line) <= 80 for line in body.splitlines())
    assert write_game(game).split()[-2:] == ["17x8", "1/2-1/2"]
    with pytest.raises(ValueError):
        write_game(game, "3-0")


def test_write_game_starting_with_the_second_player():
    game = one_game('[FEN "B:W31-50:B1-20"]\n1... 17-22 2. 32-28 22-27 *')
    assert write_game(game).split("\n\n")[1] == "1... 17-22 2. 32-28 22-27 *\n"
    built = PdnGame(moves=[PdnMove(7, SECOND, "17-22")])
    assert write_game(built) == "7... 17-22 *\n"


@pytest.mark.parametrize("name", ["wk2003.pdn", "OCA_2.0.pdn"])
def test_round_trip(name):
    games = list(read_games(pdn_file(name)))
    out = io.StringIO()
    assert write_games(games, out) == len(games)
    again = list(read_games(io.StringIO(out.getvalue())))
    assert len(again) == len(games)
    for before, after in zip(games, again, strict=True):
        assert after.tags == before.tags
        assert move_ids(after) == move_ids(before)
        assert [m.squares for m in after.moves] == [m.squares for m in before.moves]
        assert after.result_token == before.result_token


def test_round_trip_of_quirky_text():
    text = '[Event "q \\"x\\""]\n12.32-28 (33-29) 1-  7 {c} 13. 26:37:48 $3 7X18! 1-1'
    game = one_game(text)
    again = one_game(write_game(game))
    assert again.tags == game.tags and move_ids(again) == move_ids(game)
    assert again.result_token == "1-1"
