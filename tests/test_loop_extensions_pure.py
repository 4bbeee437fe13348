"""The pure stages of the loop's extensions (docs/loop-extensions.md): hook verdicts and notes, skill
frontmatter, the bridge's tool answers and turn statuses."""

from __future__ import annotations

import pytest

from metaharness.pure.b10x.loop_flags import loop_flag_refusal, not_built_flags
from metaharness.pure.loop import budget
from metaharness.pure.loop.app_server import Answered, read_tool_answer, turn_status, unanswered_text
from metaharness.pure.loop.hooks import (
    Block,
    Hook,
    HookExit,
    Proceed,
    after_call_note,
    before_call_verdict,
    parse_hooks,
    stop_verdict,
    with_notes,
)
from metaharness.pure.loop.skills import Skill, merge_skills, parse_skill, skill_lines

BEFORE = Hook("before-call", None, ("policy",))


@pytest.mark.parametrize(
    ("ended", "verdict"),
    [
        (HookExit(0), Proceed()),
        (HookExit(2, stdout=b'{"reason":"not here"}'), Block("not here")),
        (HookExit(2, stdout=b"garbage"), Block("the hook gave no reason")),
        (HookExit(1), Block("the hook failed (the before-call hook `policy` exited 1), so the call is blocked",
                            "the before-call hook `policy` exited 1")),
        (HookExit(None), Block("the hook failed (the before-call hook `policy` was killed by a signal), so the "
                               "call is blocked", "the before-call hook `policy` was killed by a signal")),
        (HookExit(None, timed_out=True), Block(
            "the hook failed (the before-call hook `policy` did not finish within 30 s and was killed), so the call "
            "is blocked", "the before-call hook `policy` did not finish within 30 s and was killed")),
    ],
)
def test_before_call_fails_closed(ended: HookExit, verdict: Proceed | Block) -> None:
    assert before_call_verdict(BEFORE, ended) == verdict


def test_after_call_notes_and_stop_verdicts() -> None:
    after = Hook("after-call", ("file_write",), ("note",))
    assert after.applies("after-call", "file_write") and not after.applies("after-call", "file_read")
    assert after_call_note(after, HookExit(0, stdout=b'{"note":"seen"}')) == ("seen", None)
    assert after_call_note(after, HookExit(2)) == (None, "the after-call hook `note` exited 2")
    stop = Hook("stop", None, ("again",))
    assert stop_verdict(stop, HookExit(2, stdout=b'{"reason":"run the tests"}')) == ("run the tests", None)
    assert stop_verdict(stop, HookExit(0)) == (None, None)
    assert stop_verdict(stop, HookExit(5)) == (None, "the stop hook `again` exited 5")


def test_notes_join_an_object_result_as_a_key_and_a_text_result_as_a_line() -> None:
    assert with_notes('{"path":"a","bytes":1}', ("x",)) == '{"path":"a","bytes":1,"hook_notes":["x"]}'
    assert with_notes("`a` does not exist", ("x", "y")) == '`a` does not exist\nhook_notes: ["x","y"]'
    assert with_notes("body", ()) == "body"


def test_skill_frontmatter_body_and_first_wins() -> None:
    parsed = parse_skill("s", b"---\nname: a\ndescription: b: c\n---\nline 1\nline 2\n", "p:").unwrap()
    assert parsed == Skill("p:a", "b: c", "line 1\nline 2\n")
    assert parse_skill("s", b"---\n  name: a\n---\n").failure() == (
        "s: frontmatter line `  name: a` is not a top-level `key: value` line")
    kept, shadowed = merge_skills((Skill("a", "1", ""), Skill("a", "2", ""), Skill("b", "3", "")))
    assert [s.description for s in kept] == ["1", "3"] and len(shadowed) == 1
    assert skill_lines(kept) == ("Skills available to you; load one with the skill tool before you follow it:",
                                 "- `a` — 1", "- `b` — 3")


def test_tool_answers_and_turn_statuses() -> None:
    ok = {"contentItems": [{"type": "inputText", "text": "a"}, {"type": "inputText", "text": "b"}], "success": True}
    assert read_tool_answer("t", Answered(0, ok, None, 100)) == ("a\nb", True)
    assert read_tool_answer("t", Answered(0, None, {"code": 1, "message": "no"}, 10)) == (
        "the client answered item/tool/call for `t` with an error: no", False)
    assert read_tool_answer("t", Answered(0, ok, None, 262145))[1] is False
    assert unanswered_text("t", 600_000) == "the client did not answer item/tool/call for `t` within 600 s"
    assert turn_status(budget.Completed(), None) == ("completed", None)
    assert turn_status(budget.Cancelled("the caller cancelled"), None) == ("interrupted", None)
    assert turn_status(budget.MaxTurns(1), None) == ("failed", 'the turn stopped: {"kind":"max-turns","limit":1}')
    assert turn_status(None, "boom") == ("failed", "boom")


def test_the_hooks_file_version_is_the_integer_1() -> None:
    assert parse_hooks("h", b'{"version":1,"hooks":[{"on":"stop","command":["x"]}]}').unwrap() == (
        Hook("stop", None, ("x",)),)
    for version in (b"true", b"1.0", b'"1"'):
        assert parse_hooks("h", b'{"version":' + version + b',"hooks":[]}').failure().startswith("--hooks h must be")


def test_loop_flag_refusals_name_the_flag_and_the_loop() -> None:
    help_text = "  --hooks TEXT\n  --toolchain TEXT\n\n  Declared but not built in this implementation: --toolchain\n"
    program = "/home/op/.local/bin/b10x-harness"
    assert loop_flag_refusal(("--hooks",), program, "0.1.0", help_text) is None
    built = loop_flag_refusal(("--hooks", "--toolchain"), program, "0.1.0", help_text)
    assert built is not None and built.line() == (
        "metaharness: not-built: --toolchain is not built in this build: b10x-harness 0.1.0 at "
        "/home/op/.local/bin/b10x-harness declares --toolchain but does not build it, so the loop would refuse "
        "the run at start")
    undeclared = loop_flag_refusal(("--plugin-dir",), program, None, help_text)
    assert undeclared is not None and undeclared.message == (
        "--plugin-dir is not built in this build: b10x-harness (version unreadable) at "
        "/home/op/.local/bin/b10x-harness does not declare --plugin-dir")
    unread = loop_flag_refusal(("--hooks",), program, "0.1.0", None)
    assert unread is not None and "gave no `run --help`" in unread.message
    assert loop_flag_refusal((), program, "0.1.0", None) is None
    assert not_built_flags(help_text) == {"--toolchain"}


def test_lines_nested_past_the_depth_bound_are_unreadable_not_a_recursion_error() -> None:
    """A client's, a caller's, a hook's or a tool's text, a hooks file or a plugin's ``plugin.json``, nested deeper
    than msgspec's recursion reaches (a ``RecursionError`` that ended the loop) reads as what it is: not JSON."""
    from metaharness.pure.loop.app_server import Bridge, Send, read_client_line
    from metaharness.pure.loop.approval import Unreadable, read_answer

    deep = b"[" * 5000 + b"]" * 5000
    _, steps = read_client_line(Bridge(version="0"), deep)
    assert [step.line for step in steps if isinstance(step, Send)] == [b'{"id":null,"error":{"code":-32700,"message":"the line is not JSON"}}\n']
    assert read_answer(deep, "call_1") == Unreadable("the line is not JSON")
    assert with_notes(deep.decode(), ("x",)) == deep.decode() + '\nhook_notes: ["x"]'
    stop = Hook("stop", None, ("again",))
    assert stop_verdict(stop, HookExit(2, stdout=deep)) == stop_verdict(stop, HookExit(2, stdout=b"not json"))
    assert parse_hooks("h", deep).failure() == "--hooks h is not JSON"
    from metaharness.pure.loop.skills import plugin_name

    assert plugin_name("p/plugin.json", deep).failure() == "p/plugin.json is not JSON"
