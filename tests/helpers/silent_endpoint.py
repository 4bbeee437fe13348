"""A model endpoint that listens and never answers, for tests that act on a run mid-turn: the kernel
completes the connect (the run's pre-flight passes) and takes the request, and no answer ever comes, so
the turn is still in flight whenever the test acts, however loaded the machine."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """A loopback listener that accepts nothing; yields its base URL (with ``/v1``); closed after."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as listener:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
