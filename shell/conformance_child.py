"""The scripted child of conformance C3 (docs/adapters/common.md#conformance), for claude and codex: it writes a
captured record line by line where the vendor writes it (Claude Code: its stdout; codex: a rollout under
``$CODEX_HOME/sessions/``) and, once the line announcing the call is written, asks about the call with the
captured hook request exactly as the vendor does (Claude Code: a ``hook_callback`` control request on its
stdout, answered on its stdin; codex: the scratch ``hooks/pretooluse`` program), keeping the answer's bytes;
then it writes the rest.

``python -m metaharness.shell.conformance_child KIND RECORD REQUEST HOOK ANSWER_OUT``
"""

from __future__ import annotations

import sys
import time

from metaharness.pure.budgets import SCRIPTED_SETTLE_S
from metaharness.pure.kind import kind_named
from metaharness.shell.adapters import live_adapter_of


def main(argv: list[str]) -> int:
    name, record, request, hook, answer_out = argv
    kind = kind_named(name)
    child = None if kind is None else live_adapter_of(kind).scripted_child()
    if child is None:
        sys.stderr.write(f"metaharness: unscripted-kind: {name} names no kind whose vendor conformance C3 scripts\n")
        return 2
    with open(record, "rb") as source:
        lines = source.read().splitlines(keepends=True)
    with open(request, "rb") as handle:
        question = handle.read()
    asked = False
    child.start()
    with child.record_sink() as sink:
        for line in lines:
            sink.write(line)
            sink.flush()
            if not asked and child.announces_call(line):
                asked = True
                time.sleep(SCRIPTED_SETTLE_S)
                said = child.ask(hook, question)
                with open(answer_out, "wb") as answer:
                    answer.write(said)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
