"""The emulator's scenarios (spec 60 §8.4 loop scenarios, §8.5 vendor-CLI scenarios): what each
answers, as a pure function of the request's facts and the POST count N."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

import msgspec

from metaharness.pure.emulator.reply import Call, ProviderError, Reasoning, Reply
from metaharness.pure.emulator.request import RequestView
from metaharness.pure.jsonline import compact

Outcome: TypeAlias = Reply | ProviderError


class Decision(msgspec.Struct, frozen=True):
    """A scenario's answer, and whether it treats the request as a side request (vendor scenarios
    only; ``None`` for loop scenarios)."""

    outcome: Outcome
    side: bool | None = None


def _call(name: str, arguments: dict[str, Any]) -> Call:
    return Call(name=name, arguments=compact(arguments).decode())


def _first_enum(schema: Any) -> str | None:
    """The first string ``enum`` member found depth-first, in key order, in a tool's schema."""
    if isinstance(schema, dict):
        members = schema.get("enum")
        if isinstance(members, list) and members and isinstance(members[0], str):
            return members[0]
        values: Any = schema.values()
    elif isinstance(schema, list):
        values = schema
    else:
        return None
    for value in values:
        found = _first_enum(value)
        if found is not None:
            return found
    return None


def _two_turns(first: Reply, then: str) -> Callable[[RequestView, int], Outcome]:
    """R = 0 answers ``first``; once a tool result is in the body, the text ``then``."""
    return lambda view, n: first if view.tool_results == 0 else Reply(text=then)


def _flat_run(view: RequestView, n: int) -> Outcome:
    """``run`` with the first ``enum`` value of the offered ``run`` schema as ``argv[0]``."""
    if view.tool_results:
        return Reply(text=SAID)
    offered = next((tool for tool in view.tools if tool.name == "run"), None)
    program = _first_enum(offered.schema) if offered is not None else None
    if program is None:
        return Reply(text="no program was offered")
    return Reply(call=_call("run", {"argv": [program]}))


PASSED = "provider emulation passed"
SAID = "that is what the tool said"
READ_README = Reply(call=_call("file_read", {"path": "README.md"}))
FILE_SAYS = "The file says: hello harness"
_flat_tool = _two_turns(READ_README, FILE_SAYS)

LOOP_SCENARIOS: dict[str, Callable[[RequestView, int], Outcome]] = {
    "text": lambda view, n: Reply(text=PASSED),
    "flat-tool": _flat_tool,
    "flat-write": _two_turns(
        Reply(call=_call("file_write", {"path": "note.md", "text": "written by the harness\n"})), SAID),
    "flat-edit": _two_turns(
        Reply(call=_call("file_edit", {"path": "README.md", "old": "hello", "new": "goodbye"})), SAID),
    "flat-run": _flat_run,
    "unpublished-tool": _two_turns(Reply(call=_call("shell.exec", {"cmd": "id"})), "I see, I cannot use that."),
    "reasoning": _two_turns(
        Reply(reasoning=Reasoning(summary="Reading the file first.", blob="OPAQUE-REASONING-BLOB"),
              call=READ_README.call), FILE_SAYS),
    "bad-arguments": lambda view, n: Reply(call=Call(name="file_read", arguments="{not json")),
    "unauthorized": lambda view, n: ProviderError(
        status=401, kind="authentication", message="the emulator accepts no credential"),
    "cold": lambda view, n: ProviderError(
        status=503, kind="overloaded", message="the emulator is cold; retry later", retry_after="5"),
    "cold-once": lambda view, n: (
        ProviderError(status=503, kind="overloaded", message="the emulator is cold once", retry_after="0")
        if n == 1 else Reply(text=PASSED)),
    "slow": lambda view, n: Reply(text=PASSED, effect="slow"),
    "malformed": lambda view, n: Reply(text=PASSED, effect="malformed"),
    "truncated": lambda view, n: Reply(text=PASSED, effect="truncated"),
    "failed": lambda view, n: ProviderError(
        status=400, kind="invalid-request", message="the emulator fails this response", streamed=True),
    "fails-after-turn": lambda view, n: (
        _flat_tool(view, n) if n == 1 else ProviderError(
            status=400, kind="invalid-request", message="the emulator refuses after the first turn")),
    "incomplete": lambda view, n: Reply(text="provider emul", incomplete=True),
    "no-usage": lambda view, n: Reply(text=PASSED, usage=False),
    "unknown-events": lambda view, n: Reply(text=PASSED, note=True),
}

EMULATED_NOTE = "written by the emulator\n"
PATCH = "*** Begin Patch\n*** Add File: note.md\n+written by the emulator\n*** End Patch\n"
PADDED_PATCH = (
    "*** Begin Patch\n*** Add File: src/ok.md\n+written by the emulator\n"
    " *** Add File: note.md\n+written by the emulator\n *** Delete File: README.md\n*** End Patch\n"
)
"""A patch whose second and third headers are indented: the pinned Codex applies all three."""

Arguments: TypeAlias = dict[str, Any] | str
"""A candidate's arguments: a JSON object, or a freeform input (``apply_patch``)."""
Candidate: TypeAlias = tuple[str, Callable[[RequestView], Arguments]]


def _in_directory(view: RequestView, name: str) -> str:
    """``D/<name>``, D the stated working directory (spec 60 §8.5), else the relative name."""
    if view.working_directory is None:
        return name
    return f"{view.working_directory.rstrip('/')}/{name}"


def _offered_call(view: RequestView, name: str, arguments: Arguments) -> Call | None:
    """The call of tool ``name`` as the request offers it: a ``custom`` tool takes the freeform
    input (spec 60 §8.5), a function takes a JSON object (a freeform input as ``{"input":…}``); a
    tool only a code-mode host declares (Codex's ``exec``) is called through that host with a
    one-line script; not offered at all, ``None``."""
    for tool in view.tools:
        if tool.name == name and tool.kind == "custom":
            return Call(name=name, arguments=arguments if isinstance(arguments, str) else compact(arguments).decode(),
                        custom=True)
        if tool.name == name:
            return _call(name, arguments if isinstance(arguments, dict) else {"input": arguments})
    host = next((tool for tool in view.tools if name in tool.nested), None)
    if host is None:
        return None
    return Call(name=host.name, arguments=f"text(await tools.{name}({compact(arguments).decode()}));\n", custom=True)


VENDOR_SCENARIOS: dict[str, tuple[Candidate, ...]] = {
    "claude-write": (
        ("Write", lambda v: {"file_path": _in_directory(v, "note.md"), "content": EMULATED_NOTE}),
        ("mcp__metaharness__file_write", lambda v: {"path": "note.md", "text": EMULATED_NOTE}),
    ),
    "claude-write-through-link": (
        ("Write", lambda v: {"file_path": _in_directory(v, "src/up/note.md"), "content": EMULATED_NOTE}),
    ),
    "claude-read": (
        ("Read", lambda v: {"file_path": _in_directory(v, "README.md")}),
        ("mcp__metaharness__file_read", lambda v: {"path": "README.md"}),
    ),
    "claude-bash": (("Bash", lambda v: {"command": "echo emulated", "description": "Print a fixed line"}),),
    "codex-shell": (
        ("exec_command", lambda v: {"cmd": "echo emulated"}),
        ("shell_command", lambda v: {"command": "echo emulated"}),
        ("shell", lambda v: {"command": ["echo", "emulated"]}),
    ),
    "codex-patch": (("apply_patch", lambda v: PATCH),),
    "codex-patch-padded": (("apply_patch", lambda v: PADDED_PATCH),),
    "codex-catalogue-write": (("write_note", lambda v: {"path": "note.md", "text": EMULATED_NOTE}),),
}

SCENARIO_NAMES: tuple[str, ...] = (*LOOP_SCENARIOS, *VENDOR_SCENARIOS)


def _vendor(candidates: tuple[Candidate, ...], view: RequestView) -> Decision:
    """Spec 60 §8.5: no candidate offered ⇒ side request (text ``emulated``); R = 0 ⇒ the first
    offered candidate is called; R ≥ 1 ⇒ ``emulated work is done``."""
    calls: Iterator[Call | None] = (_offered_call(view, name, arguments(view)) for name, arguments in candidates)
    call = next((c for c in calls if c is not None), None)
    if call is None:
        return Decision(Reply(text="emulated"), side=True)
    if view.tool_results:
        return Decision(Reply(text="emulated work is done"), side=False)
    return Decision(Reply(call=call), side=False)


def decide(scenario: str, view: RequestView, n: int) -> Decision:
    """What ``scenario`` answers to the request ``view``, the ``n``-th POST (spec 60 §8.2)."""
    if scenario in VENDOR_SCENARIOS:
        return _vendor(VENDOR_SCENARIOS[scenario], view)
    return Decision(LOOP_SCENARIOS[scenario](view, n))
