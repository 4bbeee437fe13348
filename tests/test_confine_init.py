"""The view's init as a real process (docs/confinement.md#what-it-does-not-hold): its bridge's threads block
the signals it forwards, so every SIGINT, SIGTERM and SIGHUP lands on the main thread and reaches the
harness; one a bridge thread took stayed caught and unforwarded until the harness ended."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
HARNESS = "import signal; signal.signal(signal.SIGINT, signal.SIG_DFL); print('up', flush=True); signal.pause()"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _blocked(task: Path) -> int:
    return int(next(line for line in (task / "status").read_text().splitlines() if line.startswith("SigBlk:")).split()[1], 16)


def test_the_bridge_threads_block_what_the_init_forwards_and_a_sigint_reaches_the_harness(tmp_path: Path) -> None:
    route = tmp_path / "route.sock"
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    upstream.bind(str(route))
    upstream.listen(4)
    port = _free_port()
    init = subprocess.Popen(
        [sys.executable, "-m", "metaharness.shell.confine_init", "--bridge", str(port), "--socket", str(route),
         "--", sys.executable, "-c", HARNESS],
        stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        assert init.stdout is not None and init.stdout.readline() == b"up\n"
        client = socket.create_connection(("127.0.0.1", port), timeout=30)
        joined, _ = upstream.accept()  # the bridge joined the connection: its pump threads run
        tasks = Path(f"/proc/{init.pid}/task")
        deadline = time.monotonic() + 30
        while len(list(tasks.iterdir())) < 4:  # main, the listener, and a connection's two pumps
            assert time.monotonic() < deadline, "the bridge never started its pumps"
            time.sleep(0.01)
        mask = sum(1 << (number - 1) for number in FORWARDED)
        threads = [task for task in tasks.iterdir() if task.name != str(init.pid)]
        assert all(_blocked(task) & mask == mask for task in threads), [hex(_blocked(task)) for task in threads]
        assert _blocked(tasks / str(init.pid)) & mask == 0
        init.send_signal(signal.SIGINT)
        assert init.wait(timeout=30) == 128 + signal.SIGINT  # the harness ended by the forwarded SIGINT
        client.close()
        joined.close()
    finally:
        if init.poll() is None:
            init.kill()
            init.wait()
        upstream.close()
