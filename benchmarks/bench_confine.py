"""Confinement benchmarks (issue 10), printed as ratios against baselines measured in the same run.

1. Start-up: a confined ``metaharness run b10x --decisions observe`` against the emulator's ``text``
   scenario relative to the same run ``--confine off``, medians over interleaved runs: the ratio and the
   absolute delta (aim ≤ 40 ms, the substrate's trial excluded; the trial's own median is reported, each
   CLI process runs it once).
2. A model request through the bridge and the route proxy relative to the same request sent directly to
   the emulator: the median added time (aim ≤ 1 ms).

``doctor`` with the view against the binary's part alone is ``benchmarks/bench_doctor.py``.

Run: ``.venv/bin/python benchmarks/bench_confine.py [runs]`` (default 15).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from metaharness.pure.codex.adapter import LOOPBACK as CODEX_LOOPBACK
from metaharness.pure.codex.vendor import WIRE_PATHS as CODEX_WIRE
from metaharness.shell.confine_init import bridge
from metaharness.shell.loopback import RouteProxy

BIN = Path(sys.executable).parent
BODY = json.dumps({"model": "b10x-emulated", "input": "hello", "stream": False}).encode()


def emulator(scenario: str) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen([str(BIN / "b10x-emulator"), "--scenario", scenario], stdout=subprocess.PIPE)
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())["base_url"]


def timed(argv: list[str], env: dict[str, str]) -> float:
    begin = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, stdin=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - begin
    assert done.returncode == 0, done.stderr.decode()
    return elapsed


def start_up(runs: int, home: Path) -> None:
    process, base_url = emulator("text")
    try:
        env = {"HOME": str(home), "PATH": os.environ["PATH"]}
        argv = [str(BIN / "metaharness"), "run", "b10x", "--decisions", "observe", "--model", "b10x-emulated",
                "--model-endpoint", base_url, "-p", "hello"]  # fmt: skip
        confined: list[float] = []
        unconfined: list[float] = []
        for _ in range(runs):
            confined.append(timed(argv, env))
            unconfined.append(timed([*argv, "--confine", "off"], env))
    finally:
        process.terminate()
        process.wait()
    trial = [timed(["/usr/bin/bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--as-pid-1", "--",
                    "/bin/true"], env) for _ in range(runs)]  # fmt: skip
    on, off, tried = statistics.median(confined), statistics.median(unconfined), statistics.median(trial)
    print(f"1. start-up: confined {on * 1000:.1f} ms, --confine off {off * 1000:.1f} ms median over {runs} runs: "
          f"{on / off:.3f}x, +{(on - off) * 1000:.1f} ms (+{(on - off - tried) * 1000:.1f} ms without the "
          f"{tried * 1000:.1f} ms trial)")  # fmt: skip


def post(connection: http.client.HTTPConnection, path: str) -> float:
    begin = time.perf_counter()
    connection.request("POST", path, BODY, {"Content-Type": "application/json", "Connection": "close"})
    connection.getresponse().read()
    elapsed = time.perf_counter() - begin
    connection.close()
    return elapsed


def route(requests: int) -> None:
    process, base_url = emulator("text")
    scratch = tempfile.mkdtemp(prefix="bench-confine-")
    origin = base_url.removesuffix("/v1")
    proxy = RouteProxy(CODEX_LOOPBACK, None, None, origin, CODEX_WIRE)
    proxy.start(os.path.join(scratch, "route.sock"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    listener = bridge(port, os.path.join(scratch, "route.sock"))
    host, emulator_port = origin.removeprefix("http://").split(":")
    try:
        direct: list[float] = []
        routed: list[float] = []
        for _ in range(requests):
            direct.append(post(http.client.HTTPConnection(host, int(emulator_port)), "/v1/responses"))
            routed.append(post(http.client.HTTPConnection("127.0.0.1", port), "/v1/responses"))
    finally:
        listener.close()
        proxy.stop()
        process.terminate()
        process.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    plain, through = statistics.median(direct), statistics.median(routed)
    print(f"2. a model request: direct {plain * 1000:.2f} ms, through bridge + route proxy {through * 1000:.2f} ms "
          f"median over {requests}: {through / plain:.2f}x, +{(through - plain) * 1000:.2f} ms")  # fmt: skip


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory() as directory:
        home = Path(directory) / "home"
        (home / ".local" / "bin").mkdir(parents=True)
        (home / ".local" / "bin" / "b10x-harness").symlink_to(BIN / "b10x-harness")
        start_up(runs, home)
        route(runs * 20)


if __name__ == "__main__":
    main()
