#!/usr/bin/env python3
"""A small ask-mode embedder: it runs a governed run and answers every call the run asks about.

    examples/embedder.py [--allow OP]... -- <KIND> [run options…]

starts ``metaharness run <KIND> --decisions ask [run options…]`` and reads its ``metaharness.event/1``
stream (docs/events.md). Each ``tool.requested`` with ``decision_required`` is answered on the run's
stdin with one ``metaharness.command/1`` ``tool.decide`` line (docs/events.md#commands): ``allow`` when
every operation of the call is one named by ``--allow`` (``file.read``, ``file.write``, ``shell``, …),
else ``deny`` with a reason the model is told. The answer must come before the call's ``deadline_ms``,
or metaharness's own deadline denies it. Each decision is printed on stderr; the stream is copied to
stdout unchanged, so the embedder can sit in a pipeline (``… | metaharness-view``). When the stream
closes the embedder closes the run's stdin and exits with the run's exit code.

A person approving by hand would put a prompt where :func:`decide` is; a program, its own policy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import IO, Any


def decide(call: dict[str, Any], allowed: frozenset[str]) -> dict[str, str]:
    """The decision for one asked call: allow when every operation is allowed, else deny saying why."""
    operations = call.get("operations") or []
    refused = [op for op in operations if op not in allowed]
    if operations and not refused:
        return {"decision": "allow"}
    named = ", ".join(refused) or "an operation nobody named"
    return {"decision": "deny", "reason": f"the embedder does not allow {named}; do without it"}


def answer(stdin: IO[bytes], call: dict[str, Any], decision: dict[str, str]) -> None:
    """One ``tool.decide`` command line on the run's stdin, flushed at once."""
    command = {"format": "metaharness.command/1", "id": f"decide-{call['call_id']}", "command": "tool.decide",
               "call_id": call["call_id"], "decision": decision}  # fmt: skip
    stdin.write(json.dumps(command).encode("utf-8") + b"\n")
    stdin.flush()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Answer a governed run's asked calls.")
    parser.add_argument("--allow", action="append", default=[], metavar="OP", help="an operation to allow")
    parser.add_argument("--metaharness", default="metaharness", help="the metaharness program to run")
    parser.add_argument("run", nargs=argparse.REMAINDER, help="-- KIND [run options…]")
    options = parser.parse_args(argv)
    words = options.run[1:] if options.run[:1] == ["--"] else options.run
    if not words:
        parser.error("name the run: -- KIND [run options…]")
    allowed = frozenset(options.allow)
    run = subprocess.Popen([options.metaharness, "run", words[0], "--decisions", "ask", *words[1:]],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    assert run.stdin is not None and run.stdout is not None
    for line in run.stdout:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
        event = json.loads(line)
        if event.get("event") == "tool.requested" and event.get("decision_required"):
            decision = decide(event, allowed)
            answer(run.stdin, event, decision)
            print(f"embedder: {event['name']} {event['call_id']} → {decision['decision']}", file=sys.stderr, flush=True)
        elif event.get("event") == "stream.closed":
            break
    run.stdin.close()
    return run.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
