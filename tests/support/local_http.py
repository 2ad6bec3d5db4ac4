"""pytest-httpserver's server, stopped at once.

Its server thread runs `serve_forever()`, which looks for a stop request every half second:
stopping one costs up to 0.5 s, and a test suite that starts a server per test spends minutes
waiting for them. This one looks every 10 ms; it behaves the same in every other way.
"""

from __future__ import annotations

from pytest_httpserver import HTTPServer

# How often the serving thread checks whether it was asked to stop.
POLL_SECONDS = 0.01


class LocalHTTPServer(HTTPServer):
    def thread_target(self) -> None:
        assert self.server is not None
        self.server.serve_forever(poll_interval=POLL_SECONDS)
