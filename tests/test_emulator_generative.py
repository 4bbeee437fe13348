"""The emulator's Generative Language wire (docs/loop.md#generative-language): routes, the request read
from ``contents``/``functionDeclarations``, streamed and plain answers, parallel calls, errors."""

from __future__ import annotations

import json
from typing import Any

from metaharness.pure.emulator.answer import answer_request
from metaharness.pure.emulator.record import record_line
from metaharness.pure.emulator.request import GENERATIVE_WIRE, path_model, read_request, wire_of

STREAM = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
PLAIN = "/v1beta/models/gemini-2.5-pro:generateContent"


def body(tools: list[str], results: int = 0) -> bytes:
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "write a note"}]}]
    for number in range(results):
        contents += [
            {"role": "model", "parts": [{"functionCall": {"name": tools[0], "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": tools[0], "response": {"n": number}}}]},
        ]
    declared = [{"name": name, "parametersJsonSchema": {"type": "object"}} for name in tools]
    value = {"contents": contents, "systemInstruction": {"parts": [{"text": "You are an agent."}]},
             "tools": [{"functionDeclarations": declared}], "generationConfig": {"maxOutputTokens": 99}}
    return json.dumps(value).encode()


def frames(chunks: tuple[bytes, ...]) -> list[dict[str, Any]]:
    """Each chunk is exactly one ``data: <json>\\r\\n\\r\\n`` frame."""
    decoded = []
    for chunk in chunks:
        assert chunk.startswith(b"data: ") and chunk.endswith(b"\r\n\r\n"), chunk
        decoded.append(json.loads(chunk[len(b"data: "):-4]))
    return decoded


def test_the_path_names_the_wire_and_the_model() -> None:
    assert wire_of(STREAM) == wire_of(PLAIN) == GENERATIVE_WIRE
    assert wire_of("/v1beta/models/m:countTokens") == GENERATIVE_WIRE
    assert wire_of("/v1beta/models/m:embedContent") is None
    assert path_model(STREAM) == "gemini-2.5-pro"
    assert path_model("/v1/responses") is None


def test_the_request_is_read_from_contents_and_declarations() -> None:
    view = read_request(GENERATIVE_WIRE, json.loads(body(["write_file", "run_shell_command"], results=1)))
    assert [tool.name for tool in view.tools] == ["write_file", "run_shell_command"]
    assert view.tools[0].schema == {"type": "object"}
    assert view.tool_results == 1
    assert view.item_kinds == ("user:text", "model:functionCall", "user:functionResponse")
    assert view.first_user_text == "write a note"
    assert view.instruction_text == "You are an agent."
    assert view.output_bound == 99


def test_a_streamed_text_turn_is_data_frames_ending_in_stop() -> None:
    exchange = answer_request("text", "POST", STREAM, (), body(["read_file"]), 1)
    assert exchange.answer.status == 200 and exchange.answer.label == "text"
    chunks = frames(exchange.answer.chunks)
    text = "".join(part["text"] for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"])
    assert text == "provider emulation passed"
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] == 46
    assert all(chunk["modelVersion"] == "gemini-2.5-pro" for chunk in chunks)
    assert "finishReason" not in chunks[0]["candidates"][0]


def test_a_write_is_one_function_call() -> None:
    exchange = answer_request("gemini-write", "POST", STREAM, (), body(["write_file"]), 1)
    (chunk,) = frames(exchange.answer.chunks)
    (part,) = chunk["candidates"][0]["content"]["parts"]
    assert part == {"functionCall": {"id": "call_b10x_001", "name": "write_file",
                                     "args": {"file_path": "note.md", "content": "written by the emulator\n"}}}
    assert exchange.side is False
    done = answer_request("gemini-write", "POST", STREAM, (), body(["write_file"], results=1), 2)
    assert done.answer.label == "text"


def test_a_shell_call_and_a_side_request() -> None:
    exchange = answer_request("gemini-shell", "POST", PLAIN, (), body(["run_shell_command"]), 1)
    parts = json.loads(exchange.answer.chunks[0])["candidates"][0]["content"]["parts"]
    assert parts[0]["functionCall"]["name"] == "run_shell_command"
    assert parts[0]["functionCall"]["args"]["command"] == "echo emulated"
    side = answer_request("gemini-shell", "POST", PLAIN, (), body([]), 2)
    assert side.side is True


def test_parallel_calls_are_parts_of_one_candidate() -> None:
    exchange = answer_request("gemini-parallel", "POST", STREAM, (), body(["write_file", "run_shell_command"]), 1)
    (chunk,) = frames(exchange.answer.chunks)
    calls = [part["functionCall"] for part in chunk["candidates"][0]["content"]["parts"]]
    assert [(call["id"], call["name"]) for call in calls] == [
        ("call_b10x_001", "write_file"), ("call_b10x_002", "run_shell_command")]
    two_results = body(["write_file", "run_shell_command"], results=2)
    assert answer_request("gemini-parallel", "POST", STREAM, (), two_results, 2).answer.label == "text"


def test_count_tokens_and_errors() -> None:
    counted = answer_request("text", "POST", "/v1beta/models/m:countTokens", (), body([]), 1)
    assert json.loads(counted.answer.chunks[0]) == {"totalTokens": 42}
    refused = answer_request("unauthorized", "POST", PLAIN, (), body([]), 1)
    assert refused.answer.status == 401
    assert json.loads(refused.answer.chunks[0]) == {
        "error": {"code": 401, "message": "the emulator accepts no credential", "status": "UNAUTHENTICATED"}}
    unjson = answer_request("text", "POST", PLAIN, (), b"[1]", 1)
    assert unjson.answer.status == 400 and "status" in json.loads(unjson.answer.chunks[0])["error"]
    assert answer_request("text", "GET", STREAM, (), b"", 1).answer.status == 404


def test_the_record_names_the_key_header_not_its_value() -> None:
    headers = (("x-goog-api-key", "AIza-very-secret"), ("content-type", "application/json"))
    raw = body(["write_file"])
    exchange = answer_request("gemini-write", "POST", STREAM, headers, raw, 1)
    line = record_line(seq=1, scenario="gemini-write", method="POST", path=STREAM, query="alt=sse", headers=headers,
                       raw=raw, exchange=exchange, with_body=False)
    record = json.loads(line)
    assert record["credential_header"] == "x-goog-api-key" and record["credential_length"] == 16
    assert record["wire"] == GENERATIVE_WIRE and record["model"] == "gemini-2.5-pro" and record["stream"] is True
    assert b"very-secret" not in line
