"""The HTTP transport shared by threads (`parallel for`, eval cells) creates one client."""

from __future__ import annotations

import threading

from agentscript.providers.llm.transport import HttpTransport


def test_threads_using_a_new_transport_at_once_share_one_client() -> None:
    transport = HttpTransport("openai")
    start = threading.Barrier(16)
    clients = []

    def first_use() -> None:
        start.wait()
        clients.append(transport.client())

    threads = [threading.Thread(target=first_use) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len(clients) == 16 and len({id(client) for client in clients}) == 1
    finally:
        transport.close()
    assert transport._client is None
