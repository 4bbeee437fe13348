"""The emulator's vendor-fidelity scenarios as pure decisions over request bodies shaped like the
pinned CLIs' (docs/vendor-facts.md), and the Responses rendering of a namespaced call."""

from __future__ import annotations

import json
from typing import Any

from metaharness.pure.emulator.answer import answer_request
from metaharness.pure.emulator.reply import Call
from metaharness.pure.emulator.request import MESSAGES_WIRE, RESPONSES_WIRE, read_request
from metaharness.pure.emulator.scenarios import SLEEP_COMMAND, SUB_AGENT_LINE, SUB_AGENT_TASK, decide


def messages(tools: list[str], results: int = 0) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for number in range(results):
        content += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{number}", "name": "x", "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{number}", "content": "ok"}]}]  # fmt: skip
    return {"model": "m", "stream": True, "messages": content,
            "tools": [{"name": name, "input_schema": {"type": "object"}} for name in tools]}  # fmt: skip


def responses(results: int = 0, sub_agent: bool = False) -> dict[str, Any]:
    """Codex 0.171.0's shape: a code-mode ``exec`` in ``functions``, the agent tools in ``collaboration``."""
    exec_tool = {"type": "custom", "name": "exec", "description": "declare const tools: { exec_command(args: {"}
    collaboration = [{"type": "function", "name": name, "parameters": {"type": "object"}}
                     for name in ("spawn_agent", "wait_agent")]  # fmt: skip
    items: list[dict[str, Any]] = [
        {"type": "additional_tools", "tools": [{"type": "namespace", "name": "functions", "tools": [exec_tool]},
                                               {"type": "namespace", "name": "collaboration", "tools": collaboration}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
    ]  # fmt: skip
    if sub_agent:
        items.append({"type": "agent_message", "content": [{"type": "input_text", "text": SUB_AGENT_TASK}]})
    items += [{"type": "function_call_output", "call_id": f"c{number}", "output": "ok"} for number in range(results)]
    return {"model": "m", "stream": True, "input": items}


def test_claude_agent_spawns_from_the_main_thread_and_the_sub_agent_runs_a_line() -> None:
    main = decide("claude-agent", read_request(MESSAGES_WIRE, messages(["Agent", "Bash"])), 1)
    assert main.outcome.call is not None and main.outcome.call.name == "Agent"
    assert json.loads(main.outcome.call.arguments)["subagent_type"] == "Explore" and main.call_number is None
    sub = decide("claude-agent", read_request(MESSAGES_WIRE, messages(["Bash", "Read"])), 2)
    assert sub.outcome.call is not None and json.loads(sub.outcome.call.arguments)["command"] == SUB_AGENT_LINE
    assert sub.call_number == 101
    done = decide("claude-agent", read_request(MESSAGES_WIRE, messages(["Agent"], results=1)), 3)
    assert done.outcome.call is None and done.side is False
    assert decide("claude-agent", read_request(MESSAGES_WIRE, messages([])), 4).side is True


def test_codex_spawn_agent_names_the_namespace_and_the_sub_agent_calls_through_exec() -> None:
    spawn = decide("codex-spawn-agent", read_request(RESPONSES_WIRE, responses()), 1).outcome.call
    assert spawn == Call(name="spawn_agent", namespace="collaboration", arguments=json.dumps(
        {"task_name": "print_line", "message": SUB_AGENT_TASK, "fork_turns": "none"}, separators=(",", ":")))
    wait = decide("codex-spawn-agent", read_request(RESPONSES_WIRE, responses(results=1)), 2).outcome.call
    assert wait is not None and (wait.name, wait.namespace) == ("wait_agent", "collaboration")
    sub = decide("codex-spawn-agent", read_request(RESPONSES_WIRE, responses(sub_agent=True)), 3)
    assert sub.outcome.call is not None and sub.outcome.call.name == "exec" and SUB_AGENT_LINE in sub.outcome.call.arguments
    assert decide("codex-spawn-agent", read_request(RESPONSES_WIRE, responses(results=2)), 4).outcome.call is None


def test_a_namespaced_call_carries_its_namespace_on_the_wire_and_a_numbered_call_its_number() -> None:
    raw = json.dumps({**responses(sub_agent=True), "stream": False}).encode()
    body = json.loads(b"".join(answer_request("codex-spawn-agent", "POST", "/v1/responses", (), raw, 1).answer.chunks))
    (call,) = [item for item in body["output"] if item["type"] == "custom_tool_call"]
    assert call["call_id"] == "call_b10x_101"
    raw = json.dumps({**responses(), "stream": False}).encode()
    body = json.loads(b"".join(answer_request("codex-spawn-agent", "POST", "/v1/responses", (), raw, 1).answer.chunks))
    (call,) = [item for item in body["output"] if item["type"] == "function_call"]
    assert (call["name"], call["namespace"], call["call_id"]) == ("spawn_agent", "collaboration", "call_b10x_001")


def test_shell_sleep_calls_the_long_command_once() -> None:
    first = decide("shell-sleep", read_request(MESSAGES_WIRE, messages(["Bash"])), 1).outcome.call
    assert first is not None and json.loads(first.arguments)["command"] == SLEEP_COMMAND
    assert decide("shell-sleep", read_request(MESSAGES_WIRE, messages(["Bash"], results=1)), 2).outcome.call is None


def test_codex_workdir_runs_its_line_below_the_stated_directory() -> None:
    body = responses()
    body["input"].insert(1, {"type": "message", "role": "developer",
                             "content": [{"type": "input_text", "text": "Working directory: /w"}]})  # fmt: skip
    call = decide("codex-workdir", read_request(RESPONSES_WIRE, body), 1).outcome.call
    assert call is not None and call.name == "exec" and '"workdir":"/w/sub"' in call.arguments


def test_claude_tool_search_loads_web_fetch_then_calls_it() -> None:
    calls = [decide("claude-tool-search", read_request(MESSAGES_WIRE, messages(["ToolSearch"], results=r)), r + 1)
             for r in range(3)]  # fmt: skip
    assert [d.outcome.call.name if d.outcome.call else None for d in calls] == ["ToolSearch", "WebFetch", None]
