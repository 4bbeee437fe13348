"""The ``google-generative`` wire (pure/wires/google_generative.py): a neutral turn projected to the exact body
Gemini CLI's wire carries, and the emulator's own streams decoded into calls, text, stop and usage."""

from __future__ import annotations

import json

from metaharness.pure.emulator.answer import answer_request
from metaharness.pure.wires.google_generative import (
    calls_of,
    decode_stream,
    endpoint_path,
    project_request,
    request_headers,
)
from metaharness.pure.wires.neutral import (
    AssistantText,
    Opaque,
    Outcome,
    ProviderStop,
    Sampling,
    StreamText,
    ToolCall,
    ToolResult,
    ToolSpec,
    TurnRequest,
    UserText,
    WireError,
)
from metaharness.pure.wires.sse import frame_sse

TOOLS = (ToolSpec("write_file", "Write a file.", {"type": "object"}),
         ToolSpec("run_shell_command", "Run a line.", {"type": "object"}))  # fmt: skip


def request(*items: object, **sampling: object) -> TurnRequest:
    return TurnRequest(model="gemini-2.5-pro", instruction="Be brief.", items=items, tools=TOOLS,  # type: ignore[arg-type]
                       sampling=Sampling(**sampling))  # type: ignore[arg-type]


def streamed(scenario: str, turn: TurnRequest) -> list[object]:
    """The emulator's answer to the projected request, decoded."""
    projected = project_request(turn).unwrap()
    exchange = answer_request(scenario, "POST", projected.path, (), projected.body, 1)
    return list(decode_stream(frame_sse(exchange.answer.chunks), turn.model))


def test_the_projection_is_the_generative_language_body() -> None:
    turn = request(UserText("hi"), ToolCall("c1", "write_file", {"file_path": "a"}), ToolResult("c1", "ok", False),
                   max_output_tokens=64)  # fmt: skip
    projected = project_request(turn).unwrap()
    assert projected.path == endpoint_path("gemini-2.5-pro") == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    body = json.loads(projected.body)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][2]["parts"][0]["functionResponse"] == {
        "id": "c1", "name": "write_file", "response": {"output": "ok"}}
    assert [d["name"] for d in body["tools"][0]["functionDeclarations"]] == ["write_file", "run_shell_command"]
    assert body["generationConfig"] == {"maxOutputTokens": 64}
    assert projected.body.endswith(b"\n")
    assert request_headers("k")[-1] == ("x-goog-api-key", "k") and len(request_headers(None)) == 2


def test_refusals_before_anything_is_sent() -> None:
    assert project_request(request(UserText("hi"), effort="high")).failure().error == "refused"
    assert project_request(request(UserText("hi"), temperature=3.0)).failure().error == "refused"
    crossed = project_request(request(Opaque("openai-responses", {}), UserText("hi"))).failure()
    assert crossed.error == "cross-wire"


def test_a_text_turn_decodes_to_deltas_and_an_end_turn() -> None:
    events = streamed("text", request(UserText("hi")))
    assert [e.text for e in events if isinstance(e, StreamText)] == ["provider emu", "lation passed"]
    outcome = events[-1]
    assert isinstance(outcome, Outcome)
    assert outcome.items == (AssistantText("provider emulation passed"),)
    assert outcome.stop == ProviderStop("end-turn") and outcome.model == "gemini-2.5-pro"
    assert outcome.usage is not None and (outcome.usage.input_tokens, outcome.usage.output_tokens) == (42, 4)


def test_parallel_calls_decode_in_order_with_their_ids() -> None:
    outcome = streamed("gemini-parallel", request(UserText("hi")))[-1]
    assert isinstance(outcome, Outcome) and outcome.stop == ProviderStop("tool-calls")
    assert [(c.call_id, c.name) for c in calls_of(outcome)] == [
        ("call_b10x_001", "write_file"), ("call_b10x_002", "run_shell_command")]
    assert calls_of(outcome)[1].arguments["command"] == "echo emulated"


def test_errors_truncation_and_ids_the_stream_leaves_out() -> None:
    failed = streamed("failed", request(UserText("hi")))[-1]
    assert isinstance(failed, WireError) and failed.error == "refused"
    no_finish = [b'data: {"candidates":[{"content":{"parts":[{"text":"half"}]}}]}\r\n\r\n']
    truncated = list(decode_stream(frame_sse(no_finish), "m"))[-1]
    assert isinstance(truncated, WireError) and truncated.error == "truncated"
    unnamed = [(b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"glob","args":{}}}]},'
                b'"finishReason":"STOP"}]}\r\n\r\n')]
    outcome = list(decode_stream(frame_sse(unnamed), "m"))[-1]
    assert isinstance(outcome, Outcome) and calls_of(outcome) == (ToolCall("glob#1", "glob", {}),)
    assert outcome.model == "m"
