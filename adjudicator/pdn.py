"""Streaming PDN reader and writer.

Job: turn Portable Draughts Notation text into `PdnGame` values (tags, main-line moves, the
game-termination token), one game at a time, and write games back as PDN text. This module is
pure text: it checks no move for legality and knows no variant; the replay module does that
with the rules engine.

Reading is streaming: the input is consumed line by line and each game is yielded as soon as
it ends, so a file of any size is read in constant memory (plus one game). A line that is a
single tag pair, or only numbers, plain moves and results, takes a fast path (one regex match,
then `str.split`); any other line is cut into tokens by one compiled regular expression. The
only state carried from line to line is an open `{...}` comment, the variation depth, the
next move's number and side, and the current game.

What the reader accepts (the real-world quirks included):

- tag pairs `[Name "value"]` with `\\"` and `\\\\` escapes; a tag pair must fit on one line;
- move numbers `12.` (the first player of move 12 moves next) and `12...` (the second player),
  also glued to the move (`12.32-28`), spaced (`12 .`) or written `12-` before a move
  (`12- 32-28`); without numbers the two sides simply alternate;
- moves `32-28`, `19x28`, `26x37x48`, `19:28` (`:` is written back as `x`), with spaces around
  the separator (`1-  7`, `1 - 7`), strength marks (`!`, `??`, `(!)`...) and `+`/`#`;
- comments `{...}` (over several lines, never nested), `;` to the end of the line, `%` escape
  lines, NAGs `$12`, and variations `( ... )`, nested, which are skipped;
- games end with a result token, or, missing one, where the next tag section begins; a last
  game without one at the end of the file is read as `*`, with a warning (an error with
  `strict`);
- UTF-8 with or without a BOM, and files in Latin-1 (a line that is not UTF-8 is read as
  Latin-1, with a warning); CRLF line ends.

Bounds keep memory proportional to one game: a line longer than `MAX_LINE` characters and a
number longer than `MAX_DIGITS` digits are errors of the game they are in (reading goes on).
Every forgiveness is a warning in the game's `warnings`.

A malformed game gives a `PdnError` naming file, line, column and game. With
`errors="collect"` the broken game is yielded with its `error` set (the moves read so far kept)
and reading resumes at the next tag section, so the other games of the file are still read.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal, TextIO

Side = Literal["first", "second"]
FIRST: Side = "first"
SECOND: Side = "second"

# Game-termination tokens. International results are 2-0 / 1-1 / 0-2 (white first), English
# ones 1-0 / 1/2-1/2 / 0-1 (black, the side moving first, first); 0-0 and * (unknown) also
# occur. Several look like moves, but none can be one: square 0 does not exist (so every
# `x-0` / `0-x` form is a result) and `1-1` would step from a square onto itself. A longer
# token such as `1-10` or `1-12` is a move: a result must not be followed by a digit or a
# separator.
RESULTS = frozenset({"2-0", "1-1", "0-2", "1-0", "0-1", "1/2-1/2", "0-0", "*"})

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>[0-9]+\s*\.+(?:\s*\.\.\.)?|[0-9]+\s*-(?=\s+[0-9]+\s*[-xX:]\s*[0-9]))
    | (?P<res>(?:1/2-1/2|2-0|0-2|1-1|1-0|0-1|0-0|½-½)(?![0-9xX:/-])|\*)
    | (?P<move>(?:[0-9]+|[a-pA-P][0-9]{1,2})(?:\s*[-xX:]\s*(?:[0-9]+|[a-pA-P][0-9]{1,2}))+)
      [+\#!?]*(?:\([!?]{1,2}\))?
    | (?P<com>\{[^{}]*\})
    | (?P<lbrace>\{)
    | (?P<semi>;)
    | (?P<nag>\$[0-9]+)
    | (?P<mark>[!?]{1,2}|\([!?]{1,2}\))
    | (?P<lpar>\()
    | (?P<rpar>\))
    | (?P<tag>\[\s*(?P<name>\w+)\s+"(?P<value>(?:[^"\\]|\\.)*)"\s*\])
    | (?P<lbrack>\[)
    | (?P<bare>[0-9]+)
    | (?P<dots>\.\.\.?)
    | (?P<bad>\S)
    )""",
    re.VERBOSE,
)
_BRACE = re.compile(r"[{}]")
_TAG_CUT = re.compile(r'\[\s*(?:\w+\s*(?:"(?:[^"\\]|\\.)*"?\s*)?)?$')  # a tag pair cut short
_DIGITS = re.compile(r"\d+", re.ASCII)
_UNESCAPE = re.compile(r"\\(.)")
_TAG_ONLY = re.compile(r'\[\s*(?P<name>\w+)\s+"(?P<value>(?:[^"\\]|\\.)*)"\s*\]\s*', re.ASCII)
# A line of whitespace-separated move numbers, plain moves and results: the common case.
_PLAIN_LINE = re.compile(
    r"(?:\s*(?:\d{1,6}\.(?:\.\.)?|\d{1,6}(?:[-x]\d{1,6})+|1/2-1/2|\*)(?=\s|$))*\s*", re.ASCII
)
_MOVE_INFO: dict[str, tuple[tuple[int, ...], bool]] = {}  # move text -> (squares, is_capture)
_MOVE_INFO_LIMIT = 1 << 16
MAX_LINE = 1 << 18  # characters in one line
MAX_DIGITS = 6  # digits in a move's square or a move number
_LONG_NUMBER = re.compile(rf"[0-9]{{{MAX_DIGITS + 1},}}")
_NORMALIZE = str.maketrans({":": "x", "X": "x"})


def _move_info(text: str) -> tuple[tuple[int, ...], bool]:
    info = (tuple(map(int, _DIGITS.findall(text))), "x" in text)
    if len(_MOVE_INFO) < _MOVE_INFO_LIMIT:
        _MOVE_INFO[text] = info
    return info


class PdnError(Exception):
    """A malformed PDN text: `file`, 1-based `line` and `col`, and the 1-based `game` index."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
        game: int | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.game = game
        super().__init__(self._text())

    def _text(self) -> str:
        where = [str(x) for x in (self.file, self.line, self.col) if x is not None]
        prefix = ":".join(where) + ": " if where else ""
        game = f"game {self.game}: " if self.game is not None else ""
        return f"{prefix}{game}{self.message}"

    def __reduce__(self):  # keep the keyword attributes when pickled (multiprocessing)
        return _make_error, (self.message, self.file, self.line, self.col, self.game)


def _make_error(
    message: str, file: str | None, line: int | None, col: int | None, game: int | None
) -> PdnError:
    return PdnError(message, file=file, line=line, col=col, game=game)


@dataclass(slots=True)
class PdnMove:
    """One main-line move as written: `number` and `side` say whose move it is.

    `side` is "first" when the first player of move `number` made it (`12. 32-28`), "second"
    for the reply (`12... 17-22`); which colour that is depends on the variant. `text` is
    normalized (`x` for captures, lower case, no spaces, no strength marks); squares are
    numbers (`32-28`) or alphanumeric names (`c3-d4`, Russian and Brazilian files).
    """

    number: int
    side: Side
    text: str
    line: int = 0
    col: int = 0
    ply: int = 0

    @property
    def squares(self) -> tuple[int, ...]:
        """The square numbers as written (numeric texts; alphanumeric ones such as `c3-d4`
        name squares of a board: read them with `parse_squares(text, variant)`)."""
        if self.text[:1].isalpha():
            raise ValueError(f"move {self.text}: alphanumeric squares need the variant")
        return (_MOVE_INFO.get(self.text) or _move_info(self.text))[0]

    @property
    def is_capture(self) -> bool:
        """True when written with `x` (or `:`)."""
        return "x" in self.text


@dataclass(slots=True)
class PdnGame:
    """One game: tags in file order, the main line, and the result token of the movetext."""

    index: int = 0
    tags: dict[str, str] = field(default_factory=dict)
    moves: list[PdnMove] = field(default_factory=list)
    result_token: str | None = None
    line: int = 0
    error: PdnError | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def fen(self) -> str | None:
        """The FEN tag as written (a trailing `.` included), or None."""
        return self.tags.get("FEN")

    @property
    def game_type(self) -> int | None:
        """The variant number of the GameType tag (`20` or `20,W,10,10,N2,0` give 20)."""
        value = self.tags.get("GameType")
        if value is None:
            return None
        head = value.split(",", 1)[0].strip()
        ascii_digits = head.isascii() and head.isdigit()  # "2²" is no number
        return int(head) if ascii_digits and len(head) <= MAX_DIGITS else None


# --------------------------------------------------------------------------------- reading


def read_games(
    source: str | os.PathLike[str] | TextIO | Iterable[str] | Iterable[bytes],
    *,
    name: str | None = None,
    errors: Literal["raise", "collect"] = "raise",
    strict: bool = False,
) -> Iterator[PdnGame]:
    """Yield the games of a PDN file one at a time, reading it line by line.

    `source` is a path, an open binary or text file (`sys.stdin.buffer` works) or any
    iterable of lines. Bytes are read as UTF-8 (a BOM skipped), a line that is not UTF-8 as
    Latin-1 with a warning. `name` labels error messages (default: the path, or the file
    object's name). With `errors="raise"` the first malformed game raises `PdnError` (the
    games before it have been yielded); with `errors="collect"` it is yielded with `error`
    set and reading goes on at the next tag section. `strict` turns each forgiveness (a
    missing result token at the end, a Latin-1 line) into an error.
    """
    if errors not in ("raise", "collect"):
        raise ValueError(f"errors must be 'raise' or 'collect', not {errors!r}")
    collect = errors == "collect"
    if isinstance(source, (str, os.PathLike)):
        label = name or os.fspath(source)
        with open(source, "rb") as handle:
            yield from _read_lines(_bounded(handle), label, collect, strict)
    else:
        label = name or str(getattr(source, "name", "<stream>"))
        if isinstance(source, (io.RawIOBase, io.BufferedIOBase)):
            source = _bounded(source)
        yield from _read_lines(source, label, collect, strict)


def _outside_game(move: PdnMove) -> None:
    """Where the fast path would add a move while no game is open (never: a game is
    opened before a move is added)."""
    raise AssertionError(f"move {move.text!r} outside a game")


def _bounded(handle: io.RawIOBase | io.BufferedIOBase) -> Iterator[bytes]:
    """The lines of a binary file, each cut at `MAX_LINE` + 1 bytes (the rest of an
    over-long line is skipped, so it is never held whole)."""
    readline = handle.readline
    while True:
        raw = readline(MAX_LINE + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while True:  # skip to the end of the over-long line
                more = readline(MAX_LINE)
                if not more or more.endswith(b"\n"):
                    break
        yield raw


def _read_lines(
    lines: Iterable[str | bytes], label: str, collect: bool, strict: bool = False
) -> Iterator[PdnGame]:
    parser = _Parser(label, strict)
    done = parser.done
    feed = parser.feed
    for lineno, line in enumerate(lines, 1):
        if not isinstance(line, str):
            line = parser.decode(line, lineno)
        if lineno == 1:
            line = line.removeprefix("\ufeff")
        if len(line) > MAX_LINE:
            parser.too_long(lineno)
        else:
            feed(line, lineno)
        if done:
            yield from _emit(done, collect)
    parser.close()
    yield from _emit(done, collect)


def _emit(done: list[PdnGame], collect: bool) -> Iterator[PdnGame]:
    games = done[:]
    done.clear()
    for game in games:
        if game.error is not None and not collect:
            raise game.error
        yield game


class _Parser:
    """Line-fed PDN state machine; finished games are appended to `done`."""

    def __init__(self, label: str, strict: bool = False) -> None:
        self.label = label
        self.strict = strict
        self.pending: list[str] = []  # warnings for the game being read or the next one
        self.latin1 = False
        self.done: list[PdnGame] = []
        self.count = 0
        self.game: PdnGame | None = None
        self.comment_at: tuple[int, int] | None = None  # where an open `{` comment began
        self.skipping = False  # after an error: waiting for the next tag section
        self.last_was_tag = False
        self.end = (0, 0)  # line and column just after the last token read
        self._reset_movetext()

    def _reset_movetext(self) -> None:
        self.in_movetext = False
        self.number = 1  # whose move comes next: set by a move number, else alternating
        self.side: Side = FIRST
        self.depth = 0
        self.variation_at = (0, 0)

    # ---- lines

    def decode(self, raw: bytes, lineno: int) -> str:
        """A line of bytes as text: UTF-8, or Latin-1 (with a warning) when it is not."""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            if self.strict:
                self._fail(self._error(f"not UTF-8 (byte 0x{raw[error.start]:02x})", lineno, 1))
                return ""
            if not self.latin1:
                self.latin1 = True
                self._warn(f"line {lineno} is not UTF-8: the file is read as Latin-1")
            return raw.decode("latin-1")

    def too_long(self, lineno: int) -> None:
        """An over-long line: an error of the game it is in."""
        self._fail(self._error(f"line longer than {MAX_LINE} characters", lineno, 1))

    def _warn(self, message: str) -> None:
        if self.game is not None:
            self.game.warnings.append(message)
        else:
            self.pending.append(message)

    def feed(self, line: str, lineno: int) -> None:
        """Read one line (its line break included or not)."""
        is_tag = line[:1] == "["
        if self.skipping:  # after an error: wait for the first line of a tag section
            if not is_tag or self.last_was_tag:
                self.last_was_tag = is_tag
                return
            self.skipping = False
        self.last_was_tag = is_tag
        line = line.rstrip("\r\n")
        try:
            if self.comment_at is None and self.depth == 0:
                if is_tag:
                    tag = _TAG_ONLY.fullmatch(line)
                    if tag is not None:
                        self._on_tag(tag, lineno)
                        self.end = (lineno, len(line) + 1)
                        return
                elif _PLAIN_LINE.fullmatch(line) is not None:
                    self._feed_plain(line, lineno)
                    return
            self._feed(line, lineno)
        except PdnError as error:
            self._fail(error)

    def _feed(self, line: str, lineno: int) -> None:
        """The general case: comments, variations, odd spacing, errors."""
        pos = 0
        if self.comment_at is not None:
            pos = self._continue_comment(line, lineno)
            if pos < 0:
                return
        elif line[:1] == "%":
            return
        if line:
            self._scan(line, lineno, pos)

    def _feed_plain(self, line: str, lineno: int) -> None:
        """Numbers, moves and results separated by spaces: `_add_move` etc. inlined for speed
        (the line matched `_PLAIN_LINE`: numbers are `12.` or `12...`, moves are plain)."""
        game = self.game
        append = game.moves.append if game is not None else _outside_game
        ply = len(game.moves) if game is not None else 0
        number, side = self.number, self.side
        find = line.find
        pos = 0
        for token in line.split():
            pos = find(token, pos)
            if token in RESULTS:
                self.number, self.side = number, side
                self._on_result(token, lineno)
                game, append, number, side = None, _outside_game, 1, FIRST
                pos += len(token)
                continue
            if game is None:  # the first token of a game without tags
                game = self._ensure_game(lineno)
                append, ply = game.moves.append, len(game.moves)
                self.in_movetext = True
            if token[-1] == ".":
                if token[-2] == ".":
                    number, side = int(token[:-3]), SECOND
                else:
                    number, side = int(token[:-1]), FIRST
            else:
                append(PdnMove(number, side, token, lineno, pos + 1, ply))
                ply += 1
                if side == FIRST:
                    side = SECOND
                else:
                    number += 1
                    side = FIRST
            pos += len(token)
        self.number, self.side = number, side
        if game is not None and pos:
            self.in_movetext = True
        self.end = (lineno, pos + 1)

    def _continue_comment(self, line: str, lineno: int) -> int:
        """Scan a line inside an open comment; return where tokens resume, or -1."""
        if line.startswith("[") and _TAG_ONLY.fullmatch(line):
            # A tag pair at the start of a line: the comment was never closed and the next
            # game has begun. Report it at the comment's start and read on from here.
            self._fail(self._comment_error("unterminated comment starting here"))
            self.skipping = False
            return 0
        found = _BRACE.search(line)
        if found is None:
            return -1
        if found.group() == "{":
            raise self._nested_error(lineno, found.start() + 1)
        self.comment_at = None
        return found.end()

    def _scan(self, line: str, lineno: int, pos: int) -> None:
        """The general tokenizer, for lines the fast paths do not take."""
        for m in _TOKEN.finditer(line, pos):
            kind = m.lastgroup
            assert kind is not None  # every alternative of _TOKEN is a named group
            if kind == "move":
                self._on_move(m, lineno)
            elif kind == "num":
                self._on_number(m.group(kind), lineno, m.start(kind) + 1)
            elif kind == "res":
                self._on_result(m.group(kind), lineno)
            elif kind == "tag":
                self._on_tag(m, lineno)
            elif kind == "lbrace":
                self._open_comment(line, lineno, m.start(kind))
                return
            elif kind == "semi":
                return
            else:
                self._on_other(kind, line, lineno, m.start(kind))
            self.end = (lineno, m.end() + 1)

    # ---- tokens

    def _on_move(self, m: re.Match[str], lineno: int) -> None:
        if self.depth:
            return
        text = "".join(m.group("move").split()).translate(_NORMALIZE).lower()
        if text in RESULTS:  # a spaced-out result such as `1 - 0`
            self._on_result(text, lineno)
        else:
            self._add_move(text, lineno, m.start("move") + 1)

    def _add_move(self, text: str, lineno: int, col: int) -> None:
        game = self.game or self._ensure_game(lineno)
        if len(text) > MAX_DIGITS and _LONG_NUMBER.search(text):
            raise self._error(f"number too long in move {text[:20]}...", lineno, col)
        number, side = self.number, self.side
        game.moves.append(PdnMove(number, side, text, lineno, col, len(game.moves)))
        self.in_movetext = True
        if side == FIRST:
            self.side = SECOND
        else:
            self.number, self.side = number + 1, FIRST

    def _on_number(self, token: str, lineno: int, col: int = 0) -> None:
        """`12.` gives move 12 to the first player, `12...` (or `12. ...`) to the second."""
        if self.depth:
            return
        self._ensure_game(lineno)
        self.in_movetext = True
        digits = _DIGITS.match(token)
        assert digits is not None
        self.number = self._number(digits.group(), lineno, col)
        self.side = SECOND if token.count(".") > 1 else FIRST

    def _number(self, digits: str, lineno: int, col: int) -> int:
        if len(digits) > MAX_DIGITS:
            raise self._error(f"number too long ({len(digits)} digits)", lineno, col)
        return int(digits)

    def _on_result(self, token: str, lineno: int) -> None:
        if self.depth:
            return
        game = self._ensure_game(lineno)
        game.result_token = "1/2-1/2" if token == "½-½" else token
        self._finish()

    def _on_tag(self, m: re.Match[str], lineno: int) -> None:
        name = m.group("name")
        self._tag_boundary(name)
        value = m.group("value")
        if "\\" in value:
            value = _UNESCAPE.sub(r"\1", value)
        self._ensure_game(lineno).tags[name] = value

    def _tag_boundary(self, name: str | None) -> None:
        """A tag pair after movetext (or repeating one of this game's tags) begins a new game."""
        game = self.game
        if game is None or not (self.in_movetext or (name is not None and name in game.tags)):
            return
        if self.depth:
            # An unclosed variation runs into the next game: fail this one, read on.
            self._fail(self._variation_error())
            self.skipping = False
        else:
            self._finish()

    def _on_other(self, kind: str | None, line: str, lineno: int, start: int) -> None:
        col = start + 1
        if kind == "lpar":
            self._ensure_game(lineno)
            self.in_movetext = True
            if self.depth == 0:
                self.variation_at = (lineno, col)
            self.depth += 1
        elif kind == "rpar":
            if self.depth == 0:
                raise self._error("unbalanced ')'", lineno, col)
            self.depth -= 1
        elif kind == "lbrack":
            self._tag_boundary(None)
            cut = _TAG_CUT.match(line, start)
            raise self._error("unterminated tag" if cut else "malformed tag", lineno, col)
        elif kind == "bare":
            number = _DIGITS.match(line, start)
            assert number is not None
            after = line[number.end() : number.end() + 1]
            if after.isdigit():  # a digit, but not 0-9 ("3²-28")
                raise self._error(
                    f"{after!r} after {number.group()!r} is not an ASCII digit",
                    lineno,
                    col + len(number.group()),
                )
            raise self._error(f"incomplete move {number.group()!r}", lineno, col)
        elif kind == "bad":
            raise self._error(f"unexpected character {line[start]!r}", lineno, col)
        # com, nag, mark, dots (a stray `...`): nothing to do

    def _open_comment(self, line: str, lineno: int, start: int) -> None:
        self.comment_at = (lineno, start + 1)
        inner = _BRACE.search(line, start + 1)
        if inner is not None:  # `{` again before any `}`: the comment would nest
            raise self._nested_error(lineno, inner.start() + 1)

    # ---- games

    def _ensure_game(self, lineno: int) -> PdnGame:
        if self.game is None:
            self.count += 1
            self.game = PdnGame(index=self.count, line=lineno)
            if self.pending:
                self.game.warnings.extend(self.pending)
                self.pending.clear()
        return self.game

    def _finish(self) -> None:
        if self.game is not None:
            self.done.append(self.game)
        self.game = None
        self.comment_at = None
        self._reset_movetext()

    def _fail(self, error: PdnError) -> None:
        game = self._ensure_game(error.line or 0)
        game.error = error
        self._finish()
        self.skipping = True

    def close(self) -> None:
        """End of input: finish the last game, or report what the file cut short."""
        if self.skipping:
            return
        if self.comment_at is not None:
            self._fail(self._comment_error("unterminated comment starting here"))
        elif self.depth:
            self._fail(self._variation_error())
        elif self.game is not None and self.in_movetext and self.game.result_token is None:
            line, col = self.end
            if self.strict:
                message = "unexpected end of file: game has no result token"
                self._fail(self._error(message, line, col))
                return
            self.game.result_token = "*"
            self._warn(f"no result token at the end of the file ({line}:{col}): read as '*'")
            self._finish()
        else:
            self._finish()

    # ---- errors

    def _error(self, message: str, line: int, col: int) -> PdnError:
        game = self._ensure_game(line)
        return PdnError(message, file=self.label, line=line, col=col, game=game.index)

    def _comment_error(self, message: str) -> PdnError:
        assert self.comment_at is not None
        return self._error(message, *self.comment_at)

    def _nested_error(self, line: int, col: int) -> PdnError:
        assert self.comment_at is not None
        start_line, start_col = self.comment_at
        message = f"nested comment (the comment opened at {start_line}:{start_col})"
        return self._error(message, line, col)

    def _variation_error(self) -> PdnError:
        return self._error("unterminated variation starting here", *self.variation_at)


# --------------------------------------------------------------------------------- writing


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def format_tags(tags: Mapping[str, str]) -> str:
    """The tag section: one `[Name "value"]` line per tag, in order, each ending in newline."""
    return "".join(f'[{name} "{_escape(value)}"]\n' for name, value in tags.items())


def format_moves(moves: Iterable[PdnMove], result: str = "*", width: int = 80) -> str:
    """The movetext `1. 32-28 17-22 2. ...` ending in `result`, wrapped at `width` columns.

    A move by the second player is written `N... move` when it does not follow the first
    player's move of the same number (a game starting with the second player to move).
    """
    units = []
    previous: tuple[int, str] | None = None
    for move in moves:
        if move.side == FIRST:
            units.append(f"{move.number}. {move.text}")
        elif previous == (move.number, FIRST):
            units.append(move.text)
        else:
            units.append(f"{move.number}... {move.text}")
        previous = (move.number, move.side)
    units.append(result)
    return _wrap(units, width)


def _wrap(units: list[str], width: int) -> str:
    lines: list[str] = []
    current = ""
    for unit in units:
        if current and len(current) + 1 + len(unit) > width:
            lines.append(current)
            current = unit
        else:
            current = f"{current} {unit}" if current else unit
    lines.append(current)
    return "\n".join(lines) + "\n"


def write_game(game: PdnGame, result: str | None = None, *, width: int = 80) -> str:
    """The game as PDN text: tag section, blank line, movetext ending with the result token.

    With `result` (one of `RESULTS`) the Result tag and the final token are replaced by it;
    otherwise the game's own result token is kept (its Result tag, or `*`, if it had none).
    """
    if result is not None and result not in RESULTS:
        raise ValueError(f"not a PDN result token: {result!r}")
    tags = dict(game.tags)
    if result is not None:
        tags["Result"] = result
    token = result or game.result_token or game.tags.get("Result") or "*"
    if token not in RESULTS:
        token = "*"
    head = format_tags(tags)
    body = format_moves(game.moves, token, width)
    return f"{head}\n{body}" if head else body


def write_games(games: Iterable[PdnGame], out: TextIO) -> int:
    """Write games to `out`, separated by blank lines; return how many were written."""
    count = 0
    for game in games:
        if count:
            out.write("\n")
        out.write(write_game(game))
        count += 1
    return count
