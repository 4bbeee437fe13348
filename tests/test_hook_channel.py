"""The event-driven hook channel with the real ``bash`` hook program (docs/adapters/common.md#hook-channel)."""

from __future__ import annotations

import os
import select
import shutil
import stat
import subprocess
import time
from pathlib import Path

import msgspec
import pytest
from returns.result import Success

from metaharness.pure.gemini.hook import deny_body, render_gemini_hook
from metaharness.pure.hook_channel import (
    EMPTY_REASON,
    KEY_LIMIT,
    NO_ANSWER_REASON,
    READY_SLOTS,
    deny_answer,
    doorbell_keys,
    read_hook_request,
    render_hook_program,
    shell_quote,
)
from metaharness.shell.hook_channel import HookChannel

REQUEST = b'{"session_id":"s","tool_use_id":"toolu_1","tool_name":"Write","tool_input":{"file_path":"/w/note.md"}}'


def install(scratch: Path, hook_timeout_s: int = 60) -> Path:
    program = scratch / "hooks" / "pretooluse"
    program.parent.mkdir(parents=True)
    program.write_text(render_hook_program(str(scratch), hook_timeout_s))
    program.chmod(0o700)
    return program


def start_hook(program: Path, request: bytes = REQUEST) -> subprocess.Popen[bytes]:
    hook = subprocess.Popen([str(program)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert hook.stdin is not None
    hook.stdin.write(request)
    hook.stdin.close()
    return hook


def finish(hook: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    assert hook.stdout is not None
    out = hook.stdout.read()
    return hook.wait(timeout=60), out


def wait_key(channel: HookChannel) -> str:
    ready, _, _ = select.select([channel], [], [], 60)
    assert ready, "the doorbell never rang"
    keys = channel.ring()
    assert len(keys) == 1
    return keys[0]


def test_the_channel_is_made_private_before_the_spawn(tmp_path: Path) -> None:
    channel = HookChannel.create(str(tmp_path))
    try:
        doorbell = tmp_path / "hook-channel" / "doorbell"
        assert stat.S_ISFIFO(doorbell.stat().st_mode)
        assert stat.S_IMODE(doorbell.stat().st_mode) == 0o600
        for name in ("ready", "requests", "responses"):
            assert stat.S_IMODE((tmp_path / "hook-channel" / name).stat().st_mode) == 0o700
        assert channel.ring() == ()
    finally:
        channel.close()


def test_a_request_reaches_metaharness_and_the_answer_reaches_the_vendor(tmp_path: Path) -> None:
    program = install(tmp_path)
    channel = HookChannel.create(str(tmp_path))
    try:
        hook = start_hook(program)
        key = wait_key(channel)
        assert channel.request(key) == REQUEST
        body = deny_answer("not in this step")
        assert channel.answer(key, body) == Success(True)
        assert finish(hook) == (0, body)
        assert (tmp_path / "hook-channel" / "responses" / f"{key}.json").read_bytes() == body
        assert (tmp_path / "hook-channel" / "requests" / f"{key}.json").exists()
    finally:
        channel.close()


def test_zero_bytes_is_an_abstain_that_prints_nothing(tmp_path: Path) -> None:
    program = install(tmp_path)
    channel = HookChannel.create(str(tmp_path))
    try:
        hook = start_hook(program)
        assert channel.answer(wait_key(channel), b"") == Success(True)
        assert finish(hook) == (0, b"")
    finally:
        channel.close()


def test_concurrent_hooks_each_get_their_own_answer(tmp_path: Path) -> None:
    program = install(tmp_path)
    channel = HookChannel.create(str(tmp_path))
    try:
        hooks = [start_hook(program, REQUEST.replace(b"toolu_1", f"toolu_{i}".encode())) for i in range(4)]
        keys: list[str] = []
        deadline = time.monotonic() + 60
        while len(keys) < 4 and time.monotonic() < deadline:
            select.select([channel], [], [], 1)
            keys += channel.ring()
        assert len(set(keys)) == 4
        for key in keys:
            call = read_hook_request(key, channel.request(key) or b"")
            assert channel.answer(key, call.call_id.encode()) == Success(True)
        outs = sorted(finish(hook)[1] for hook in hooks)
        assert outs == [f"toolu_{i}".encode() for i in range(4)]
    finally:
        channel.close()


def test_a_gone_metaharness_costs_a_deny_within_the_doorbell_timeout(tmp_path: Path) -> None:
    program = install(tmp_path)
    channel = HookChannel.create(str(tmp_path))
    channel.close()
    started = time.monotonic()
    hook = start_hook(program)
    assert finish(hook) == (0, deny_answer(NO_ANSWER_REASON))
    assert time.monotonic() - started < 30, "the deny came from the doorbell timeout, not the 60 s hook budget"


def test_a_missing_channel_is_a_deny_and_never_a_non_zero_exit(tmp_path: Path) -> None:
    program = install(tmp_path)
    hook = start_hook(program)
    assert finish(hook) == (0, deny_answer(NO_ANSWER_REASON))


def test_the_backstop_denies_and_a_late_answer_finds_no_reader(tmp_path: Path) -> None:
    program = install(tmp_path, hook_timeout_s=4)
    assert "read -r -t 1 -u 3 woken || deny" in program.read_text()
    channel = HookChannel.create(str(tmp_path))
    try:
        hook = start_hook(program)
        key = wait_key(channel)
        assert finish(hook) == (0, deny_answer(NO_ANSWER_REASON))
        assert channel.answer(key, deny_answer("late")) == Success(False)
    finally:
        channel.close()


def test_a_missing_request_file_reads_as_none(tmp_path: Path) -> None:
    channel = HookChannel.create(str(tmp_path))
    try:
        os.write(os.open(tmp_path / "hook-channel" / "doorbell", os.O_WRONLY | os.O_NONBLOCK), b"ABCDEFGH\n")
        assert channel.ring() == ("ABCDEFGH",)
        assert channel.request("ABCDEFGH") is None
    finally:
        channel.close()


def test_a_doorbell_line_naming_a_path_is_ignored(tmp_path: Path) -> None:
    channel = HookChannel.create(str(tmp_path))
    try:
        os.write(os.open(tmp_path / "hook-channel" / "doorbell", os.O_WRONLY | os.O_NONBLOCK), b"../x\nok\n")
        assert channel.ring() == ("ok",)
    finally:
        channel.close()


def test_requests_without_an_id_or_json_are_still_calls() -> None:
    assert read_hook_request("K", REQUEST).call_id == "toolu_1"
    assert read_hook_request("K", REQUEST).name == "Write"
    unparsed = read_hook_request("K", b"{not json")
    assert (unparsed.call_id, unparsed.name, unparsed.input, unparsed.correlated) == ("hook:K", "", None, False)
    anonymous = read_hook_request("K", b'{"tool_name":"Bash","tool_input":{"command":"ls"}}')
    assert (anonymous.call_id, anonymous.name, anonymous.input) == ("hook:K", "Bash", {"command": "ls"})


def test_deny_bodies_are_compact_and_never_reasonless() -> None:
    assert deny_answer("no") == (
        b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
        b'"permissionDecisionReason":"no"}}'
    )
    assert msgspec.json.decode(deny_answer("  "))["hookSpecificOutput"]["permissionDecisionReason"] == EMPTY_REASON


def test_doorbell_lines_split_across_reads() -> None:
    keys, rest = doorbell_keys(b"", b"AB\nCD")
    assert (keys, rest) == (("AB",), b"CD")
    assert doorbell_keys(rest, b"EF\n\n") == (("CDEF",), b"")


@pytest.mark.parametrize("text", ["plain", "it's", "a'b'c", ""])
def test_shell_quote_survives_the_shell(text: str) -> None:
    out = subprocess.run(["sh", "-c", f"printf '%s' {shell_quote(text)}"], capture_output=True, check=True).stdout
    assert out.decode() == text


def test_the_program_uses_only_the_named_tools(tmp_path: Path) -> None:
    text = render_hook_program("/scratch/run")
    assert text.startswith("#!/bin/bash\n")
    assert "'/scratch/run/hook-channel'" in text
    assert "umask 077" in text
    assert "exit 1" not in text and "exit 2" not in text


def test_a_doorbell_flooded_without_a_newline_holds_no_memory_and_the_next_key_is_read(tmp_path: Path) -> None:
    """A tool writing 64 MiB to the doorbell with no line end grew the carried tail without bound (and
    copied it at every read, so the run loop spun for minutes); only ``KEY_LIMIT + 1`` bytes are carried,
    each ring reads a bounded amount, and the key rung after the flood's line ends is found."""
    channel = HookChannel.create(str(tmp_path))
    doorbell = tmp_path / "hook-channel" / "doorbell"
    flood = f"head -c 67108864 /dev/zero | tr '\\0' x > {doorbell}; printf '\\nKEY12345\\n' > {doorbell}"
    writer = subprocess.Popen(["sh", "-c", flood])
    keys: list[str] = []
    try:
        while "KEY12345" not in keys:
            ready, _, _ = select.select([channel.fileno()], [], [], 60)
            assert ready, "the doorbell went quiet before the key"
            keys += channel.ring()
            assert len(channel._pending) <= KEY_LIMIT + 1
    finally:
        writer.kill()
        writer.wait()
        channel.close()
    assert keys == ["KEY12345"]


def test_a_tail_longer_than_any_key_is_never_a_key() -> None:
    keys, rest = doorbell_keys(b"", b"x" * 1000)
    assert keys == () and len(rest) == KEY_LIMIT + 1
    assert doorbell_keys(rest, b"tail\nKEY12345\n") == (("x" * (KEY_LIMIT + 1) + "tail", "KEY12345"), b"")


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_a_decided_call_executes_the_hook_program_only(tmp_path: Path) -> None:
    """The program runs on built-ins: one call, traced with its children, executes nothing but itself."""
    program = install(tmp_path)
    channel = HookChannel.create(str(tmp_path))
    trace = tmp_path / "execve.trace"
    try:
        hook = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace), str(program)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
        assert hook.stdin is not None
        hook.stdin.write(REQUEST)
        hook.stdin.close()
        key = wait_key(channel)
        assert channel.request(key) == REQUEST
        assert channel.answer(key, deny_answer("no")) == Success(True)
        assert finish(hook) == (0, deny_answer("no"))
    finally:
        channel.close()
    executed = [line for line in trace.read_text().splitlines() if "execve(" in line]
    assert len(executed) == 1 and f'"{program}"' in executed[0], executed


def test_each_rung_key_is_replaced_and_its_used_wake_fifo_removed(tmp_path: Path) -> None:
    program = install(tmp_path)
    channel = HookChannel.create(str(tmp_path))
    ready = tmp_path / "hook-channel" / "ready"
    try:
        before = {path.name for path in ready.iterdir()}
        assert len(before) == READY_SLOTS and all(stat.S_ISFIFO((ready / name).stat().st_mode) for name in before)
        hook = start_hook(program)
        key = wait_key(channel)
        assert f"{key}.wake" in before and len(list(ready.iterdir())) == READY_SLOTS + 1
        assert channel.answer(key, b"") == Success(True)
        assert finish(hook) == (0, b"")
        after = {path.name for path in ready.iterdir()}
        assert len(after) == READY_SLOTS and f"{key}.wake" not in after
    finally:
        channel.close()


@pytest.mark.parametrize("kind", ["codex", "gemini"])
def test_a_tool_claiming_every_wake_fifo_costs_a_deny_at_once(tmp_path: Path, kind: str) -> None:
    """A tool that creates ``requests/<key>.json`` for every ready key leaves the hook no key to claim
    (``noclobber``: it never writes into a request it did not create): the hook denies by itself at once."""
    program = tmp_path / "hooks" / "pretooluse"
    program.parent.mkdir(parents=True)
    program.write_text((render_hook_program if kind == "codex" else render_gemini_hook)(str(tmp_path)))
    program.chmod(0o700)
    channel = HookChannel.create(str(tmp_path))
    try:
        for wake in (tmp_path / "hook-channel" / "ready").iterdir():
            (tmp_path / "hook-channel" / "requests" / f"{wake.stem}.json").write_text("the tool's\n")
        code, out = finish(start_hook(program))
        assert (code, out) == ((0, deny_answer(NO_ANSWER_REASON)) if kind == "codex" else (2, deny_body(NO_ANSWER_REASON)))
        assert channel.ring() == ()
        assert {p.read_text() for p in (tmp_path / "hook-channel" / "requests").iterdir()} == {"the tool's\n"}
    finally:
        channel.close()
