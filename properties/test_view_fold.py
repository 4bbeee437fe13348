"""``metaharness-view``'s fold never stops on bad input (docs/view.md): any mix of the recorded run's
lines, shuffled, cut, repeated and interleaved with arbitrary bytes folds without raising; every
unreadable line is counted and shown once; the plain lines and the closing lines are produced; and the
exit is 0 exactly when the last line read is a ``stream.closed``."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure

from metaharness.pure.events import event_name, read_event
from metaharness.pure.run_view import Malformed, ViewState, closing_lines, fold_view, plain_lines, view_exit

RECORDED = Path(__file__).resolve().parents[1] / "tests" / "streams" / "b10x-ask-deny.jsonl"
LINES = RECORDED.read_bytes().splitlines()

lines = st.lists(
    st.one_of(st.sampled_from(LINES), st.binary(max_size=40), st.sampled_from(LINES).map(lambda line: line[:30])),
    max_size=40,
)


@given(lines, st.floats(min_value=0, max_value=1e6, allow_nan=False))
@settings(max_examples=200, deadline=None)
def test_any_input_folds_and_every_bad_line_is_shown(raw: list[bytes], now: float) -> None:
    state = ViewState()
    shown = 0
    bad = 0
    last = ""
    for number, line in enumerate(raw, start=1):
        read = read_event(line)
        item = (Malformed(number, line.decode("utf-8", errors="replace"), read.failure())
                if isinstance(read, Failure) else read.unwrap())
        after = fold_view(state, item, now)
        printed = plain_lines(state, after, item)
        if isinstance(item, Malformed):
            bad += 1
            shown += sum(line.startswith(f"malformed line {number}: ") for line in printed)
            last = ""
        else:
            last = event_name(item.payload)
        state = after
    closing = closing_lines(state)
    assert state.malformed == bad == shown
    assert view_exit(state) == (0 if last == "stream.closed" else 1)
    assert closing[-1 if not bad else -2].startswith("child exit: ")
