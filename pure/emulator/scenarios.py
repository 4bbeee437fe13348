"""The emulator's scenarios (docs/loop.md#loop-scenarios loop scenarios, docs/loop.md#vendor-cli-scenarios vendor-CLI
scenarios): what each answers, as a pure function of the request's facts and the POST count N."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

import msgspec

from metaharness.pure.emulator.reply import Call, ProviderError, Reasoning, Reply
from metaharness.pure.emulator.request import RequestView
from metaharness.pure.jsonline import compact

Outcome: TypeAlias = Reply | ProviderError


class Decision(msgspec.Struct, frozen=True):
    """A scenario's answer, and whether it treats the request as a side request (vendor scenarios
    only; ``None`` for loop scenarios); ``call_number`` numbers its call instead of R + 1, so a
    sub-agent's calls never reuse its parent's ids."""

    outcome: Outcome
    side: bool | None = None
    call_number: int | None = None


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
    "truncated-once": lambda view, n: Reply(text=PASSED, effect="truncated" if n == 1 else "none"),
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
OUTSIDE_PATCH = "*** Begin Patch\n*** Add File: /etc/metaharness-outside.md\n+written by the emulator\n*** End Patch\n"
"""A patch adding a file outside every root codex's ``workspace-write`` sandbox grants."""

DEFAULT_NAMESPACE = "functions"
"""The Responses namespace whose functions are called by their bare name."""

Arguments: TypeAlias = dict[str, Any] | str
"""A candidate's arguments: a JSON object, or a freeform input (``apply_patch``)."""
Candidate: TypeAlias = tuple[str, Callable[[RequestView], Arguments]]


def _in_directory(view: RequestView, name: str) -> str:
    """``D/<name>``, D the stated working directory (docs/loop.md#vendor-cli-scenarios), else the relative name."""
    if view.working_directory is None:
        return name
    return f"{view.working_directory.rstrip('/')}/{name}"


def _offered_call(view: RequestView, name: str, arguments: Arguments) -> Call | None:
    """The call of tool ``name`` as the request offers it: a ``custom`` tool takes the freeform
    input, a function takes a JSON object (a freeform input as ``{"input":…}``) and
    names any namespace but the default one it was offered in; a
    tool only a code-mode host declares (Codex's ``exec``) is called through that host with a
    one-line script; not offered at all, ``None``."""
    for tool in view.tools:
        if tool.name == name and tool.kind == "custom":
            return Call(name=name, arguments=arguments if isinstance(arguments, str) else compact(arguments).decode(),
                        custom=True)
        if tool.name == name:
            call = _call(name, arguments if isinstance(arguments, dict) else {"input": arguments})
            named = tool.namespace not in (None, DEFAULT_NAMESPACE)
            return msgspec.structs.replace(call, namespace=tool.namespace) if named else call
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
    "codex-patch-outside": (("apply_patch", lambda v: OUTSIDE_PATCH),),
    "codex-catalogue-write": (("write_note", lambda v: {"path": "note.md", "text": EMULATED_NOTE}),),
    "gemini-write": (("write_file", lambda v: {"file_path": _in_directory(v, "note.md"), "content": EMULATED_NOTE}),),
    "gemini-shell": (("run_shell_command", lambda v: {"command": "echo emulated", "description": "Print a line"}),),
    "gemini-read": (("read_file", lambda v: {"file_path": _in_directory(v, "README.md")}),),
}

ESCALATED = {"sandbox_permissions": "require_escalated", "justification": "The step needs it"}
"""What a codex shell call adds to ask to run without its sandbox."""

def _added(path: str) -> str:
    """A patch adding the file ``path`` with one line."""
    return f"*** Begin Patch\n*** Add File: {path}\n+written by the emulator\n*** End Patch\n"


STEP_SHELLS: dict[str, tuple[tuple[str, Callable[[str], Arguments | None]], ...]] = {
    "claude-bash-steps": (("Bash", lambda line: {"command": line, "description": "A step the task names"}),),
    "claude-read-steps": (("Read", lambda line: {"file_path": line}),),
    "codex-shell-steps": (
        ("exec_command", lambda line: {"cmd": line}),
        ("shell_command", lambda line: {"command": line}),
        ("shell", lambda line: {"command": ["/bin/sh", "-c", line]}),
    ),
    "codex-patch-steps": (
        ("apply_patch", lambda line: _added(line.removeprefix("patch ")) if line.startswith("patch ") else None),
        ("exec_command", lambda line: None if line.startswith("patch ") else {"cmd": line}),
    ),
    "codex-tty-steps": (("exec_command", lambda line: {"cmd": line, "tty": True, "yield_time_ms": 2000}),),
    "codex-escalated-steps": (
        ("exec_command", lambda line: {"cmd": line, **ESCALATED}),
        ("shell_command", lambda line: {"command": line, **ESCALATED}),
    ),
    "loop-run-steps": (("run", lambda line: {"argv": _words(line)}),),
    "gemini-shell-steps": (("run_shell_command", lambda line: {"command": line, "description": "A step the task names"}),),
    "gemini-background-steps": (("run_shell_command", lambda line: {
        "command": line.removeprefix("bg "), "description": "A step the task names", **(
            {"is_background": True} if line[:3] == "bg " else {})}),),
    "gemini-file-steps": (
        ("write_file", lambda line: {"file_path": line[6:], "content": EMULATED_NOTE} if line[:6] == "write " else None),
        ("read_file", lambda line: {"file_path": line[5:]} if line[:5] == "read " else None),
        ("run_shell_command", lambda line: None if line[:6] == "write " or line[:5] == "read " else {
            "command": line, "description": "A step the task names"}),
    ),
}
"""Scenarios whose calls the task names: each line of the user's texts that begins ``$ `` is one call (a shell
command; for ``claude-read-steps`` the path a ``Read`` reads), in order, the next one once the previous result
came back; then ``emulated work is done`` (the loop's ``run`` takes the line's words, split as a POSIX shell
splits them)."""

SCENARIO_NAMES: tuple[str, ...] = (*LOOP_SCENARIOS, *VENDOR_SCENARIOS, *STEP_SHELLS)


def _words(line: str) -> list[str]:
    """A step line's words as a POSIX shell splits them; the line itself when its quotes do not close."""
    try:
        return shlex.split(line)
    except ValueError:
        return [line]


def _stepped(candidates: tuple[tuple[str, Callable[[str], Arguments | None]], ...], view: RequestView) -> Decision:
    steps = view.task_steps
    if view.tool_results >= len(steps):
        return Decision(Reply(text="emulated work is done"), side=not steps)
    line = steps[view.tool_results]
    calls = (_offered_call(view, name, given) for name, arguments in candidates if (given := arguments(line)) is not None)
    call = next((c for c in calls if c is not None), None)
    return Decision(Reply(text="emulated"), side=True) if call is None else Decision(Reply(call=call), side=False)


def _vendor(candidates: tuple[Candidate, ...], view: RequestView) -> Decision:
    """docs/loop.md#vendor-cli-scenarios: no candidate offered ⇒ side request (text ``emulated``); R = 0 ⇒ the first
    offered candidate is called; R ≥ 1 ⇒ ``emulated work is done``."""
    calls: Iterator[Call | None] = (_offered_call(view, name, arguments(view)) for name, arguments in candidates)
    call = next((c for c in calls if c is not None), None)
    if call is None:
        return Decision(Reply(text="emulated"), side=True)
    if view.tool_results:
        return Decision(Reply(text="emulated work is done"), side=False)
    return Decision(Reply(call=call), side=False)


def decide(scenario: str, view: RequestView, n: int) -> Decision:
    """What ``scenario`` answers to the request ``view``, the ``n``-th POST (docs/loop.md#answer-function)."""
    if scenario in VENDOR_SCENARIOS:
        return _vendor(VENDOR_SCENARIOS[scenario], view)
    if scenario in FIDELITY_SCENARIOS:
        return FIDELITY_SCENARIOS[scenario](view, n)
    if scenario in STEP_SHELLS:
        return _stepped(STEP_SHELLS[scenario], view)
    return Decision(LOOP_SCENARIOS[scenario](view, n))


# ---- Scenarios of the loop's extensions: skills, hooks and the app-server bridge (docs/loop-extensions.md).


def _skill_load(view: RequestView, n: int) -> Outcome:
    """``skill`` with the first skill name the offered ``skill`` lists; then text."""
    if view.tool_results:
        return Reply(text="the skill is loaded")
    offered = next((tool for tool in view.tools if tool.name == "skill"), None)
    name = _first_enum(offered.schema) if offered is not None else None
    if name is None:
        return Reply(text="no skill was offered")
    return Reply(call=_call("skill", {"name": name}))


def _hooked_calls(view: RequestView, n: int) -> Outcome:
    """``file_read`` of README.md, then ``file_write`` of note.md, then text: two calls for hooks to judge."""
    if view.tool_results == 0:
        return READ_README
    if view.tool_results == 1:
        return Reply(call=_call("file_write", {"path": "note.md", "text": "written past the hooks\n"}))
    return Reply(text="the hooks have had their say")


def _user_spoke_last(view: RequestView) -> bool:
    return bool(view.item_kinds) and view.item_kinds[-1] in ("message:user", "user:text")


def _bridge_tool(view: RequestView, n: int) -> Outcome:
    """Each user turn: the first offered tool, every required string property ``from the emulator``;
    once its result is in, text."""
    if not _user_spoke_last(view):
        return Reply(text="the client tool answered")
    if not view.tools:
        return Reply(text="no tool was offered")
    tool = view.tools[0]
    schema: dict[str, Any] = tool.schema if isinstance(tool.schema, dict) else {}
    properties = schema.get("properties")
    required = schema.get("required")
    arguments = {name: "from the emulator" for name in (required if isinstance(required, list) else ())
                 if isinstance(properties, dict) and isinstance(properties.get(name), dict)
                 and properties[name].get("type") == "string"}
    return Reply(call=_call(tool.name, arguments))


def _bridge_unregistered(view: RequestView, n: int) -> Outcome:
    """Each user turn: a call of ``unregistered_tool``, which no client registers; then text."""
    if not _user_spoke_last(view):
        return Reply(text="I see, that tool is not registered.")
    return Reply(call=_call("unregistered_tool", {}))


EXTENSION_SCENARIOS: dict[str, Callable[[RequestView, int], Outcome]] = {
    "skill-load": _skill_load,
    "hooked-calls": _hooked_calls,
    "bridge-tool": _bridge_tool,
    "bridge-unregistered": _bridge_unregistered,
}
LOOP_SCENARIOS.update(EXTENSION_SCENARIOS)
SCENARIO_NAMES = (*SCENARIO_NAMES, *EXTENSION_SCENARIOS)


# ---------------------------------------------------------------------------------------------------
# Vendor-fidelity scenarios (docs/vendor-facts.md): each scripts one thing the pinned CLIs do that an
# adapter must govern or report. A request that offers no tool is a side request (text ``emulated``).

SUB_AGENT_TASK = "print one line from the sub-agent"
SUB_AGENT_LINE = "echo from-the-sub-agent"
SUB_AGENT_CALLS = 101
"""The number of a sub-agent's first call (its id ``…_b10x_101``)."""
SLEEP_COMMAND = "sleep 37.25 && echo slept"
"""A command that outlives any test that stops its run (its odd duration names it among processes)."""


def _offered(view: RequestView, name: str) -> bool:
    return any(tool.name == name or name in tool.nested for tool in view.tools)


def _side(view: RequestView) -> Decision | None:
    return Decision(Reply(text="emulated"), side=True) if not view.tools else None


def _sub_agent_call(view: RequestView) -> Call | None:
    """A sub-agent's own call: the shell line through whatever the request offers for it."""
    return (_offered_call(view, "Bash", {"command": SUB_AGENT_LINE, "description": "Print a line"})
            or _offered_call(view, "exec_command", {"cmd": SUB_AGENT_LINE}))


def _claude_agent(view: RequestView, n: int) -> Decision:
    """The main thread (``Agent`` offered) spawns an ``Explore`` sub-agent, then ends; the sub-agent
    (offered no ``Agent``) runs one shell line, then ends."""
    side = _side(view)
    if side is not None:
        return side
    if _offered(view, "Agent"):
        if view.tool_results:
            return Decision(Reply(text="emulated work is done"), side=False)
        spawn = {"description": "Print a line", "prompt": SUB_AGENT_TASK, "subagent_type": "Explore"}
        return Decision(Reply(call=_call("Agent", spawn)), side=False)
    return _sub_agent(view)


def _sub_agent(view: RequestView) -> Decision:
    """A sub-agent's turn: one shell line, numbered from 101, then text."""
    call = None if view.tool_results else _sub_agent_call(view)
    if call is None:
        return Decision(Reply(text="the sub-agent is done"), side=False)
    return Decision(Reply(call=call), side=False, call_number=SUB_AGENT_CALLS + view.tool_results)


def _codex_spawn_agent(view: RequestView, n: int) -> Decision:
    """The main thread spawns a sub-agent with no parent history, waits for it, then ends; the
    sub-agent (whose task arrives as an ``agent_message`` input item at Codex 0.171.0) runs one shell
    line, then ends."""
    side = _side(view)
    if side is not None:
        return side
    if "agent_message" not in view.item_kinds:
        if view.tool_results == 0:
            spawn = {"task_name": "print_line", "message": SUB_AGENT_TASK, "fork_turns": "none"}
            return Decision(Reply(call=_offered_call(view, "spawn_agent", spawn)), side=False)
        if view.tool_results == 1:
            return Decision(Reply(call=_offered_call(view, "wait_agent", {"timeout_ms": 30000})), side=False)
        return Decision(Reply(text="emulated work is done"), side=False)
    return _sub_agent(view)


def _shell_sleep(view: RequestView, n: int) -> Decision:
    """One shell call that sleeps far longer than any test waits, then ends."""
    side = _side(view)
    if side is not None:
        return side
    call = (_offered_call(view, "Bash", {"command": SLEEP_COMMAND, "description": "Sleep"})
            or _offered_call(view, "exec_command", {"cmd": SLEEP_COMMAND}))
    if view.tool_results or call is None:
        return Decision(Reply(text="emulated work is done"), side=False)
    return Decision(Reply(call=call), side=False)


def _codex_workdir(view: RequestView, n: int) -> Decision:
    """One shell line run in the ``sub`` directory below the stated working directory, then text."""
    side = _side(view)
    if side is not None:
        return side
    call = _offered_call(view, "exec_command", {"cmd": "pwd", "workdir": _in_directory(view, "sub")})
    if view.tool_results or call is None:
        return Decision(Reply(text="emulated work is done"), side=False)
    return Decision(Reply(call=call), side=False)


def _claude_tool_search(view: RequestView, n: int) -> Decision:
    """``ToolSearch`` loads the deferred ``WebFetch``, then ``WebFetch`` is called, then text."""
    side = _side(view)
    if side is not None:
        return side
    if view.tool_results == 0:
        return Decision(Reply(call=_call("ToolSearch", {"query": "select:WebFetch", "max_results": 1})), side=False)
    if view.tool_results == 1:
        fetch = {"url": "http://127.0.0.1:9/", "prompt": "Summarise the page"}
        return Decision(Reply(call=_call("WebFetch", fetch)), side=False)
    return Decision(Reply(text="emulated work is done"), side=False)


PARALLEL_READS = ("README.md", "one.md", "two.md")
"""The files ``claude-parallel-reads`` reads in one message, each in the stated working directory."""


def _claude_parallel_reads(view: RequestView, n: int) -> Decision:
    """One message of three ``Read`` calls (parallel tool use), then text."""
    side = _side(view)
    if side is not None:
        return side
    if view.tool_results or not _offered(view, "Read"):
        return Decision(Reply(text="emulated work is done"), side=False)
    first, *others = (_call("Read", {"file_path": _in_directory(view, name)}) for name in PARALLEL_READS)
    return Decision(Reply(call=first, parallel=tuple(others)), side=False)
def _gemini_parallel(view: RequestView, n: int) -> Decision:
    """One turn of two calls side by side, a write of note.md and a shell line, then text."""
    side = _side(view)
    if side is not None:
        return side
    write = _offered_call(view, "write_file", {"file_path": _in_directory(view, "note.md"), "content": EMULATED_NOTE})
    shell = _offered_call(view, "run_shell_command", {"command": "echo emulated", "description": "Print a line"})
    if view.tool_results or write is None or shell is None:
        return Decision(Reply(text="emulated work is done"), side=False)
    return Decision(Reply(call=write, parallel=(shell,)), side=False)


FIDELITY_SCENARIOS: dict[str, Callable[[RequestView, int], Decision]] = {
    "gemini-parallel": _gemini_parallel,
    "claude-agent": _claude_agent,
    "codex-spawn-agent": _codex_spawn_agent,
    "shell-sleep": _shell_sleep,
    "codex-workdir": _codex_workdir,
    "claude-tool-search": _claude_tool_search,
    "claude-parallel-reads": _claude_parallel_reads,
}
SCENARIO_NAMES = (*SCENARIO_NAMES, *FIDELITY_SCENARIOS)
