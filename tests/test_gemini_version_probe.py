"""A confined gemini run starts its child before its ``gemini --version`` probe has answered, and the probe's
version still reaches ``session.started`` (docs/adapters/gemini.md#version-probe): a ``gemini`` of the test's
own on the child's PATH floor runs the pinned Gemini CLI, except that its ``--version`` first waits on a FIFO the
test opens only once the child's first model request has reached the endpoint."""

from __future__ import annotations

import os
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from codex_process import of
from gemini_process import GEMINI, PINNED, endpoint, finish, start_run

pytestmark = [
    pytest.mark.skipif(GEMINI is None, reason=f"the pinned Gemini CLI {PINNED} is not on the child's PATH"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

GATED = """#!/bin/sh
if [ "$1" = "--version" ]; then
  read -r _ < {gate}
  echo "$PWD $HOME $GEMINI_CLI_HOME $TMPDIR" >> {log}
fi
exec {real} "$@"
"""


@contextmanager
def first_request_seen(upstream: str) -> Iterator[tuple[str, threading.Event]]:
    """An endpoint of the test's own forwarding each request to ``upstream``; the event is set at the first."""
    seen = threading.Event()

    class Forward(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.set()
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = urllib.request.Request(upstream + self.path, data=body, method="POST",
                                             headers={"Content-Type": self.headers.get("Content-Type", "")})  # fmt: skip
            with urllib.request.urlopen(request, timeout=60) as answer:
                data = answer.read()
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.headers.get("Content-Type", ""))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def gated_gemini(tmp_path: Path, own_home: Path) -> tuple[Path, Path, str]:
    """The pinned CLI behind a ``gemini`` whose ``--version`` waits on the FIFO ``gate`` and logs where it ran:
    the gate, the log and the CLI's ``node_modules`` (for the view)."""
    assert GEMINI is not None
    real = os.path.realpath(GEMINI)
    gate, log = tmp_path / "gate", tmp_path / "probe.log"
    os.mkfifo(gate)
    program = own_home / ".local" / "bin" / "gemini"
    program.unlink()
    program.write_text(GATED.format(gate=gate, log=log, real=real))
    program.chmod(0o755)
    return gate, log, real[: real.index("/node_modules/") + len("/node_modules")]


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_the_child_is_spawned_before_the_probe_answers(emulator: str, tmp_path: Path, own_home: Path) -> None:
    gate, log, modules = gated_gemini(tmp_path, own_home)
    with first_request_seen(emulator) as (root, seen):
        run = start_run(endpoint(root, decisions="observe", confine="on", confine_read=[modules]))
        assert seen.wait(timeout=120), "the child made no model request while its probe was waiting"
        assert not log.exists()
        with open(gate, "w") as opened:
            opened.write("go\n")
        events, code, stderr = finish(run)
    assert code == 0, stderr
    (where,) = set(log.read_text().split())  # its own directory: no file a tool wrote, not the child's home
    assert where.endswith("/version-probe") and not os.path.exists(where)
    (started,) = of(events, "session.started")
    assert events[0] is started and started["harness_version"] == PINNED
    assert events[-1]["reason"] == "completed"


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_strict_version_still_probes_before_the_spawn(emulator: str, tmp_path: Path, own_home: Path) -> None:
    """Under ``--strict-version`` the probe answers first: a gated ``--version`` holds the child back, so the
    endpoint sees no request until the gate opens."""
    gate, _, modules = gated_gemini(tmp_path, own_home)
    with first_request_seen(emulator) as (root, seen):
        run = start_run(endpoint(root, decisions="observe", confine="on", confine_read=[modules],
                                 strict_version=True))  # fmt: skip
        with open(gate, "w") as opened:
            assert not seen.is_set()
            opened.write("go\n")
        events, code, stderr = finish(run)
    assert code == 0, stderr
    assert seen.is_set() and of(events, "session.started")[0]["harness_version"] == PINNED
