"""Any stdin answer line under ``--approve caller`` yields allow, deny or a named deny, never an exception
(docs/loop.md#caller-seam)."""

from __future__ import annotations

import io
import json
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.loop.approval import Allow, Deny, Unreadable, read_answer
from metaharness.shell.loop.approver import CallerApprover
from metaharness.shell.loop.cancel import CancelToken

JSONISH = st.one_of(
    st.binary(max_size=80),
    st.builds(
        lambda d: json.dumps(d).encode(),
        st.dictionaries(
            st.sampled_from(["call_id", "decision", "reason", "extra"]),
            st.one_of(st.sampled_from(["c", "d", "allow", "deny", ""]), st.none(), st.integers(), st.booleans()),
            max_size=4,
        ),
    ),
)


@settings(max_examples=500, deadline=None)
@given(JSONISH)
def test_read_answer_never_raises(line: bytes) -> None:
    answer = read_answer(line, "c")
    assert isinstance(answer, Allow | Deny | Unreadable)
    if isinstance(answer, Unreadable):
        assert answer.why
    if isinstance(answer, Deny):
        assert answer.reason


@settings(max_examples=200, deadline=None)
@given(st.lists(JSONISH, max_size=4), st.booleans(), st.integers(1, 5))
def test_the_caller_approver_answers_every_call(lines: list[bytes], newline_last: bool, calls: int) -> None:
    data = b"\n".join(lines) + (b"\n" if newline_last else b"")
    approver = CallerApprover(io.BytesIO(data), CancelToken(None, time.monotonic()))
    warned_closed = 0
    for _ in range(calls):
        verdict = approver.decide("c", "file_write", "file_write  note.md  (1 bytes)")
        assert verdict.approved or verdict.reason
        if verdict.warning is not None:
            assert verdict.warning.startswith("the answer for c could not be read: ")
            warned_closed += verdict.warning.endswith("stdin is closed")
    assert warned_closed <= 1
