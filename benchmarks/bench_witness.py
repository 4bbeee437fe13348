"""The route witness's cost per model request (docs/decisions.md#the-route-witness), against a baseline
measured in the same run.

Each request is a Claude-Code-sized Messages body (a 20 KiB system text, 30 tools with their schemas, and a
history that grows by one tool call and its result per turn, up to ``TURNS``) answered by the emulator's
streamed reply. Witnessed per request: the request decoded for its tool results, the answer decoded for
its calls through the wire's own stream decoder, and both folded into the account — what the route
proxy's observer does. The baseline is one plain ``msgspec`` decode of the same body into Python values,
the least any reader of the request must pay. Reported: median and p99 per request in ms and the
ratio to the baseline; aim for a median ≤ 0.2 ms.

Run: ``.venv/bin/python benchmarks/bench_witness.py [TURNS]``.
"""

from __future__ import annotations

import statistics
import sys
import time

import msgspec

from metaharness.pure.emulator import messages
from metaharness.pure.emulator.reply import Call, Ids, Reply
from metaharness.pure.emulator.sse import sse_frame
from metaharness.pure.jsonline import compact
from metaharness.pure.witness import RouteAccount, read_exchange, witness

TURNS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
ROUNDS = 20
SCHEMA = {"type": "object", "properties": {f"field_{k}": {"type": "string", "description": "x" * 40} for k in range(12)}}


def body(turn: int) -> bytes:
    history: list[dict[str, object]] = [{"role": "user", "content": [{"type": "text", "text": "do the task " * 50}]}]
    for k in range(1, turn):
        call_id = f"toolu_{k:04d}"
        history.append({"role": "assistant", "content": [
            {"type": "text", "text": "running the next step"},
            {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": f"echo step {k}", "description": "d"}}]})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": "output line\n" * 40, "is_error": False}]})
    return compact({"model": "m", "max_tokens": 8192, "stream": True, "system": [{"type": "text", "text": "s" * 20480}],
                    "tools": [{"name": f"Tool{k}", "description": "d" * 300, "input_schema": SCHEMA} for k in range(30)],
                    "messages": history})  # fmt: skip


def answer(turn: int) -> bytes:
    reply = Reply(call=Call("Bash", compact({"command": f"echo step {turn}"}).decode()))
    return b"".join(sse_frame(event) for event in messages.stream_events(reply, Ids(n=turn, call=turn, model="m")))


def main() -> None:
    exchanges = [(body(turn), answer(turn)) for turn in range(1, TURNS + 1)]
    decoder = msgspec.json.Decoder()
    witnessed: list[float] = []
    baseline: list[float] = []
    for _ in range(ROUNDS):
        account = RouteAccount()
        for request, response in exchanges:
            started = time.perf_counter()
            exchange = read_exchange("/v1/messages?beta=true", request, response)
            assert exchange is not None
            account = witness(account, exchange)
            witnessed.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            decoder.decode(request)
            baseline.append((time.perf_counter() - started) * 1000)
        assert len(account.emitted) == TURNS
    sizes = [len(request) for request, _ in exchanges]
    median, base = statistics.median(witnessed), statistics.median(baseline)
    p99 = sorted(witnessed)[int(0.99 * len(witnessed))]
    print(f"requests {len(witnessed)} ({TURNS} turns x {ROUNDS} rounds), bodies {min(sizes)}..{max(sizes)} bytes")
    print(f"witness per request: median {median:.3f} ms, p99 {p99:.3f} ms (aim: median <= 0.2 ms)")
    print(f"baseline (plain decode of the body): median {base:.3f} ms; ratio {median / base:.2f}")


if __name__ == "__main__":
    main()
