"""The DevTools driver of the page tests drives a real headless Chromium (skipped with a
summary line where Chromium is missing, required under CI=true: tests/support/system_parts.py)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from browser import Browser, BrowserError

pytestmark = pytest.mark.browser

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Driver check</title>
<style>body { background: rgb(10, 120, 200); margin: 0 }</style></head>
<body><p id="greeting">Hello</p>
<script>document.getElementById("greeting").dataset.ready = "yes";</script>
</body></html>
"""


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_driver_opens_a_file_page_evaluates_and_screenshots(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    with Browser.launch(width=640, height=480) as browser:
        browser.open(page.as_uri())
        assert browser.evaluate("document.title") == "Driver check"
        assert browser.evaluate("document.getElementById('greeting').dataset.ready") == "yes"
        assert browser.evaluate("({a: [1, 2], b: null})") == {"a": [1, 2], "b": None}
        assert browser.evaluate("Promise.resolve(6 * 7)") == 42
        with pytest.raises(BrowserError, match="boom"):
            browser.evaluate("(() => { throw new Error('boom') })()")
        shot = browser.screenshot(tmp_path / "page.png")
        print(f"screenshot: {shot}")
    assert png_size(shot) == (640, 480)


def test_closing_ends_the_browser_process(tmp_path: Path) -> None:
    browser = Browser.launch()
    browser.close()
    with pytest.raises(BrowserError):
        browser.evaluate("1")
