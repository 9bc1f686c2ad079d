"""A routed KB server on loopback, and a model whose provider points at it."""

from __future__ import annotations

import pytest
from servers import TOKEN, KbServer, free_port  # noqa: F401 (the bridge tests import them from here)
from servers.faulty import Faulty


@pytest.fixture
def kb_server(tmp_path):
    started: list[KbServer] = []

    def start(mode: str = "stateful", idle: float | None = None, kbs: str = "handbook,api-a,api-b",
              options: tuple[str, ...] = ()) -> KbServer:
        server = KbServer(tmp_path, mode, idle, kbs, options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def faulty():
    """A fault-injecting upstream (tests/servers/faulty.py) in this process."""
    started: list[Faulty] = []

    def start(fault: str = "none") -> Faulty:
        server = Faulty(fault)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
