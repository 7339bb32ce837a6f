"""A minimal headless Chromium driver over the DevTools protocol, with no Python dependency.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol messages (JSON, each
ended by a NUL byte) on its file descriptor 3 and writes its answers and events on 4. A reader
thread collects the answers; :class:`Page` has the few commands the explorer tests need
(navigate, evaluate, wait, click like a user, type text, screenshot).

Needs Debian's ``chromium`` package (``apt-get install -y chromium``); :func:`find_chromium`
says where it is, or None.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",  # root in a container
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
    "--hide-scrollbars",
]


class BrowserError(RuntimeError):
    """The browser died, answered with an error, or a wait timed out."""


def find_chromium() -> str | None:
    """Path of a Chromium binary (``CHROMIUM`` env var, then the usual names), or None."""
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (path := shutil.which(name)):
            return path
    return None


def _high_fd(fd: int) -> int:
    """A copy of ``fd`` numbered 10 or more (so placing it on 3 and 4 cannot clobber)."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class Browser:
    """A headless Chromium process driven through its debugging pipe (a context manager)."""

    def __init__(
        self,
        binary: str,
        profile: Path,
        size: tuple[int, int] = (1280, 900),
        log: Path | None = None,
    ) -> None:
        to_chrome_r, to_chrome_w = (_high_fd(fd) for fd in os.pipe())
        from_chrome_r, from_chrome_w = (_high_fd(fd) for fd in os.pipe())

        def place_pipes() -> None:  # in the child, before exec
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        cmd = [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"]
        cmd += ["--remote-debugging-pipe", "about:blank"]
        self._log = open(log, "wb") if log else subprocess.DEVNULL  # closed by close()
        self.process = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            pass_fds=(3, 4),
            preexec_fn=place_pipes,  # two dup2 calls only
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._out = os.fdopen(to_chrome_w, "wb", buffering=0)
        self._in = os.fdopen(from_chrome_r, "rb", buffering=0)
        self._next_id = 0
        self._lock = threading.Lock()
        self._ready = threading.Condition()
        self._answers: dict[int, dict] = {}
        self.events: list[dict] = []
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # --- protocol -------------------------------------------------------------------------
    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = self._in.read(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._ready:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                self._ready.notify_all()
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        """Send one command and wait for its result; raises :class:`BrowserError`."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            try:
                self._out.write(json.dumps(message).encode() + b"\0")
            except OSError as error:
                raise BrowserError(f"{method}: the browser is gone ({error})") from None
        deadline = time.monotonic() + timeout
        with self._ready:
            while ident not in self._answers:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    what = "the browser closed" if self._closed else f"no answer in {timeout} s"
                    raise BrowserError(f"{method}: {what}")
                self._ready.wait(left)
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error'].get('message', answer['error'])}")
        return answer.get("result", {})

    def new_page(self) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        page = Page(self, session["sessionId"], target)
        page.send("Page.enable")
        page.send("Runtime.enable")
        return page

    # --- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except BrowserError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        for f in (self._out, self._in):
            f.close()
        if self._log is not subprocess.DEVNULL:
            self._log.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab, through its flat session."""

    def __init__(self, browser: Browser, session: str, target: str) -> None:
        self.browser = browser
        self.session = session
        self.target = target

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.target})

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0):
        return self.browser.send(method, params, self.session, timeout)

    def errors(self) -> list[str]:
        """Uncaught JavaScript exceptions and console errors seen on this page so far."""
        out = []
        for e in self.browser.events:
            if e.get("sessionId") != self.session:
                continue
            if e["method"] == "Runtime.exceptionThrown":
                d = e["params"]["exceptionDetails"]
                out.append(d.get("exception", {}).get("description") or d.get("text", "?"))
            elif e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] == "error":
                out.append(" ".join(str(a.get("value", "")) for a in e["params"]["args"]))
        return out

    def navigate(self, url: str, timeout: float = 30.0) -> None:
        self.send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'", timeout)

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        """The value of a JavaScript expression (promises awaited)."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout,
        )
        if "exceptionDetails" in result:
            d = result["exceptionDetails"]
            raise BrowserError(d.get("exception", {}).get("description") or d.get("text"))
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        """Poll until the expression is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out after {timeout} s waiting for {expression}")
            time.sleep(0.05)

    def click(self, selector: str, button: str = "left") -> None:
        """Scroll the element into view and click its centre with the mouse."""
        box = self.evaluate(
            f"""(() => {{
                const e = document.querySelector({json.dumps(selector)});
                if (!e) return null;
                e.scrollIntoView({{block: 'center'}});
                const r = e.getBoundingClientRect();
                return {{x: r.left + r.width / 2, y: r.top + r.height / 2}};
            }})()"""
        )
        if box is None:
            raise BrowserError(f"no element matches {selector}")
        common = {"x": box["x"], "y": box["y"], "button": button, "clickCount": 1}
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": box["x"], "y": box["y"]})
        self.send("Input.dispatchMouseEvent", {"type": "mousePressed", **common})
        self.send("Input.dispatchMouseEvent", {"type": "mouseReleased", **common})

    def type_into(self, selector: str, text: str) -> None:
        """Focus an input, select its text and type ``text`` over it."""
        self.evaluate(
            f"(e => {{ e.focus(); e.select(); }})(document.querySelector({json.dumps(selector)}))"
        )
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
