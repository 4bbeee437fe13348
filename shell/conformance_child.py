"""The scripted child of conformance C3 (spec 50 §9), for claude and codex: it writes a captured record
line by line where the vendor writes it (Claude Code: its stdout; codex: a rollout under
``$CODEX_HOME/sessions/``) and, once the line announcing the call is written, runs the scratch
``hooks/pretooluse`` program with the captured hook request on its stdin, exactly as the vendor does,
keeping the bytes the hook printed; then it writes the rest.

``python -m metaharness.shell.conformance_child KIND RECORD REQUEST HOOK ANSWER_OUT``
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import IO, Any

from metaharness.pure.hook_channel import HOOK_PROGRAM

ROLLOUT = "sessions/2026/11/30/rollout-2026-11-30T00-00-00-golden.jsonl"
SETTLE_S = 0.1
"""A pause after the announcing line, so the run reads it (codex: its 25 ms poll) before the hook rings."""


def stage_scripted_child(kind: str, scratch: str, record: bytes, request: bytes) -> tuple[tuple[str, ...], str]:
    """The run's half of C3: writes the captured record and hook request into ``scratch``; returns this
    module's invocation after the interpreter and the path its hook answer is written to."""
    record_path, request_path, answer = (os.path.join(scratch, name) for name in ("record.jsonl", "request.json", "answer"))
    for path, data in ((record_path, record), (request_path, request)):
        with open(path, "wb") as handle:
            handle.write(data)
    hook = os.path.join(scratch, HOOK_PROGRAM)
    return ("-m", "metaharness.shell.conformance_child", kind, record_path, request_path, hook, answer), answer


def announces_call(kind: str, line: bytes) -> bool:
    """The line is a Claude Code assistant message with a ``tool_use`` block, or a codex rollout
    ``function_call``/``custom_tool_call``."""
    try:
        record: Any = json.loads(line)
    except ValueError:
        return False
    if not isinstance(record, dict):
        return False
    if kind == "claude":
        message = record.get("message") if record.get("type") == "assistant" else None
        content = message.get("content") if isinstance(message, dict) else None
        return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
    payload = record.get("payload")
    return isinstance(payload, dict) and payload.get("type") in ("function_call", "custom_tool_call")


def _sink(kind: str) -> IO[bytes]:
    if kind == "claude":
        return os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    path = os.path.join(os.environ["CODEX_HOME"], ROLLOUT)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return open(path, "ab")


def main(argv: list[str]) -> int:
    kind, record, request, hook, answer_out = argv
    with open(record, "rb") as source:
        lines = source.read().splitlines(keepends=True)
    with open(request, "rb") as handle:
        question = handle.read()
    asked = False
    with _sink(kind) as sink:
        for line in lines:
            sink.write(line)
            sink.flush()
            if not asked and announces_call(kind, line):
                asked = True
                time.sleep(SETTLE_S)
                done = subprocess.run([hook], input=question, capture_output=True, check=False)
                with open(answer_out, "wb") as answer:
                    answer.write(done.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
