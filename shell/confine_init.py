"""The confined child's init and bridge: ``python -m metaharness.shell.confine_init [--bridge PORT --socket
PATH] -- ARGV…`` runs inside the view (docs/confinement.md).

With ``--bridge`` it listens on ``127.0.0.1:PORT`` in the view's own network namespace and joins each
connection to the route proxy's Unix socket ``PATH``, the view's one way out. It spawns ``ARGV`` with
its own standard streams and directory in a process group of its own, with the environment metaharness
attested (what bwrap and this init add, ``PWD`` and ``PYTHONCOERCECLOCALE``, removed), forwards SIGINT,
SIGTERM and SIGHUP to that group and exits with its status (128+N for a signal). It writes nothing to stdout.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading

from metaharness.shell.unix_address import unix_address

CHUNK = 65536
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
ADDED = ("PWD", "PYTHONCOERCECLOCALE")
"""What reaches this init without being the harness's: bwrap's ``PWD`` for its ``--chdir``, and the
setting that kept this Python from coercing the locale (and adding ``LC_CTYPE``); the constructed
environment names neither (docs/hermetic.md#environment-floor)."""


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(CHUNK):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _join(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with unix_address(path) as address:
            upstream.connect(address)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_join, args=(client, path), daemon=True).start()


def bridge(port: int, path: str) -> socket.socket:
    """Listen on ``127.0.0.1:port`` and join every connection to the Unix socket ``path``."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    return listener


_harness: list[int] = []


def _forward(number: int) -> None:
    """Pass a signal on to the harness's process group (before the harness started: nothing)."""
    for pid in _harness:
        try:
            os.killpg(pid, number)
        except ProcessLookupError:
            pass


def main(argv: list[str]) -> int:
    """Start the bridge when asked, then the harness; its exit status. The bridge's threads are started
    with the forwarded signals blocked, so the kernel hands each one to this main thread, whose wait it
    interrupts: one a bridge thread took was caught but never forwarded until the harness ended
    (docs/confinement.md#what-it-does-not-hold)."""
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    if "--bridge" in options:
        bridge(int(options[options.index("--bridge") + 1]), options[options.index("--socket") + 1])
    for number in FORWARDED:
        signal.signal(number, lambda received, _frame: _forward(received))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    environment = {key: value for key, value in os.environ.items() if key not in ADDED}
    pid = os.posix_spawnp(command[0], command, environment, setpgroup=0)
    _harness.append(pid)
    _, status = os.waitpid(pid, 0)
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


if __name__ == "__main__":
    try:
        status = main(sys.argv[1:])
    except OSError as error:
        sys.stderr.write(f"metaharness confine_init: {error}\n")
        status = 127
    sys.stdout.flush()
    os._exit(status)
