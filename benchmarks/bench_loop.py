"""Loop and wire benchmarks (issue 3), printed as ratios against baselines measured in the same run.

1. The loop's own cost per turn against the emulator, relative to the emulator's raw SSE round trip
   (the same request bytes POSTed and the stream read to its end with httpx): aim ≤ 1.3×.
2. SSE framing plus Responses decoding throughput, relative to ``msgspec.json.decode`` of the same
   payloads: aim ≥ 0.5×.

Run: ``.venv/bin/python benchmarks/bench_loop.py``.
"""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import msgspec

from metaharness.pure.loop.catalogue import publish
from metaharness.pure.loop.plan import RunFlags
from metaharness.pure.wires import openai_responses
from metaharness.pure.wires.neutral import TurnRequest, UserText
from metaharness.pure.wires.sse import frame_sse
from metaharness.shell.loop import command

EMULATOR = str(Path(sys.executable).parent / "b10x-emulator")
TURNS = 200


def _flags(base_url: str, workspace: str) -> RunFlags:
    values = dict.fromkeys(RunFlags.__struct_fields__)
    values.update(
        input="go", base_url=base_url, model="b10x-emulated", wire="openai-responses", workspace=workspace,
        json=True, quiet=True, execution_path="direct", context=(), no_project_instructions=True, approve="deny",
        approve_up_to="low", yes=False, allow_program=(), write_scope=(), scope_announce="stated", no_session=True,
        given_not_built=(),
    )
    return RunFlags(**values)


def _loop_seconds_per_run(base_url: str, workspace: str) -> float:
    """Median seconds of one whole in-process ``run``, record written to a buffer."""
    flags = _flags(base_url, workspace)
    real_stdout = sys.stdout
    timings = []
    for _ in range(TURNS):
        sys.stdout = io.TextIOWrapper(io.BytesIO())
        begin = time.perf_counter()
        code = command.start(flags)
        timings.append(time.perf_counter() - begin)
        sys.stdout = real_stdout
        assert code == 0
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return sorted(timings)[len(timings) // 2]


def _raw_seconds_per_round_trip(base_url: str, body: bytes) -> float:
    """Median seconds of POSTing the same bytes and reading the SSE stream to its end."""
    timings = []
    with httpx.Client(trust_env=False) as client:
        for _ in range(TURNS):
            begin = time.perf_counter()
            with client.stream("POST", base_url + "/responses", content=body,
                               headers={"content-type": "application/json", "accept": "text/event-stream"}) as reply:
                for _chunk in reply.iter_raw():
                    pass
            timings.append(time.perf_counter() - begin)
    return sorted(timings)[len(timings) // 2]


def _median_run(scenario: str, workspace: str) -> tuple[float, float]:
    """Median seconds of an in-process run of ``scenario``, and the raw round trip against the same emulator."""
    emulator = subprocess.Popen([EMULATOR, "--scenario", scenario], stdout=subprocess.PIPE, text=True)
    try:
        assert emulator.stdout is not None
        base_url = json.loads(emulator.stdout.readline())["base_url"]
        raw = _raw_seconds_per_round_trip(base_url, _captured_body())
        return _loop_seconds_per_run(base_url, workspace), raw
    finally:
        emulator.send_signal(signal.SIGTERM)
        emulator.wait(timeout=10)


def bench_loop_turn() -> None:
    with tempfile.TemporaryDirectory() as workspace:
        Path(workspace, "README.md").write_text("hello harness\n")
        one_turn, raw = _median_run("text", workspace)
        two_turns, _ = _median_run("flat-tool", workspace)
    marginal = two_turns - one_turn
    print(
        f"loop turn (a second turn with its file_read, the run's set-up excluded): {marginal * 1000:.2f} ms; "
        f"raw SSE round trip: {raw * 1000:.2f} ms; ratio {marginal / raw:.2f}x (aim <= 1.3x)"
    )
    print(
        f"whole one-turn run in process (client, instruction and record set-up included): {one_turn * 1000:.2f} ms; "
        f"ratio {one_turn / raw:.2f}x"
    )


def _captured_body() -> bytes:
    """Bytes the size of the loop's first turn, projected by the production wire."""
    request = TurnRequest("b10x-emulated", "You are b10x-harness.\n", (UserText("go"),), publish(True, ()).specs())
    return openai_responses.project_request(request, "b10x-bench").unwrap().body


def _stream(events: int) -> tuple[bytes, list[bytes]]:
    payloads = []
    for index in range(events):
        delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                 "sequence_number": index, "delta": f"token {index} of the answer "}
        payloads.append(json.dumps(delta).encode())
    terminal = {"type": "response.completed", "response": {"status": "completed", "model": "m", "output": [
        {"type": "message", "content": [{"type": "output_text", "text": "done"}]}],
        "usage": {"input_tokens": 1, "output_tokens": 1, "input_tokens_details": {"cached_tokens": 0}}}}
    payloads.append(json.dumps(terminal).encode())
    stream = b"".join(b"event: x\ndata: " + p + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"
    return stream, payloads


def bench_sse_decode() -> None:
    stream, payloads = _stream(20000)
    chunks = [stream[i : i + 4096] for i in range(0, len(stream), 4096)]
    decoder = msgspec.json.Decoder()
    baseline = ours = float("inf")
    for _ in range(7):
        begin = time.perf_counter()
        decoded = [decoder.decode(payload) for payload in payloads]
        baseline = min(baseline, time.perf_counter() - begin)
        begin = time.perf_counter()
        events = list(openai_responses.decode_stream(frame_sse(chunks), "m"))
        ours = min(ours, time.perf_counter() - begin)
    assert len(events) == len(decoded) == 20001
    megabytes = len(stream) / 1e6
    print(
        f"SSE decode: {megabytes / ours:.1f} MB/s; msgspec.json.decode of the payloads: {megabytes / baseline:.1f} MB/s; "
        f"throughput ratio {baseline / ours:.2f}x (aim >= 0.5x)"
    )


if __name__ == "__main__":
    bench_sse_decode()
    bench_loop_turn()
