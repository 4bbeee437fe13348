"""The emulator's answer function, scenario by scenario on both wires (docs/loop.md#answer-function, #loop-scenarios,
#vendor-cli-scenarios).

Bodies are shaped as the loop (docs/loop.md#openai-responses, #anthropic-messages) and the vendor CLIs send them;
streams are read back with a plain frame split here, independent of the emulator's renderer and of the loop's decoder.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from metaharness.pure.emulator.answer import HttpAnswer, answer_request
from metaharness.pure.emulator.record import record_line
from metaharness.pure.emulator.scenarios import (
    EXTENSION_SCENARIOS,
    FIDELITY_SCENARIOS,
    LOOP_SCENARIOS,
    SCENARIO_NAMES,
    STEP_SHELLS,
    VENDOR_SCENARIOS,
)

CATALOGUE = ["file_read", "dir_list", "search", "find", "file_write", "file_edit"]
WIRES = ("responses", "messages")


def loop_body(wire: str, results: int = 0, tools: list[dict[str, Any]] | None = None,
              stream: bool = True, reasoning: bool = False) -> dict[str, Any]:
    """A body as the loop sends it: instruction, user text, then ``results`` call/result pairs."""
    defined = tools if tools is not None else [
        {"name": name, "description": name, "schema": {"type": "object"}} for name in CATALOGUE]
    if wire == "responses":
        items: list[dict[str, Any]] = [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are b10x."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        ]
        if reasoning:
            items.append({"type": "reasoning", "id": "rs_b10x_001", "summary": [],
                          "encrypted_content": "OPAQUE-REASONING-BLOB"})
        for i in range(1, results + 1):
            items.append({"type": "function_call", "call_id": f"call_b10x_{i:03d}", "name": "file_read",
                          "arguments": "{}"})
            items.append({"type": "function_call_output", "call_id": f"call_b10x_{i:03d}", "output": "{}"})
        return {"include": ["reasoning.encrypted_content"], "input": items, "model": "b10x-emulated",
                "prompt_cache_key": "s", "store": False, "stream": stream,
                "tools": [{"type": "function", "name": t["name"], "description": t["description"],
                           "parameters": t["schema"], "strict": False} for t in defined]}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for i in range(1, results + 1):
        assistant: list[dict[str, Any]] = []
        if reasoning and i == 1:
            assistant.append({"type": "thinking", "thinking": "x", "signature": "OPAQUE-REASONING-BLOB"})
        assistant.append({"type": "tool_use", "id": f"toolu_b10x_{i:03d}", "name": "file_read", "input": {}})
        messages.append({"role": "assistant", "content": assistant})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_b10x_{i:03d}", "content": "{}", "is_error": False}]})
    return {"max_tokens": 8192, "messages": messages, "model": "b10x-emulated", "stream": stream,
            "system": [{"type": "text", "text": "You are b10x.", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": t["name"], "description": t["description"], "input_schema": t["schema"]}
                      for t in defined]}


def ask(scenario: str, wire: str, body: dict[str, Any] | bytes, n: int = 1,
        headers: tuple[tuple[str, str], ...] = ()) -> HttpAnswer:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return answer_request(scenario, "POST", f"/v1/{wire}", headers, raw, n).answer


def events(answer: HttpAnswer) -> list[dict[str, Any]]:
    """The data payloads of a whole stream, checking each frame's ``event:`` names its ``type``."""
    assert answer.status == 200
    assert dict(answer.headers)["content-type"] == "text/event-stream"
    payloads = []
    for frame in b"".join(answer.chunks).split(b"\n\n")[:-1]:
        lines = frame.decode().split("\n")
        if lines == ["data: [DONE]"]:
            payloads.append({"type": "[DONE]"})
            continue
        assert lines[0].startswith("event: ") and lines[1].startswith("data: ")
        payload = json.loads(lines[1][len("data: "):])
        assert payload["type"] == lines[0][len("event: "):]
        payloads.append(payload)
    return payloads


def text_of(stream: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] if "delta" in e and isinstance(e["delta"], str) else e["delta"]["text"]
            for e in stream if e["type"] in ("response.output_text.delta", "content_block_delta")
            and (isinstance(e["delta"], str) or e["delta"]["type"] == "text_delta")]


def call_of(stream: list[dict[str, Any]]) -> tuple[str, str, str]:
    """(call id, name, argument text) of the one call a stream carries."""
    if stream[-1]["type"] == "[DONE]":
        item = next(i for i in stream[-2]["response"]["output"] if i["type"] == "function_call")
        deltas = [e["delta"] for e in stream if e["type"] == "response.function_call_arguments.delta"]
        assert "".join(deltas) == item["arguments"]
        return item["call_id"], item["name"], item["arguments"]
    start = next(e["content_block"] for e in stream if e["type"] == "content_block_start"
                 and e["content_block"]["type"] == "tool_use")
    deltas = [e["delta"]["partial_json"] for e in stream if e["type"] == "content_block_delta"
              and e["delta"]["type"] == "input_json_delta"]
    return start["id"], start["name"], "".join(deltas)


def usage_of(stream: list[dict[str, Any]]) -> dict[str, int] | None:
    """Neutral usage (docs/loop.md#openai-responses, #anthropic-messages): input incl. cached, cached, output."""
    if stream[-1]["type"] == "[DONE]":
        use = stream[-2]["response"].get("usage")
        if use is None:
            return None
        return {"input": use["input_tokens"], "cached": use["input_tokens_details"]["cached_tokens"],
                "output": use["output_tokens"]}
    start = stream[0]["message"].get("usage")
    delta = next(e for e in stream if e["type"] == "message_delta").get("usage")
    if start is None:
        assert delta is None
        return None
    return {"input": start["input_tokens"] + start["cache_read_input_tokens"],
            "cached": start["cache_read_input_tokens"], "output": delta["output_tokens"]}


def terminal(stream: list[dict[str, Any]]) -> str:
    if stream[-1]["type"] == "[DONE]":
        return stream[-2]["type"]
    assert stream[-1]["type"] == "message_stop"
    return next(e for e in stream if e["type"] == "message_delta")["delta"]["stop_reason"]


@pytest.mark.parametrize("wire", WIRES)
def test_text_is_two_deltas_split_at_half_with_fixed_usage(wire: str) -> None:
    stream = events(ask("text", wire, loop_body(wire)))
    assert text_of(stream) == ["provider emu", "lation passed"]
    assert usage_of(stream) == {"input": 42, "cached": 7, "output": 4}
    assert terminal(stream) == ("response.completed" if wire == "responses" else "end_turn")
    assert (stream[-1]["type"] == "[DONE]") is (wire == "responses")


@pytest.mark.parametrize("wire", WIRES)
def test_flat_tool_calls_then_answers_once_a_result_is_in_the_body(wire: str) -> None:
    first = events(ask("flat-tool", wire, loop_body(wire)))
    call_id = "call_b10x_001" if wire == "responses" else "toolu_b10x_001"
    assert call_of(first) == (call_id, "file_read", '{"path":"README.md"}')
    assert usage_of(first) == {"input": 42, "cached": 7, "output": 8}
    assert terminal(first) == ("response.completed" if wire == "responses" else "tool_use")
    second = events(ask("flat-tool", wire, loop_body(wire, results=1), n=2))
    assert text_of(second) == ["The file says:", " hello harness"]
    assert usage_of(second) == {"input": 42, "cached": 7, "output": 4}


@pytest.mark.parametrize("wire", WIRES)
def test_ids_follow_the_post_count_and_the_result_count(wire: str) -> None:
    stream = events(ask("flat-write", wire, loop_body(wire, results=2), n=7))
    assert text_of(stream) == ["that is what ", "the tool said"]
    stream = events(ask("flat-write", wire, loop_body(wire), n=7))
    if wire == "responses":
        assert stream[0]["response"]["id"] == "resp_b10x_007"
        assert stream[-2]["response"]["output"][0]["id"] == "fc_b10x_001"
    else:
        assert stream[0]["message"]["id"] == "msg_b10x_007"
    assert call_of(stream)[1:] == ("file_write", '{"path":"note.md","text":"written by the harness\\n"}')


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(("scenario", "name", "arguments", "then"), [
    ("flat-edit", "file_edit", '{"path":"README.md","old":"hello","new":"goodbye"}', "that is what the tool said"),
    ("unpublished-tool", "shell.exec", '{"cmd":"id"}', "I see, I cannot use that."),
    ("bad-arguments", "file_read", "{not json", None),
])
def test_call_scenarios(wire: str, scenario: str, name: str, arguments: str, then: str | None) -> None:
    assert call_of(events(ask(scenario, wire, loop_body(wire))))[1:] == (name, arguments)
    later = events(ask(scenario, wire, loop_body(wire, results=1), n=2))
    if then is None:
        assert call_of(later)[1:] == (name, arguments)
    else:
        assert "".join(text_of(later)) == then


@pytest.mark.parametrize("wire", WIRES)
def test_flat_run_calls_the_first_offered_program(wire: str) -> None:
    run = {"name": "run", "description": "Run.", "schema": {
        "type": "object", "properties": {"argv": {"type": "array", "minItems": 1, "items": {"type": "string"},
                                                   "prefixItems": [{"type": "string", "enum": ["git", "cargo"]}]}},
        "required": ["argv"], "additionalProperties": False}}
    stream = events(ask("flat-run", wire, loop_body(wire, tools=[run])))
    assert call_of(stream)[1:] == ("run", '{"argv":["git"]}')
    bare = events(ask("flat-run", wire, loop_body(wire)))
    assert "".join(text_of(bare)) == "no program was offered"


def test_reasoning_item_and_thinking_block_carry_summary_and_blob() -> None:
    stream = events(ask("reasoning", "responses", loop_body("responses")))
    output = stream[-2]["response"]["output"]
    assert output[0] == {"id": "rs_b10x_001", "type": "reasoning",
                         "summary": [{"type": "summary_text", "text": "Reading the file first."}],
                         "encrypted_content": "OPAQUE-REASONING-BLOB"}
    assert [e["delta"] for e in stream if e["type"] == "response.reasoning_summary_text.delta"] == [
        "Reading the file first."]
    assert output[1]["name"] == "file_read"
    stream = events(ask("reasoning", "messages", loop_body("messages")))
    deltas = [e["delta"] for e in stream if e["type"] == "content_block_delta" and e["index"] == 0]
    assert deltas == [{"type": "thinking_delta", "thinking": "Reading the file first."},
                      {"type": "signature_delta", "signature": "OPAQUE-REASONING-BLOB"}]
    assert call_of(stream)[1] == "file_read"


@pytest.mark.parametrize("wire", WIRES)
def test_unauthorized_and_cold_answer_statuses_with_the_wire_error_shape(wire: str) -> None:
    refused = ask("unauthorized", wire, loop_body(wire))
    assert refused.status == 401 and refused.label == "status:401"
    body = json.loads(refused.chunks[0])
    if wire == "responses":
        assert set(body["error"]) == {"type", "code", "message"}
    else:
        assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
    for n in (1, 2, 3, 4):
        cold = ask("cold", wire, loop_body(wire), n=n)
        assert (cold.status, dict(cold.headers)["retry-after"]) == (503, "5")
    once = ask("cold-once", wire, loop_body(wire), n=1)
    assert (once.status, dict(once.headers)["retry-after"]) == (503, "0")
    assert "".join(text_of(events(ask("cold-once", wire, loop_body(wire), n=2)))) == "provider emulation passed"


@pytest.mark.parametrize("wire", WIRES)
def test_fails_after_turn_refuses_from_the_second_post(wire: str) -> None:
    assert call_of(events(ask("fails-after-turn", wire, loop_body(wire), n=1)))[1] == "file_read"
    assert ask("fails-after-turn", wire, loop_body(wire, results=1), n=2).status == 400


@pytest.mark.parametrize("wire", WIRES)
def test_failed_streams_the_wire_failure_event(wire: str) -> None:
    answer = ask("failed", wire, loop_body(wire))
    assert answer.label == "stream:failed"
    stream = events(answer)
    if wire == "responses":
        failed = next(e for e in stream if e["type"] == "response.failed")
        assert failed["response"]["error"]["code"] == "invalid_request_error"
    else:
        assert stream[-1] == {"type": "error", "error": {"type": "invalid_request_error",
                                                         "message": stream[-1]["error"]["message"]}}
    assert ask("failed", wire, loop_body(wire, stream=False)).status == 400


@pytest.mark.parametrize("wire", WIRES)
def test_incomplete_stops_at_the_output_bound(wire: str) -> None:
    stream = events(ask("incomplete", wire, loop_body(wire)))
    assert "".join(text_of(stream)) == "provider emul"
    if wire == "responses":
        assert terminal(stream) == "response.incomplete"
        assert stream[-2]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    else:
        assert terminal(stream) == "max_tokens"


@pytest.mark.parametrize("wire", WIRES)
def test_no_usage_and_unknown_events(wire: str) -> None:
    assert usage_of(events(ask("no-usage", wire, loop_body(wire)))) is None
    stream = events(ask("unknown-events", wire, loop_body(wire)))
    note = "response.emulator_note" if wire == "responses" else "emulator_note"
    assert [e["type"] for e in stream].count(note) == 1
    assert "".join(text_of(stream)) == "provider emulation passed"


@pytest.mark.parametrize("wire", WIRES)
def test_slow_cuts_the_text_into_eight_deltas_with_a_pause_before_each_frame(wire: str) -> None:
    answer = ask("slow", wire, loop_body(wire))
    text = "provider emulation passed"
    assert answer.delay_ms == 500
    assert text_of(events(answer)) == [text[k * 25 // 8:(k + 1) * 25 // 8] for k in range(8)]


@pytest.mark.parametrize("wire", WIRES)
def test_malformed_sends_the_first_event_then_a_non_json_payload(wire: str) -> None:
    answer = ask("malformed", wire, loop_body(wire))
    assert answer.label == "stream:malformed" and len(answer.chunks) == 2
    first = answer.chunks[0].decode().split("\n")
    assert json.loads(first[1][6:])["type"] in ("response.created", "message_start")
    assert answer.chunks[1] == b"data: {not json\n\n"


@pytest.mark.parametrize("wire", WIRES)
def test_truncated_stops_after_one_delta_inside_a_frame(wire: str) -> None:
    answer = ask("truncated", wire, loop_body(wire))
    whole = b"".join(answer.chunks)
    assert answer.close and not whole.endswith(b"\n\n")
    frames = whole.split(b"\n\n")
    assert frames[-1] and b"[DONE]" not in whole
    assert sum(b"delta" in f.split(b"\n")[0] for f in frames[:-1]) == 1


@pytest.mark.parametrize("wire", WIRES)
def test_non_streaming_requests_get_one_json_body(wire: str) -> None:
    answer = ask("flat-tool", wire, loop_body(wire, stream=False))
    assert dict(answer.headers)["content-type"] == "application/json" and not answer.close
    body = json.loads(answer.chunks[0])
    if wire == "responses":
        assert body["object"] == "response" and body["output"][0]["call_id"] == "call_b10x_001"
    else:
        assert body["content"] == [{"type": "tool_use", "id": "toolu_b10x_001", "name": "file_read",
                                    "input": {"path": "README.md"}}]
        assert body["usage"] == {"input_tokens": 35, "cache_read_input_tokens": 7, "output_tokens": 8}


def claude_body(tools: list[str], results: int = 0, cwd: str = "/tmp/work") -> dict[str, Any]:
    """A Claude Code-shaped body: long system blocks stating the cwd, unknown keys and tool types."""
    body = loop_body("messages", results=results, tools=[
        {"name": t, "description": "x" * 2000, "schema": {"type": "object"}} for t in tools])
    body["system"] = [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
                      {"type": "text", "text": f"<env>\nWorking directory: {cwd}\nIs a git repo: no\n</env>"}]
    body["tools"].append({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})
    body.update(metadata={"user_id": "u"}, thinking={"type": "disabled"}, context_management={})
    return body


def test_claude_write_writes_into_the_stated_working_directory() -> None:
    stream = events(ask("claude-write", "messages", claude_body(["Task", "Bash", "Write", "Read"])))
    assert call_of(stream)[1:] == ("Write", json.dumps(
        {"file_path": "/tmp/work/note.md", "content": "written by the emulator\n"}, separators=(",", ":")))
    done = events(ask("claude-write", "messages", claude_body(["Write"], results=1)))
    assert "".join(text_of(done)) == "emulated work is done"
    mcp = events(ask("claude-write", "messages", claude_body(["mcp__metaharness__file_write"])))
    assert json.loads(call_of(mcp)[2]) == {"path": "note.md", "text": "written by the emulator\n"}


def test_claude_read_without_a_stated_directory_names_the_relative_file() -> None:
    body = claude_body(["Read"])
    body["system"] = "You are Claude Code."
    assert json.loads(call_of(events(ask("claude-read", "messages", body)))[2]) == {"file_path": "README.md"}


def test_a_request_offering_no_candidate_is_a_side_request() -> None:
    body = claude_body([])
    body["stream"] = False
    exchange = answer_request("claude-bash", "POST", "/v1/messages", (), json.dumps(body).encode(), 3)
    assert exchange.side is True
    assert json.loads(exchange.answer.chunks[0])["content"] == [{"type": "text", "text": "emulated"}]
    main = answer_request("claude-bash", "POST", "/v1/messages", (), json.dumps(claude_body(["Bash"])).encode(), 4)
    assert main.side is False and main.answer.label == "call:Bash"


def codex_body(tools: list[dict[str, Any]], results: int = 0) -> dict[str, Any]:
    body = loop_body("responses", results=results, tools=[])
    body["tools"] = [*tools, {"type": "web_search"}, {"type": "local_shell"}]
    body.update(instructions="You are Codex.", parallel_tool_calls=False, service_tier=None)
    return body


def test_codex_shell_takes_the_first_offered_candidate() -> None:
    tools = [{"type": "function", "name": n, "parameters": {}} for n in ("shell", "shell_command", "exec_command")]
    assert call_of(events(ask("codex-shell", "responses", codex_body(tools))))[1:] == (
        "exec_command", '{"cmd":"echo emulated"}')
    assert call_of(events(ask("codex-shell", "responses", codex_body(tools[:1]))))[1:] == (
        "shell", '{"command":["echo","emulated"]}')


def test_codex_patch_is_a_custom_call_when_apply_patch_is_a_custom_tool() -> None:
    patch = "*** Begin Patch\n*** Add File: note.md\n+written by the emulator\n*** End Patch\n"
    stream = events(ask("codex-patch", "responses", codex_body(
        [{"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}])))
    item = stream[-2]["response"]["output"][0]
    assert item["type"] == "custom_tool_call" and item["input"] == patch and item["call_id"] == "call_b10x_001"
    assert [e["delta"] for e in stream if e["type"] == "response.custom_tool_call_input.delta"] == [patch]
    function = events(ask("codex-patch", "responses", codex_body(
        [{"type": "function", "name": "apply_patch", "parameters": {}}])))
    assert json.loads(call_of(function)[2]) == {"input": patch}
    done = events(ask("codex-patch", "responses", codex_body([{"type": "custom", "name": "apply_patch"}], 1)))
    assert "".join(text_of(done)) == "emulated work is done"


def test_responses_input_may_be_a_plain_string() -> None:
    body = {"model": "m", "input": "hello", "stream": True}
    assert "".join(text_of(events(ask("text", "responses", body)))) == "provider emulation passed"


def test_routes_and_body_admission() -> None:
    def status(method: str, path: str, raw: bytes = b"", headers: tuple[tuple[str, str], ...] = ()) -> int:
        return answer_request("text", method, path, headers, raw, 1).answer.status

    body = json.dumps(loop_body("messages")).encode()
    assert status("POST", "/v1/messages", gzip.compress(body), (("Content-Encoding", "gzip"),)) == 200
    assert status("POST", "/v1/messages", body, (("content-encoding", "br"),)) == 415
    assert status("POST", "/v1/messages", b"{not json") == 400
    assert status("POST", "/v1/messages", b"[1]") == 400
    assert status("POST", "/v1/responses", b" " * (4 * 1024 * 1024 + 1)) == 413
    assert status("POST", "/v1/responses", gzip.compress(b" " * (4 * 1024 * 1024 + 1)),
                  (("content-encoding", "gzip"),)) == 413
    assert status("POST", "/v1/chat/completions", body) == 404
    assert status("GET", "/v1/messages") == 404
    models = answer_request("text", "GET", "/v1/models", (), b"", 1).answer
    assert json.loads(models.chunks[0]) == {"object": "list", "data": []}
    count = answer_request("text", "POST", "/v1/messages/count_tokens", (), body, 1).answer
    assert json.loads(count.chunks[0]) == {"input_tokens": 42}


def test_record_line_names_the_credential_header_never_its_value() -> None:
    headers = (("Host", "127.0.0.1"), ("Authorization", "Bearer sk-very-secret"), ("Cookie", "c=cookie-value"),
               ("anthropic-version", "2023-06-01"), ("X-Trace", "trace-value"))
    raw = (json.dumps(loop_body("messages", results=1, reasoning=True)) + "\n").encode()
    exchange = answer_request("reasoning", "POST", "/v1/messages", headers, raw, 2)
    line = record_line(seq=5, scenario="reasoning", method="POST", path="/v1/messages", query="beta=true",
                       headers=headers, raw=raw, exchange=exchange, with_body=False)
    assert line.endswith(b"\n")
    for secret in (b"sk-very-secret", b"cookie-value", b"trace-value"):
        assert secret not in line
    record = json.loads(line)
    assert list(record) == [
        "seq", "scenario", "method", "path", "query", "wire", "side", "stream", "model", "header_names", "accept",
        "content_type", "user_agent", "originator", "anthropic_version", "anthropic_beta", "credential_header",
        "credential_length", "tool_names", "tool_results", "replayed_reasoning", "instruction_text",
        "system_cache_control", "first_user_text", "item_kinds", "output_bound", "store", "include", "body_bytes",
        "body_trailing_newline", "body_sha256", "answer"]
    assert record["credential_header"] == "authorization" and record["credential_length"] == 14
    assert record["header_names"] == ["host", "authorization", "cookie", "anthropic-version", "x-trace"]
    assert (record["wire"], record["tool_results"], record["replayed_reasoning"]) == ("anthropic-messages", 1, 1)
    assert record["instruction_text"] == "You are b10x."
    assert record["system_cache_control"] == {"type": "ephemeral"}
    assert record["item_kinds"] == ["user:text", "assistant:thinking", "assistant:tool_use", "user:tool_result"]
    assert (record["body_bytes"], record["body_trailing_newline"]) == (len(raw), True)
    assert record["answer"] == "text" and record["output_bound"] == 8192
    with_body = record_line(seq=5, scenario="reasoning", method="POST", path="/v1/messages", query=None,
                            headers=headers, raw=raw, exchange=exchange, with_body=True)
    assert json.loads(with_body)["body"] == json.loads(raw)
    assert b"sk-very-secret" not in with_body


def test_every_scenario_is_named_once() -> None:
    assert len(set(SCENARIO_NAMES)) == len(SCENARIO_NAMES) == (
        len(LOOP_SCENARIOS) + len(VENDOR_SCENARIOS) + len(FIDELITY_SCENARIOS) + len(STEP_SHELLS))
    assert set(LOOP_SCENARIOS) == {
        "text", "flat-tool", "flat-write", "flat-edit", "flat-run", "unpublished-tool", "reasoning",
        "bad-arguments", "unauthorized", "cold", "cold-once", "slow", "malformed", "truncated", "truncated-once", "failed",
        "fails-after-turn", "incomplete", "no-usage", "unknown-events"} | set(EXTENSION_SCENARIOS)
    assert set(EXTENSION_SCENARIOS) == {"skill-load", "hooked-calls", "bridge-tool", "bridge-unregistered"}
    assert set(VENDOR_SCENARIOS) == {
        "claude-write", "claude-write-through-link", "claude-read", "claude-bash", "codex-shell", "codex-patch",
        "codex-patch-padded", "codex-patch-outside", "codex-catalogue-write", "gemini-write", "gemini-shell", "gemini-read"}


def codex_code_mode_body(results: int = 0) -> dict[str, Any]:
    """Codex 0.171.0's default model: no top-level tools; an ``additional_tools`` input item holds
    namespaces whose ``exec`` custom tool declares the nested tools in its description."""
    host = {"type": "custom", "name": "exec", "format": {"type": "grammar"}, "description": (
        "Run JavaScript.\n### `apply_patch`\n```ts\ndeclare const tools: { apply_patch(input: string): "
        "Promise<unknown>; };\n```\n### `exec_command`\n```ts\ndeclare const tools: { exec_command(args: {\n"
        "  cmd: string;\n}): Promise<unknown>; };\n```\n")}
    body = loop_body("responses", results=results, tools=[])
    del body["tools"]
    body["input"].insert(0, {"type": "additional_tools", "role": "developer", "tools": [
        {"type": "namespace", "name": "functions", "tools": [host, {"type": "function", "name": "wait"}]},
        {"type": "namespace", "name": "clock", "tools": [{"type": "function", "name": "sleep"}]}]})
    return body


def test_codex_code_mode_calls_the_nested_tool_through_its_host() -> None:
    stream = events(ask("codex-shell", "responses", codex_code_mode_body()))
    item = stream[-2]["response"]["output"][0]
    assert (item["type"], item["name"]) == ("custom_tool_call", "exec")
    assert item["input"] == 'text(await tools.exec_command({"cmd":"echo emulated"}));\n'
    patch = events(ask("codex-patch", "responses", codex_code_mode_body()))[-2]["response"]["output"][0]
    assert patch["input"] == "text(await tools.apply_patch(" + json.dumps(
        "*** Begin Patch\n*** Add File: note.md\n+written by the emulator\n*** End Patch\n") + "));\n"
    done = events(ask("codex-shell", "responses", codex_code_mode_body(results=1)))
    assert "".join(text_of(done)) == "emulated work is done"


def test_record_lists_namespaced_and_additional_tools() -> None:
    raw = json.dumps(codex_code_mode_body()).encode()
    exchange = answer_request("codex-shell", "POST", "/v1/responses", (), raw, 1)
    line = json.loads(record_line(seq=1, scenario="codex-shell", method="POST", path="/v1/responses", query=None,
                                  headers=(), raw=raw, exchange=exchange, with_body=False))
    assert line["tool_names"] == ["exec", "wait", "sleep"]
    assert line["item_kinds"][0] == "additional_tools" and line["side"] is False


def test_claude_codes_primary_working_directory_line_names_the_directory() -> None:
    body = claude_body(["Write"])
    body["system"][1]["text"] = "Environment:\n - Primary working directory: /srv/w s\n - Platform: linux\n"
    call = call_of(events(ask("claude-write", "messages", body)))
    assert json.loads(call[2])["file_path"] == "/srv/w s/note.md"
