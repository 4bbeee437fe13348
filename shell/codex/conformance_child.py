"""The scripted child of conformance C3 (spec 50 §9): it writes a captured rollout under
``$CODEX_HOME/sessions/`` line by line and, once the line announcing the call is written, runs the
scratch ``hooks/pretooluse`` program with the captured hook request on its stdin, exactly as codex
does, keeping the bytes the hook printed; then it writes the rest.

``python -m metaharness.shell.codex.conformance_child RECORD REQUEST HOOK ANSWER_OUT``
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

ROLLOUT = "sessions/2026/11/30/rollout-2026-11-30T00-00-00-golden.jsonl"
SETTLE_S = 0.1
"""A pause after each announcing line, so the run's 25 ms poll reads it before the hook rings."""


def _announces_call(line: bytes) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    payload = record.get("payload") if isinstance(record, dict) else None
    return isinstance(payload, dict) and payload.get("type") in ("function_call", "custom_tool_call")


def main(argv: list[str]) -> int:
    record, request, hook, answer_out = argv
    path = os.path.join(os.environ["CODEX_HOME"], ROLLOUT)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(record, "rb") as source:
        lines = source.read().splitlines(keepends=True)
    with open(request, "rb") as handle:
        question = handle.read()
    asked = False
    with open(path, "ab") as rollout:
        for line in lines:
            rollout.write(line)
            rollout.flush()
            if not asked and _announces_call(line):
                asked = True
                time.sleep(SETTLE_S)
                done = subprocess.run([hook], input=question, capture_output=True, check=False)
                with open(answer_out, "wb") as answer:
                    answer.write(done.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
