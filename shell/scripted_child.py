"""The run's half of conformance C3's scripted child (docs/adapters/common.md#conformance): the captured
record and hook request written into the scratch tree, and the invocation of
:mod:`metaharness.shell.conformance_child`, which plays the vendor."""

from __future__ import annotations

import os

from metaharness.pure.hook_channel import HOOK_PROGRAM
from metaharness.pure.kind import Kind


def stage_scripted_child(kind: Kind, scratch: str, record: bytes, request: bytes) -> tuple[tuple[str, ...], str]:
    """The run's half of C3: writes the captured record and hook request into ``scratch``; returns this
    module's invocation after the interpreter and the path its hook answer is written to."""
    record_path, request_path, answer = (os.path.join(scratch, name) for name in ("record.jsonl", "request.json", "answer"))
    for path, data in ((record_path, record), (request_path, request)):
        with open(path, "wb") as handle:
            handle.write(data)
    hook = os.path.join(scratch, HOOK_PROGRAM)
    return ("-m", "metaharness.shell.conformance_child", kind, record_path, request_path, hook, answer), answer
