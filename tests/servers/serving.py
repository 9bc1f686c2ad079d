"""How the test servers on uvicorn serve: on the socket their test reserved and handed down
(``--fd N``: tests/servers/__init__.py's ``started``), else on ``--port`` (a run by hand)."""

from __future__ import annotations

import argparse
import socket
from typing import Any

import uvicorn


def add_listen_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, required=True, help="the port (in its URLs; bound here without --fd)")
    parser.add_argument("--fd", type=int, default=None, help="an inherited socket bound to --port, to listen on")


def serve(app: Any, options: argparse.Namespace, **settings: Any) -> None:
    """uvicorn's run of ``app`` on 127.0.0.1; ``settings``: more of uvicorn.Config's."""
    config = uvicorn.Config(app, host="127.0.0.1", port=options.port, **settings)
    sockets = [socket.socket(fileno=options.fd)] if options.fd is not None else None
    uvicorn.Server(config).run(sockets=sockets)
