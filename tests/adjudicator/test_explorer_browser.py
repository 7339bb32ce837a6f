"""The endgame explorer in headless Chromium against the real server: set a position up by
clicking squares and through the FEN box, read the move list, play a move, go back.

Driven through Selenium WebDriver with Debian's ``chromium`` and ``chromium-driver``
(``apt-get install -y chromium chromium-driver``). Without them the tests fail when the ``CI``
environment variable is set, and are skipped otherwise.
"""

from __future__ import annotations

import os

import httpx
import pytest
from browser_page import Page, find_browser, start_driver
from service_helpers import Server, shared_service

LIST_MOVES = """[...document.querySelectorAll('#moves li[data-move]')].map(li =>
    [li.dataset.move, li.dataset.result || null,
     li.dataset.dtw === '' ? null : Number(li.dataset.dtw)])"""


pytestmark = pytest.mark.slow  # the browser: the slower tier (make test-slow, CI)


@pytest.fixture(scope="session")
def server(request, tmp_path_factory) -> Server:
    return shared_service(request, tmp_path_factory)


@pytest.fixture(scope="module")
def driver():
    found = find_browser()
    if found is None:
        message = "chromium is not installed (apt-get install -y chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    d = start_driver(*found)
    yield d
    d.quit()


@pytest.fixture
def page(driver, server):
    page = Page(driver)
    page.navigate(f"{server.url}/")
    wait_ready(page)
    yield page
    assert page.errors() == [], "JavaScript errors on the page"


def wait_ready(page: Page, fen: str | None = None) -> None:
    """Wait until the page shows the values of ``fen`` (or of whatever it shows)."""
    cond = "['ready', 'error'].includes(document.body.dataset.state)"
    if fen is not None:
        cond += f" && document.body.dataset.fen === {fen!r}"
    page.wait_for(cond)


def shown_moves(page: Page) -> list[list]:
    return page.evaluate(LIST_MOVES)


def served_moves(server: Server, variant: str, fen: str) -> tuple[dict, list[list]]:
    r = httpx.get(f"{server.url}/probe", params={"variant": variant, "fen": fen})
    body = r.json()
    return body, [[m["move"], m["result"], m["dtw"]] for m in body["moves"]]


def click_square(page: Page, square: int, times: int = 1) -> None:
    for _ in range(times):
        page.click(f'#board [data-square="{square}"]')


def test_board_has_the_dark_squares_numbered(page):
    assert page.evaluate("document.querySelectorAll('#board [data-square]').length") == 50
    squares = page.evaluate(
        "[...document.querySelectorAll('#board [data-square]')].map(g => +g.dataset.square)"
    )
    assert squares == list(range(1, 51))
    # Square 1 is in the top row, second column; 46 the bottom-left corner.
    boxes = page.evaluate(
        """[1, 5, 6, 46].map(s => {
            const r = document.querySelector(`[data-square="${s}"]`).getBoundingClientRect();
            return [Math.round(r.left), Math.round(r.top), Math.round(r.width)];
        })"""
    )
    (x1, y1, w), (x5, y5, _), (x6, y6, _), (x46, y46, _) = boxes
    assert y1 == y5 < y6 < y46 and x6 == x46 < x1 < x5 and x1 - x6 == w


def test_set_up_by_clicking_squares_and_read_the_moves(page, server):
    page.click("#clear")
    wait_ready(page, "W:W:B")
    assert page.evaluate("document.querySelectorAll('#moves li[data-move]').length") == 0
    click_square(page, 28)  # white man
    click_square(page, 46, 2)  # white king
    click_square(page, 5, 3)  # black king (no white man on white's crowning row: skipped)
    fen = "W:W28,K46:BK5"
    wait_ready(page, fen)
    assert page.evaluate("document.getElementById('fen').value") == fen
    pieces = page.evaluate(
        "[28, 46, 5, 1].map(s => document.querySelector(`[data-square='${s}']`).dataset.piece)"
    )
    assert pieces == ["w", "W", "B", ""]
    body, expected = served_moves(server, "international", fen)
    assert shown_moves(page) == expected
    assert len(expected) == 5 and expected[0][1] == "win"
    value = page.evaluate("[value.dataset.result, value.dataset.dtw, value.textContent]")
    assert value[:2] == [body["result"], str(body["dtw"])]
    assert "White to move" in value[2] and "win" in value[2]


def test_play_a_move_then_go_back(page, server):
    fen = "W:W28,K46:BK5"
    page.type_into("#fen", fen)
    page.click("#fen-apply")
    wait_ready(page, fen)
    first = page.evaluate("document.querySelector('#moves li[data-move]').dataset.fen")
    page.click("#moves li[data-move]")
    wait_ready(page, first)
    _, expected = served_moves(server, "international", first)
    assert shown_moves(page) == expected
    assert page.evaluate("document.getElementById('side').value") == "B"
    page.click("#back")
    wait_ready(page, fen)


def test_side_to_move_selector(page, server):
    page.type_into("#fen", "W:W28,K46:BK5")
    page.click("#fen-apply")
    wait_ready(page, "W:W28,K46:BK5")
    page.evaluate("(s => { s.value = 'B'; s.dispatchEvent(new Event('change')); })(side)")
    wait_ready(page, "B:W28,K46:BK5")
    _, expected = served_moves(server, "international", "B:W28,K46:BK5")
    assert shown_moves(page) == expected


def test_english_board_through_the_fen_box(page, server):
    page.evaluate("(s => { s.value = 'english'; s.dispatchEvent(new Event('change')); })(variant)")
    page.wait_for("document.querySelectorAll('#board [data-square]').length === 32")
    fen = "B:WK28:B1,K10"
    page.type_into("#fen", fen)
    page.click("#fen-apply")
    wait_ready(page, fen)
    _, expected = served_moves(server, "english", fen)
    assert shown_moves(page) == expected and expected[0][1] == "win"


def test_russian_board_has_named_squares_and_reads_named_fens(page):
    page.evaluate("(s => { s.value = 'russian'; s.dispatchEvent(new Event('change')); })(variant)")
    page.wait_for("document.querySelectorAll('#board [data-square]').length === 32")
    labels = page.evaluate(
        "[1, 4, 29, 32].map(s => document.querySelector(`[data-square='${s}'] text`).textContent)"
    )
    assert labels == ["b8", "h8", "a1", "g1"]  # a1 dark, white at the bottom
    page.type_into("#fen", "W:Wc3,Kg1:Bf6")
    page.click("#fen-apply")
    page.wait_for("document.querySelector('[data-square=\"22\"]').dataset.piece === 'w'")
    pieces = page.evaluate(
        "[22, 32, 11].map(s => document.querySelector(`[data-square='${s}']`).dataset.piece)"
    )
    assert pieces == ["w", "W", "b"]


def test_position_outside_the_tables_shows_the_error_and_the_moves(page):
    page.click("#start")
    wait_ready(page, "W:W31-50:B1-20")
    assert page.evaluate("document.body.dataset.state") == "error"
    status = page.evaluate("document.getElementById('status').textContent")
    assert "slice 200200" in status
    moves = shown_moves(page)
    assert len(moves) == 9 and all(result is None for _, result, _ in moves)


def test_bad_fen_is_reported_and_the_board_kept(page):
    page.type_into("#fen", "W:W28,K46:BK5")
    page.click("#fen-apply")
    wait_ready(page, "W:W28,K46:BK5")
    page.type_into("#fen", "X:nonsense")
    page.click("#fen-apply")
    page.wait_for("document.getElementById('status').dataset.status === 'error'")
    assert "FEN" in page.evaluate("document.getElementById('status').textContent")
    assert page.evaluate("document.querySelector('[data-square=\"28\"]').dataset.piece") == "w"


def test_right_click_cycles_back(page):
    page.click("#clear")
    wait_ready(page, "W:W:B")
    page.click('#board [data-square="23"]', button="right")  # empty -> black king
    wait_ready(page, "W:W:BK23")


def test_count_field_marks_moves_too_slow_for_the_count(page, server):
    # Two kings against one: a 5-move ending (10 plies). The win takes 7 plies: with 5
    # elapsed, the moves that win in theory do not win under the count.
    fen = "W:WK1,K2:BK45"
    page.type_into("#fen", fen)
    page.click("#fen-apply")
    wait_ready(page, fen)
    assert page.evaluate("document.querySelectorAll('#moves li.too-slow').length") == 0
    assert page.evaluate("value.dataset.underCount") == "win"
    page.type_into("#elapsed", "5")
    page.evaluate("elapsed.dispatchEvent(new Event('change'))")
    page.wait_for("value.dataset.underCount === 'draw'")
    body = httpx.get(
        f"{server.url}/probe", params={"fen": fen, "elapsed": 5, "variant": "international"}
    ).json()
    slow = [m["move"] for m in body["moves"] if m["result"] == "win"]
    slow = [
        m for m in slow if {x["move"]: x for x in body["moves"]}[m]["result_under_count"] != "win"
    ]
    assert slow
    shown = page.evaluate(
        "[...document.querySelectorAll('#moves li.too-slow')].map(li => li.dataset.move)"
    )
    assert shown == slow
    assert "draw under the count" in page.evaluate("value.textContent")


def test_frisian_board_shows_the_king_move_counter(page, server):
    page.evaluate("(s => { s.value = 'frisian'; s.dispatchEvent(new Event('change')); })(variant)")
    page.wait_for("document.querySelectorAll('#board [data-square]').length === 50")
    # White's king on 23 has made three quiet moves in a row: only the man may move.
    fen = "W:W50,K23:B1,K26:H0:F1:+0+323"
    page.type_into("#fen", fen)
    page.click("#fen-apply")
    wait_ready(page, fen)
    runs = page.evaluate("({...document.getElementById('runs').dataset})")
    assert runs == {"white": "23:3", "black": "", "barred": "23"}
    text = page.evaluate("document.getElementById('runs').textContent")
    assert "The king on 23 may not make a quiet move now." in text
    body, expected = served_moves(server, "frisian", fen)
    assert body["king_runs"]["barred"] == 23
    shown = shown_moves(page)
    assert shown == expected and all(m.startswith("50-") for m, _, _ in shown)
    # Playing the man's move ends white's run: the counter leaves the FEN.
    page.click("#moves li[data-move]")
    page.wait_for(
        "document.body.dataset.fen.startsWith('B:') && "
        "['ready', 'error'].includes(document.body.dataset.state)"
    )
    assert page.evaluate("document.getElementById('fen').value").startswith("B:W")
    assert ":+" not in page.evaluate("document.getElementById('fen').value")
    assert page.evaluate("document.getElementById('runs').dataset.barred") == ""
    # Moving the king by hand off its square drops the counter too.
    page.click("#back")
    wait_ready(page, fen)
    click_square(page, 23, 4)  # W -> b -> B -> empty
    page.wait_for("!document.getElementById('fen').value.includes(':+')")
