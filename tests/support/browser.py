"""A small driver for the system's headless Chromium over the DevTools protocol (stdlib only).

Page tests need a real browser, and the usual drivers (Selenium, Playwright) download browsers or
drivers of their own. Chromium speaks the DevTools protocol over a pair of pipes when started with
`--remote-debugging-pipe`: it reads commands from fd 3 and writes replies and events to fd 4, each
message one JSON object followed by a NUL byte. That is all this module needs.

    with Browser.launch() as browser:
        browser.open(page.as_uri())
        assert browser.evaluate("document.title") == "..."
        browser.screenshot(tmp_path / "page.png")

A test that needs the browser calls `find_chromium()`; a missing browser is an error saying how
to install it, never a skip (`.ci/run` installs it on a fresh machine).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
DEFAULT_TIMEOUT = 30.0


class BrowserError(RuntimeError):
    """The browser could not be started, or a DevTools command failed or timed out."""


def find_chromium() -> str:
    """The path of the system's Chromium, or a BrowserError that says how to install it."""
    override = os.environ.get("AGENTSCRIPT_CHROMIUM")
    if override:
        return override
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserError(
        "no Chromium found: install it with `apt-get install -y chromium` (.ci/run does this)"
    )


class Browser:
    """One headless Chromium process with one page attached (a flat DevTools session)."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        to_browser: int,
        from_browser: int,
        profile: tempfile.TemporaryDirectory[str],
    ) -> None:
        self._process = process
        self._to_browser = to_browser
        self._from_browser = from_browser
        self._profile = profile
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._session: str | None = None

    # --- lifecycle -------------------------------------------------------------------------

    @classmethod
    def launch(cls, width: int = 1280, height: int = 900) -> Browser:
        """Start headless Chromium with a fresh temporary profile and attach to its first page."""
        executable = find_chromium()
        profile = tempfile.TemporaryDirectory(prefix="agentscript-chromium-")
        commands_read, commands_write = os.pipe()
        replies_read, replies_write = os.pipe()
        # Copy the child's ends above 4 first, so placing them on 3 and 4 cannot clobber either.
        child_commands = fcntl.fcntl(commands_read, fcntl.F_DUPFD_CLOEXEC, 5)
        child_replies = fcntl.fcntl(replies_write, fcntl.F_DUPFD_CLOEXEC, 5)

        def place_pipes() -> None:
            os.dup2(child_commands, 3)
            os.dup2(child_replies, 4)

        arguments = [
            executable,
            "--headless",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile.name}",
            f"--window-size={width},{height}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--mute-audio",
            "--hide-scrollbars",
            "about:blank",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            arguments.insert(1, "--no-sandbox")  # Chromium refuses to run as root sandboxed.
        try:
            process = subprocess.Popen(
                arguments,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(3, 4),
                preexec_fn=place_pipes,  # dup2 only: safe between fork and exec
            )
        finally:
            for fd in {commands_read, replies_write, child_commands, child_replies}:
                os.close(fd)
        browser = cls(process, commands_write, replies_read, profile)
        try:
            browser._attach_page()
            browser.command(
                "Emulation.setDeviceMetricsOverride",
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            browser.close()
            raise
        return browser

    def close(self) -> None:
        """Ask the browser to quit, kill it if it does not, and delete the profile."""
        if self._process.poll() is None:
            try:
                self._send("Browser.close", {}, session=None)
                self._process.wait(timeout=5)
            except (BrowserError, OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait(timeout=5)
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- page operations -------------------------------------------------------------------

    def open(self, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Navigate the page to `url` and wait for its load event."""
        self._events.clear()
        reply = self.command("Page.navigate", url=url)
        if reply.get("errorText"):
            raise BrowserError(f"cannot open {url}: {reply['errorText']}")
        self.wait_for_event("Page.loadEventFired", timeout)

    def evaluate(self, expression: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """The JSON value of a JavaScript expression in the page (promises are awaited)."""
        reply = self.command(
            "Runtime.evaluate",
            timeout=timeout,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            description = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"JavaScript error: {description}")
        return reply.get("result", {}).get("value")

    def screenshot(self, path: Path | str, full_page: bool = False) -> Path:
        """Save a PNG of the page (the viewport, or the whole page) and return its path."""
        parameters: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = self.command("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            parameters["clip"] = {
                "x": 0,
                "y": 0,
                "width": size["width"],
                "height": size["height"],
                "scale": 1,
            }
            parameters["captureBeyondViewport"] = True
        reply = self.command("Page.captureScreenshot", **parameters)
        target = Path(path)
        target.write_bytes(base64.b64decode(reply["data"]))
        return target

    # --- protocol --------------------------------------------------------------------------

    def command(self, method: str, timeout: float = DEFAULT_TIMEOUT, **params: Any) -> Any:
        """Send a DevTools command to the page's session and return its result."""
        return self._call(method, params, self._session, timeout)

    def wait_for_event(self, method: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The parameters of the first event named `method` (already received or arriving)."""
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self._events):
                if event.get("method") == method:
                    del self._events[index]
                    params: dict[str, Any] = event.get("params", {})
                    return params
            self._events.append(self._receive(deadline, f"event {method}"))

    def _attach_page(self) -> None:
        deadline = time.monotonic() + DEFAULT_TIMEOUT
        while True:
            targets = self._call("Target.getTargets", {}, None, DEFAULT_TIMEOUT)["targetInfos"]
            pages = [target for target in targets if target.get("type") == "page"]
            if pages:
                break
            if time.monotonic() > deadline:
                raise BrowserError("the browser opened no page")
            time.sleep(0.05)
        attached = self._call(
            "Target.attachToTarget",
            {"targetId": pages[0]["targetId"], "flatten": True},
            None,
            DEFAULT_TIMEOUT,
        )
        self._session = attached["sessionId"]
        self.command("Page.enable")
        self.command("Runtime.enable")

    def _call(
        self, method: str, params: dict[str, Any], session: str | None, timeout: float
    ) -> Any:
        message_id = self._send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline, method)
            if message.get("id") != message_id:
                if "method" in message:
                    self._events.append(message)
                continue
            if "error" in message:
                raise BrowserError(f"{method}: {message['error'].get('message')}")
            return message.get("result", {})

    def _send(self, method: str, params: dict[str, Any], session: str | None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                written = os.write(self._to_browser, data)
                data = data[written:]
        except OSError as error:
            raise BrowserError(f"the browser is gone ({error})") from error
        return self._next_id

    def _receive(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError(f"timed out waiting for {waiting_for}")
            # poll, not select: a long test session may hold descriptors past select's 1024.
            waiting = select.poll()
            waiting.register(self._from_browser, select.POLLIN)
            ready = waiting.poll(remaining * 1000)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"the browser exited while waiting for {waiting_for}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message
