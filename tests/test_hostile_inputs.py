"""Hostile inputs through real processes and stand-in harnesses: record lines (claude, codex, b10x)
nested 100,000 deep or past their size bound, steering lines likewise, a hook request nested deep, a
``tools/call`` to ``mcp-serve`` nested deep, ``replay`` of such a record, and negative costs and counts
each take the reader's named outcome, and the run still closes its stream."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from pathlib import Path

from closing_endpoint import CLOSING_ENDPOINT
from governed_b10x import LOOP, stream
from stand_in import records_body, stand_in

from metaharness.pure.bounds import COMMAND_LINE_LIMIT, RECORD_LINE_LIMIT
from metaharness.pure.hook_channel import UNREADABLE_REQUEST
from metaharness.pure.refusal import Refusal

DEEP = b"[" * 100_000 + b"]" * 100_000
CLAUDE_RECORD = (Path(__file__).parent.parent / "vectors" / "claude" / "record" / "bash.jsonl").read_bytes().splitlines()
B10X_OPENING = [b'{"kind":"started","model":"m","workspace":"."}', b'{"kind":"turn-started","turn":1}']
B10X_FINISHED = b'{"kind":"finished","stop":"end_turn","turns":1}'


def metaharness(home: Path, args: list[str], stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "metaharness.shell", *args], input=stdin, env=env, cwd=cwd, capture_output=True,
        timeout=120, check=False,
    )  # fmt: skip


def opaque_lines(events: list[dict]) -> list[int]:
    return [e["source_line"] for e in events if e["event"] == "opaque"]


def assert_no_model_answered(done: subprocess.CompletedProcess[bytes], events: list[dict]) -> None:
    """The stand-in's terminal record says it completed, but it is confined and sent the route nothing, so the run
    closes error with ``RUN_FAILED`` and exits 3 (docs/events.md#stream-ending)."""
    assert done.returncode == 3, done.stderr
    assert events[-1]["reason"] == "error" and events[-1]["process"] == {"kind": "exited", "code": 0}
    assert events[-2]["code"] == "RUN_FAILED" and events[-2]["message"].startswith("the model route carried no request")


def test_claude_records_nested_deep_and_past_the_bound_are_opaque(tmp_path: Path) -> None:
    huge = b'{"type":"assistant","message":{"content":"' + b"x" * (RECORD_LINE_LIMIT + 4096) + b'"}}'
    deep = b'{"type":"assistant","message":' + DEEP + b"}"
    stand_in(tmp_path, "claude", records_body([CLAUDE_RECORD[0], deep, huge, *CLAUDE_RECORD[1:]]))
    args = ["run", "claude", "--credentials", "none", "--model-endpoint", CLOSING_ENDPOINT, "-p", "hi"]
    done = metaharness(tmp_path, [*args, "--decisions", "observe"])
    events = stream(done)
    assert opaque_lines(events) == [2, 3]
    assert_no_model_answered(done, events)


def test_b10x_records_nested_deep_and_past_the_bound_are_opaque(tmp_path: Path) -> None:
    deep = b'{"kind":"tool-requested","call_id":"c1","name":"file_read","arguments":' + DEEP + b"}"
    huge = b'{"kind":"text-delta","text":"' + b"y" * (RECORD_LINE_LIMIT + 4096) + b'"}'
    stand_in(tmp_path, "b10x-harness", records_body([*B10X_OPENING, deep, huge, B10X_FINISHED]))
    done = metaharness(tmp_path, ["run", "b10x", "-p", "hi", "--model", "m", "--model-endpoint", CLOSING_ENDPOINT,
                                  "--decisions", "observe"])  # fmt: skip
    events = stream(done)
    assert opaque_lines(events) == [3, 4]
    assert not [e for e in events if e["event"] == "tool.requested"]


def test_steering_lines_nested_deep_or_past_the_bound_are_refused_and_the_next_command_still_acts(tmp_path: Path) -> None:
    stand_in(tmp_path, "b10x-harness", records_body(B10X_OPENING) + "import time\ntime.sleep(120)\n")
    deep = b'{"format":"metaharness.command/1","id":"k1","command":"halt","x":' + DEEP + b"}\n"
    huge = b'{"format":"metaharness.command/1","id":"k3","command":"halt","reason":"' + b"w" * COMMAND_LINE_LIMIT + b'"}\n'
    halt = b'{"format":"metaharness.command/1","id":"k2","command":"halt","reason":"enough"}\n'
    done = metaharness(tmp_path, ["run", "b10x", "-p", "hi", "--model", "m", "--model-endpoint", CLOSING_ENDPOINT,
                                  "--decisions", "observe"], stdin=deep + huge + halt)  # fmt: skip
    events = stream(done)
    *refusals, outcome = done.stderr.decode().splitlines()
    assert len(refusals) == 2 and "JSON nested deeper than 128" in refusals[0]
    assert refusals[1].startswith("metaharness: the steering line was refused: not a JSON object: ")
    assert outcome.endswith("failed (exit 3): the stream closed steer-halt"), outcome  # docs/cli.md, the failure line
    assert [e["id"] for e in events if e["event"] == "command.result"] == ["k2"]
    assert events[-1]["reason"] == "steer-halt"


def test_mcp_serve_answers_around_a_deep_tools_call(tmp_path: Path) -> None:
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_search","arguments":' + DEEP + b"}}\n"
    ping = b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    done = subprocess.run(
        [sys.executable, "-m", "metaharness.shell", "mcp-serve", "--workspace", str(tmp_path)],
        input=call + ping, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [2]
    assert "skipped a line that is not JSON: JSON nested deeper than 128" in done.stderr.decode()


def test_replay_maps_a_deep_record_line_as_opaque(tmp_path: Path) -> None:
    record = tmp_path / "loop.jsonl"
    record.write_bytes(b"\n".join([*B10X_OPENING, DEEP, B10X_FINISHED]) + b"\n")
    done = metaharness(tmp_path, ["replay", "b10x", str(record)])
    assert opaque_lines(stream(done)) == [3]


def test_negative_costs_and_counts_from_a_loop_record_do_not_pass_through(tmp_path: Path) -> None:
    lines = [*B10X_OPENING, b'{"kind":"usage","input_tokens":-40,"output_tokens":3}', b'{"kind":"cost","micro_usd":-5}',
             b'{"kind":"cost","micro_usd":1234}', b'{"kind":"finished","stop":"end_turn","turns":-3}']  # fmt: skip
    stand_in(tmp_path, "b10x-harness", records_body(lines))
    done = metaharness(tmp_path, ["run", "b10x", "-p", "hi", "--model", "m", "--model-endpoint", CLOSING_ENDPOINT,
                                  "--decisions", "observe"])  # fmt: skip
    events = stream(done)
    assert opaque_lines(events) == [3, 4]
    ended = next(e for e in events if e["event"] == "session.ended")
    assert ended["total_cost_usd"] == 0.001234 and ended["num_turns"] is None


def test_negative_costs_and_counts_from_a_claude_result_do_not_pass_through(tmp_path: Path) -> None:
    result = json.loads(CLAUDE_RECORD[-1])
    result.update(num_turns=-2, total_cost_usd=-1.5, duration_ms=-9)
    result["usage"]["output_tokens"] = -12
    stand_in(tmp_path, "claude", records_body([*CLAUDE_RECORD[:-1], json.dumps(result).encode()]))
    args = ["run", "claude", "--credentials", "none", "--model-endpoint", CLOSING_ENDPOINT, "-p", "hi"]
    events = stream(metaharness(tmp_path, [*args, "--decisions", "observe"]))
    ended = next(e for e in events if e["event"] == "session.ended")
    assert ended["num_turns"] is None and ended["total_cost_usd"] is None and ended["duration_ms"] is None
    assert ended["usage"]["output_tokens"] is None


HOOK_CALLER = """
import json
request = json.loads(sys.stdin.buffer.readline())
reply = {{"subtype": "success", "request_id": request["request_id"],
          "response": {{"hooks_applied": True, "hook_on_failure_supported": True}}}}
sys.stdout.buffer.write(json.dumps({{"type": "control_response", "response": reply}}).encode() + b"\\n")
sys.stdout.buffer.flush()
sys.stdin.buffer.readline()
record = {record!r}
out = sys.stdout.buffer
for number, line in enumerate(record):
    out.write(line + b"\\n")
    out.flush()
    if number == 1:
        out.write(b'{{"type":"control_request","request_id":"deep-1","request":{{"subtype":"hook_callback",'
                  b'"callback_id":"metaharness-pretooluse","input":' + {request!r} + b'}}}}\\n')
        out.flush()
        open("hook-answer", "wb").write(sys.stdin.buffer.readline())
"""


def test_a_hook_request_nested_deep_is_answered_and_the_run_closes(tmp_path: Path) -> None:
    vectors = Path(__file__).parent.parent / "vectors" / "claude" / "hook"
    request = json.loads((vectors / "request.json").read_bytes())
    request["tool_input"] = {"command": "echo emulated"}
    deep = json.dumps(request).encode().replace(b'{"command": "echo emulated"}', DEEP)
    record = (vectors / "record.jsonl").read_bytes().splitlines()
    stand_in(tmp_path, "claude", HOOK_CALLER.format(record=record, request=deep))
    work = tmp_path / "ws"
    work.mkdir()
    args = ["run", "claude", "--credentials", "none", "--model-endpoint", CLOSING_ENDPOINT, "-p", "hi"]
    done = metaharness(tmp_path, [*args, "--decisions", "ask", "--cwd", str(work)])
    events = stream(done)
    assert b"internal-error" not in done.stderr
    assert events[-1]["event"] == "stream.closed"
    unreadable = next(e for e in events if e["event"] == "tool.decided")
    assert unreadable["decided_by"] == "adapter" and unreadable["decision"]["reason"] == UNREADABLE_REQUEST
    answer = json.loads((work / "hook-answer").read_bytes())["response"]
    assert answer["request_id"] == "deep-1" and answer["response"]["hookSpecificOutput"]["permissionDecision"] == "deny"


ROLLOUT_WRITER = """
import os
path = os.path.join(os.environ["CODEX_HOME"], "sessions", "2026", "11", "30", "rollout-2026-11-30T00-00-00-x.jsonl")
os.makedirs(os.path.dirname(path))
with open(path, "wb") as rollout:
    for line in {lines!r}:
        rollout.write(line + b"\\n")
"""


def test_codex_rollout_lines_nested_deep_and_past_the_bound_are_opaque(tmp_path: Path) -> None:
    record = (Path(__file__).parent.parent / "vectors" / "codex" / "record" / "patch.jsonl").read_bytes().splitlines()
    deep = b'{"timestamp":"2026-11-30T01:32:00.302Z","type":"event_msg","payload":' + DEEP + b"}"
    huge = b'{"timestamp":"2026-11-30T01:32:00.302Z","type":"event_msg","payload":"' + b"z" * (RECORD_LINE_LIMIT + 1) + b'"}'
    stand_in(tmp_path, "codex", ROLLOUT_WRITER.format(lines=[*record[:2], deep, huge, *record[2:]]))
    args = ["run", "codex", "--credentials", "none", "--model-endpoint", CLOSING_ENDPOINT, "-p", "hi"]
    done = metaharness(tmp_path, [*args, "--decisions", "observe"])
    events = stream(done)
    assert opaque_lines(events)[:2] == [3, 4]
    assert_no_model_answered(done, events)


def test_a_harness_stderr_tail_reaches_the_failure_line_as_text(tmp_path: Path) -> None:
    """The failure line (docs/cli.md#progress-on-stderr) names the harness's stderr tail, which the child writes:
    its escape and bell bytes are shown as ``\\u`` escapes of four hex digits, never sent to the terminal
    (docs/view.md#control-characters), and the line stays one line."""
    forged = "\x1b[2K\rcontrol verdict: ok\x1b]52;c;ZWNobyBoaQ==\x07"
    body = records_body(B10X_OPENING) + f"sys.stderr.write({forged!r})\nsys.stderr.flush()\nsys.exit(1)\n"
    stand_in(tmp_path, "b10x-harness", body)
    done = metaharness(tmp_path, ["run", "b10x", "-p", "hi", "--model", "m", "--model-endpoint", CLOSING_ENDPOINT,
                                  "--decisions", "observe"])  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert stream(done)[-2]["code"] == "NO_TERMINAL_RECORD"
    failure = done.stderr.splitlines()[-1]
    assert failure.startswith(b"metaharness: run ") and b"failed (exit 3)" in failure
    assert b"\x1b" not in done.stderr and b"\x07" not in done.stderr and b"\r" not in done.stderr
    assert failure.endswith(b"its stderr ended: \\u001b[2K control verdict: ok\\u001b]52;c;ZWNobyBoaQ==\\u0007")


def test_a_refusal_line_shows_a_childs_name_as_text() -> None:
    """A refusal's message may name what the child made (a file, a key): its line is one line of text."""
    line = Refusal("name-refused", "ws/\x1b]0;owned\x07\nmetaharness: ok").line()
    assert line == "metaharness: name-refused: ws/\\u001b]0;owned\\u0007 metaharness: ok"


def test_a_confined_harness_signalling_every_process_it_can_reaches_no_host_process(tmp_path: Path) -> None:
    """``kill(-1, SIGKILL)`` from the confined harness (docs/confinement.md, "Signals"): its PID namespace holds only
    the view, so metaharness (its route proxy and hook server are its threads) lives on and closes the stream."""
    body = records_body(B10X_OPENING) + (
        "import os, signal\nseen = [pid for pid in map(int, filter(str.isdigit, os.listdir('/proc')))]\n"
        "sys.stderr.write('sees %d processes' % len(seen))\nsys.stderr.flush()\nos.kill(-1, signal.SIGKILL)\nsys.exit(1)\n"
    )
    stand_in(tmp_path, "b10x-harness", body)
    done = metaharness(tmp_path, ["run", "b10x", "-p", "hi", "--model", "m", "--model-endpoint", CLOSING_ENDPOINT,
                                  "--decisions", "observe"])  # fmt: skip
    assert done.returncode == 3, done.stderr
    events = stream(done)
    assert events[-1]["event"] == "stream.closed" and events[-1]["reason"] == "error"
    assert events[-2]["message"].endswith("sees 3 processes"), events[-2]["message"]  # bwrap's pid 1, the init, itself


class _DeepArguments(http.server.BaseHTTPRequestHandler):
    """An upstream answering every request with one Responses call whose arguments nest 5,000 deep (10 KB)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        deep = "[" * 5000 + "]" * 5000
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "file_read", "arguments": deep}
        response = {"id": "r1", "model": "m", "status": "completed", "output": [item],
                    "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}  # fmt: skip
        frames = [("response.output_item.done", {"output_index": 0, "item": item}), ("response.completed", {"response": response})]
        body = "".join(f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in frames).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def test_a_model_call_whose_arguments_nest_past_the_bound_is_the_loops_named_error(tmp_path: Path) -> None:
    """A model's answer is bounded like every input (docs/cli.md#bounds-on-what-a-run-reads): call arguments nested
    5,000 deep are not JSON to the loop, a named wire error, never a ``RecursionError`` traceback."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DeepArguments)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = subprocess.run(
            [str(LOOP), "run", "--json", "--no-session", "--workspace", str(tmp_path), "--base-url",
             f"http://127.0.0.1:{server.server_address[1]}", "--model", "m", "--input", "hi"],
            capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert b"Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.decode().splitlines()[-1] == "error: openai-responses: the arguments of call `call_1` are not JSON"
