"""Any shape planted at any name of the hook channel is refused or replaced by name, never followed
(docs/adapters/common.md#child-trees): the answer and the request read never raise, never change a file
outside the channel, and never read one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from metaharness.pure.hook_channel import deny_answer
from metaharness.shell.hook_channel import HookChannel

KEY = "PLANTED1"
SECRET = b"the caller's file\n"
NAMES = ("responses/.writing.PLANTED1", "responses/PLANTED1.json", "ready/PLANTED1.wake", "requests/PLANTED1.json")
Plant = Callable[[Path, Path], None]
SHAPES: dict[str, Plant] = {
    "link to a host file": lambda at, host: at.symlink_to(host / "precious"),
    "link to a missing host file": lambda at, host: at.symlink_to(host / "created"),
    "link to a host folder": lambda at, host: at.symlink_to(host),
    "directory": lambda at, host: at.mkdir(),
    "fifo": lambda at, host: os.mkfifo(at),
    "regular file": lambda at, host: at.write_bytes(b"planted"),
    "hard link to a host file": lambda at, host: os.link(host / "precious", at),
}


def expected_answer(name: str, shape: str) -> str:
    """What the answer is when ``shape`` sits at ``name``: ``refused``, or ``undelivered`` (the name was
    replaced by the rename, or no hook waits)."""
    if name.endswith(".writing.PLANTED1") or (name.endswith(".wake") and shape != "fifo"):
        return "refused"
    if name == "responses/PLANTED1.json" and shape in ("directory", "link to a host folder"):
        return "refused" if shape == "directory" else "undelivered"
    return "undelivered"


@settings(max_examples=60, deadline=None)
@given(planted=st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(sorted(SHAPES))), min_size=1, max_size=3,
                        unique_by=lambda pair: pair[0]))  # fmt: skip
def test_any_planted_shape_is_refused_never_followed(planted: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as root:
        scratch, host = Path(root) / "scratch", Path(root) / "host"
        scratch.mkdir()
        host.mkdir()
        (host / "precious").write_bytes(SECRET)
        channel = HookChannel.create(str(scratch))
        try:
            request = scratch / "hook-channel" / "requests" / f"{KEY}.json"
            if "requests/PLANTED1.json" not in dict(planted):
                request.write_bytes(b'{"tool_name":"Bash"}')
            for name, shape in planted:
                SHAPES[shape](scratch / "hook-channel" / name, host)
            read = channel.request(KEY)
            answer = channel.answer(KEY, deny_answer("no"))
        finally:
            channel.close()
        assert sorted(os.listdir(host)) == ["precious"] and (host / "precious").read_bytes() == SECRET
        at_request = dict(planted).get("requests/PLANTED1.json")
        if at_request is None:
            assert read == b'{"tool_name":"Bash"}'
        else:
            assert read == (b"planted" if at_request == "regular file" else None)
        outcomes = {expected_answer(name, shape) for name, shape in planted if not name.startswith("requests/")}
        if "refused" in outcomes:
            assert isinstance(answer, Failure) and answer.failure().code == "name-refused"
        else:
            assert answer == Success(False)
