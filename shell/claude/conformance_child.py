"""The scripted child of conformance C3 (spec 50 §9): it writes a captured Claude Code transcript to
its stdout line by line and, once the line announcing the call is written, runs the scratch
``hooks/pretooluse`` program with the captured hook request on its stdin, exactly as Claude Code
does, keeping the bytes the hook printed; then it writes the rest.

``python -m metaharness.shell.claude.conformance_child RECORD REQUEST HOOK ANSWER_OUT``
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

SETTLE_S = 0.1
"""A pause after the announcing line, so the run reads it before the hook rings (record first)."""


def _announces_call(line: bytes) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    message = record.get("message") if isinstance(record, dict) and record.get("type") == "assistant" else None
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)


def main(argv: list[str]) -> int:
    record, request, hook, answer_out = argv
    with open(record, "rb") as source:
        lines = source.read().splitlines(keepends=True)
    with open(request, "rb") as handle:
        question = handle.read()
    asked = False
    for line in lines:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
        if not asked and _announces_call(line):
            asked = True
            time.sleep(SETTLE_S)
            done = subprocess.run([hook], input=question, capture_output=True, check=False)
            with open(answer_out, "wb") as answer:
                answer.write(done.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
