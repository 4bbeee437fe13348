"""An endpoint for runs whose child never asks the model (stand-in harnesses): a loopback listener that
accepts each connection and closes it at once, so ``run``'s pre-flight connect to ``--model-endpoint``
succeeds (docs/cli.md#the-endpoint-pre-flight) and a child that did send a request would fail fast, as
against a port where nothing listens. One listener per test process, on a port the OS chose."""

from __future__ import annotations

import socket
import threading


def _serve(listener: socket.socket) -> None:
    while True:
        connection, _ = listener.accept()
        connection.close()


def _listen() -> str:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener,), daemon=True, name="closing-endpoint").start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}"


CLOSING_ENDPOINT = _listen()
"""``http://127.0.0.1:<port>``: a gateway root that accepts and closes every connection."""
