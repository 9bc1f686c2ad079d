"""A routed KB server on loopback, and a model whose provider points at it."""

from __future__ import annotations

import pytest
from servers import TOKEN, KbServer, free_port  # noqa: F401 (the bridge tests import them from here)


@pytest.fixture
def kb_server(tmp_path):
    started: list[KbServer] = []

    def start(mode: str = "stateful", idle: float | None = None, kbs: str = "handbook,api-a,api-b") -> KbServer:
        server = KbServer(tmp_path, mode, idle, kbs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
