"""The HTTP transport shared by threads (`parallel for`, eval cells): one client per thread, so
concurrent requests do not queue on one connection pool's lock; none is left open."""

from __future__ import annotations

import gc
import threading

from agentscript.providers.llm.transport import HttpTransport


def test_each_thread_sends_through_its_own_client_and_close_closes_them_all() -> None:
    transport = HttpTransport("openai")
    start = threading.Barrier(16)
    keep = threading.Event()
    clients = []

    def first_use() -> None:
        start.wait()
        mine = transport.client()
        clients.append(mine)
        assert transport.client() is mine  # made once per thread
        keep.wait()

    threads = [threading.Thread(target=first_use) for _ in range(16)]
    for thread in threads:
        thread.start()
    while len(clients) < 16:
        threading.Event().wait(0.01)
    assert len({id(client) for client in clients}) == 16
    transport.close()
    assert all(client.is_closed for client in clients)
    keep.set()
    for thread in threads:
        thread.join()


def test_a_threads_client_is_closed_when_the_thread_is_gone() -> None:
    transport = HttpTransport("openai")
    made = []
    thread = threading.Thread(target=lambda: made.append(transport.client()))
    thread.start()
    thread.join()
    del thread
    gc.collect()
    assert made[0].is_closed
    assert transport.client() is transport.client()  # this thread's own, made once
    transport.close()
