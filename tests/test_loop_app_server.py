"""``b10x-harness app-server`` driven by real stdio clients against the real emulator
(docs/loop-extensions.md): a minimal client written here, and metaharness's own codex app-server
client module."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from loop_process import HARNESS, emulator

from metaharness.pure.catalogue import load_catalogue
from metaharness.pure.codex import app_server as codex_client

WIRES = ["openai-responses", "anthropic-messages"]
WAIT_S = 60
LOOKUP = {"name": "lookup", "description": "Look up a word.",
          "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}
THREAD = "thread_b10x_1"


class Client:
    """A minimal JSON-RPC client over the server's stdio: lines written whole, lines read on a thread."""

    def __init__(self, base_url: str, wire: str, *options: str) -> None:
        argv = [HARNESS, "app-server", "--base-url", base_url, "--model", "b10x-emulated", "--wire", wire, *options]
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def write(self, raw: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(raw)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def next(self) -> dict[str, Any]:
        message = self.lines.get(timeout=WAIT_S)
        assert message is not None, "the server closed its stdout"
        return message

    def until(self, method: str) -> list[dict[str, Any]]:
        """Every message up to and including the first with ``method``."""
        seen = [self.next()]
        while seen[-1].get("method") != method:
            seen.append(self.next())
        return seen

    def request(self, number: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its response (other messages before it are kept in ``skipped``)."""
        self.send({"id": number, "method": method, "params": params or {}})
        message = self.next()
        while message.get("id") != number or "method" in message:
            message = self.next()
        return message

    def open(self, tools: list[dict[str, Any]] | None = None, experimental: bool = True) -> None:
        answer = self.request(1, "initialize", {"clientInfo": {"name": "test", "version": "1"},
                                                "capabilities": {"experimentalApi": experimental}})
        assert answer["result"]["serverInfo"] == {"name": "b10x-harness", "version": answer["result"]["serverInfo"]["version"]}
        self.send({"method": "initialized"})
        started = self.request(2, "thread/start", {"dynamicTools": tools if tools is not None else [LOOKUP]})
        assert started == {"id": 2, "result": {"thread": {"id": THREAD}}}
        assert self.next() == {"method": "thread/started", "params": {"thread": {"id": THREAD}}}

    def turn(self, number: int, text: str = "go") -> str:
        answer = self.request(number, "turn/start", {"threadId": THREAD, "input": [{"type": "text", "text": text}]})
        assert answer["result"]["turn"]["status"] == "inProgress"
        return answer["result"]["turn"]["id"]

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=WAIT_S)


@contextmanager
def served(scenario: str, wire: str, tmp_path: Path, *options: str) -> Iterator[tuple[Client, Path]]:
    record = tmp_path / f"{scenario}-{wire}.jsonl"
    with emulator(scenario, record, "--record-bodies") as base_url:
        client = Client(base_url, wire, *options)
        try:
            yield client, record
        finally:
            if client.process.poll() is None:
                client.process.kill()
            client.process.wait(timeout=WAIT_S)


def requests_of(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def answer_calls(client: Client, text: str = "looked up: a word", success: bool = True) -> list[dict[str, Any]]:
    """Serve the turn: answer each ``item/tool/call``; every message up to ``turn/completed``."""
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1].get("method") != "turn/completed":
        seen.append(client.next())
        if seen[-1].get("method") == "item/tool/call":
            client.send({"id": seen[-1]["id"], "result": {
                "contentItems": [{"type": "inputText", "text": text}], "success": success}})
    return seen


@pytest.mark.parametrize("wire", WIRES)
def test_two_turns_with_a_dynamic_tool(tmp_path: Path, wire: str) -> None:
    with served("bridge-tool", wire, tmp_path) as (client, record):
        client.open()
        turns = []
        for number in (10, 11):
            turn_id = client.turn(number)
            turns.append((turn_id, answer_calls(client)))
        assert client.close() == 0
    call_id_prefix = "call_b10x_" if wire == "openai-responses" else "toolu_b10x_"
    for index, (turn_id, seen) in enumerate(turns, start=1):
        assert turn_id == f"turn_b10x_{index}"
        asked = [m for m in seen if m.get("method") == "item/tool/call"]
        assert [m["params"] for m in asked] == [{"threadId": THREAD, "turnId": turn_id,
                                                 "callId": f"{call_id_prefix}{index:03d}", "tool": "lookup",
                                                 "arguments": {"word": "from the emulator"}}]
        deltas = [m["params"]["delta"] for m in seen if m.get("method") == "item/agentMessage/delta"]
        assert "".join(deltas) == "the client tool answered"
        message = next(m for m in seen if m.get("method") == "item/completed"
                       and m["params"]["item"]["type"] == "agentMessage")
        assert message["params"]["item"]["text"] == "the client tool answered"
        assert any(m.get("method") == "thread/tokenUsage/updated" for m in seen)
        tool_item = next(m for m in seen if m.get("method") == "item/completed"
                         and m["params"]["item"]["type"] == "dynamicToolCall")["params"]["item"]
        assert tool_item == {"type": "dynamicToolCall", "id": asked[0]["params"]["callId"], "tool": "lookup",
                             "arguments": {"word": "from the emulator"}, "status": "completed", "success": True,
                             "contentItems": [{"type": "inputText", "text": "looked up: a word"}]}
        assert seen[-1] == {"method": "turn/completed",
                            "params": {"threadId": THREAD, "turn": {"id": turn_id, "status": "completed"}}}
    usage = [m for m in turns[1][1] if m.get("method") == "thread/tokenUsage/updated"][-1]["params"]["tokenUsage"]
    assert usage["total"]["outputTokens"] == 24 and usage["last"]["outputTokens"] == 4
    requests = requests_of(record)
    assert [r["answer"] for r in requests] == ["call:lookup", "text", "call:lookup", "text"]
    assert all(r["tool_names"] == ["lookup"] for r in requests)
    body = json.dumps(requests[3]["body"])
    assert body.count("looked up: a word") == 2, "the second turn resends the whole conversation"
    assert "Look up a word." in body


def test_metaharness_codex_client_module_drives_a_turn(tmp_path: Path) -> None:
    """metaharness's own codex app-server client (the pure state machine of its codex adapter) as the client."""
    catalogue = load_catalogue(json.dumps({"format": "metaharness.catalogue/1", "entries": [{
        "name": "lookup_word", "description": "Look up a word.", "performs": "file_read",
        "input": {"path": {"type": "string", "required": True}}}]}).encode(), "tools.json").unwrap()
    with served("bridge-tool", "openai-responses", tmp_path) as (client, record):
        session, steps = codex_client.open_session(version="1", cwd=str(tmp_path), model="b10x-emulated",
                                                   sandbox="read-only", catalogue=catalogue, user_turn="go")
        decided: list[codex_client.Decide] = []
        completed = False
        while not completed:
            for step in steps:
                if isinstance(step, codex_client.Send):
                    client.write(step.line)
                elif isinstance(step, codex_client.Decide):
                    decided.append(step)
                    opened = next(c for c in session.calls if c.call_id == step.call_id)
                    client.write(codex_client.tool_answer(opened.request_id, "the word is there", True).line)
                elif isinstance(step, codex_client.TurnCompleted):
                    completed = True
            if not completed:
                session, steps = codex_client.read_server_line(session, json.dumps(client.next()).encode())
        assert client.close() == 0
    assert [(d.tool, d.arguments) for d in decided] == [("lookup_word", {"path": "from the emulator"})]
    assert "the word is there" in json.dumps(requests_of(record)[1]["body"])


@pytest.mark.parametrize("wire", WIRES)
def test_turn_interrupt_ends_the_turn_interrupted_and_the_connection_goes_on(tmp_path: Path, wire: str) -> None:
    with served("slow", wire, tmp_path) as (client, _):
        client.open()
        turn_id = client.turn(10)
        client.until("item/agentMessage/delta")
        answer = client.request(20, "turn/interrupt", {"threadId": THREAD, "turnId": turn_id})
        assert answer == {"id": 20, "result": {}}
        done = client.until("turn/completed")[-1]
        assert done["params"]["turn"] == {"id": turn_id, "status": "interrupted"}
        again = client.request(21, "turn/interrupt", {"threadId": THREAD, "turnId": turn_id})
        assert again["error"]["code"] == -32600
        client.turn(11)
        assert client.until("turn/completed")[-1]["params"]["turn"]["status"] == "completed"
        assert client.close() == 0


def test_sigint_ends_the_turn_interrupted_and_an_idle_one_exits_130(tmp_path: Path) -> None:
    with served("slow", "openai-responses", tmp_path) as (client, _):
        client.open()
        turn_id = client.turn(10)
        client.until("item/agentMessage/delta")
        client.process.send_signal(signal.SIGINT)
        assert client.until("turn/completed")[-1]["params"]["turn"] == {"id": turn_id, "status": "interrupted"}
        client.process.send_signal(signal.SIGINT)
        assert client.process.wait(timeout=WAIT_S) == 130


def test_a_call_of_an_unregistered_tool_is_answered_as_unpublished_and_never_sent(tmp_path: Path) -> None:
    with served("bridge-unregistered", "anthropic-messages", tmp_path) as (client, record):
        client.open()
        client.turn(10)
        seen = answer_calls(client)
        assert client.close() == 0
    assert not [m for m in seen if m.get("method") == "item/tool/call"]
    assert seen[-1]["params"]["turn"]["status"] == "completed"
    result = json.dumps(requests_of(record)[1]["body"])
    assert "`unregistered_tool` is not one of this run's tools; call only what was published" in result


def test_a_client_that_never_answers_fails_the_call_at_its_deadline(tmp_path: Path) -> None:
    with served("bridge-tool", "openai-responses", tmp_path, "--tool-answer-timeout-ms", "300") as (client, record):
        client.open()
        turn_id = client.turn(10)
        seen = client.until("turn/completed")
        assert client.close() == 0
    assert [m["params"]["callId"] for m in seen if m.get("method") == "item/tool/call"] == ["call_b10x_001"]
    failed = next(m for m in seen if m.get("method") == "item/completed"
                  and m["params"]["item"]["type"] == "dynamicToolCall")
    assert failed["params"]["item"]["status"] == "failed" and seen[-1]["params"]["turn"]["id"] == turn_id
    body = json.dumps(requests_of(record)[1]["body"])
    assert "the client did not answer item/tool/call for `lookup` within 0.3 s" in body


def test_an_answer_past_256_kib_or_of_another_shape_fails_the_call(tmp_path: Path) -> None:
    with served("bridge-tool", "openai-responses", tmp_path) as (client, record):
        client.open()
        client.turn(10)
        answer_calls(client, text="x" * (256 * 1024))
        client.turn(11)
        seen = client.until("item/tool/call")
        client.send({"id": seen[-1]["id"], "result": {"contentItems": "nope"}})
        client.until("turn/completed")
        client.turn(12)
        answer_calls(client, text="no such word", success=False)
        assert client.close() == 0
    requests = requests_of(record)
    first = next(i for i in requests[1]["body"]["input"] if i.get("type") == "function_call_output")
    assert re.fullmatch(r"the client's answer for `lookup` is 2\d{5} bytes, over the 262144 byte bound",
                        json.loads(first["output"])["error"])
    assert "the client's answer for `lookup` is not" in json.dumps(requests[3]["body"])
    last = [i for i in requests[5]["body"]["input"] if i.get("type") == "function_call_output"][-1]
    assert last["output"] == json.dumps({"ok": False, "error": "no such word"}, separators=(",", ":"))


def refusal(client: Client, number: int, method: str, params: dict[str, Any] | None = None) -> tuple[int, str]:
    error = client.request(number, method, params)["error"]
    return error["code"], error["message"]


def test_every_refusal_is_a_json_rpc_error_with_a_stable_message(tmp_path: Path) -> None:
    with served("slow", "openai-responses", tmp_path) as (client, _):
        assert refusal(client, 1, "thread/start") == (-32600, "thread/start before initialize; send initialize first")
        client.write(b"{not json\n")
        assert client.next() == {"id": None, "error": {"code": -32700, "message": "the line is not JSON"}}
        assert client.request(2, "initialize", {"capabilities": {}})["result"]["capabilities"] == {}
        assert refusal(client, 3, "initialize") == (-32600, "initialize was already received on this connection")
        for method in ("thread/resume", "turn/steer", "thread/fork"):
            assert refusal(client, 4, method) == (-32601, f"{method} is not supported by b10x-harness app-server")
        assert refusal(client, 5, "thread/start", {"dynamicTools": [LOOKUP]}) == (
            -32600, "dynamicTools need the experimentalApi capability, negotiated on initialize")
        assert refusal(client, 6, "turn/start", {"threadId": THREAD, "input": [{"type": "text", "text": "x"}]}) == (
            -32600, 'no thread "thread_b10x_1" on this connection; send thread/start first')
        assert client.close() == 0
    with served("slow", "openai-responses", tmp_path) as (client, _):
        client.request(1, "initialize", {"capabilities": {"experimentalApi": True}})
        assert refusal(client, 2, "thread/start", {"dynamicTools": [LOOKUP, LOOKUP]}) == (
            -32600, "dynamic tool `lookup` is registered twice")
        assert refusal(client, 3, "thread/start", {"dynamicTools": [{**LOOKUP, "name": "look up"}]}) == (
            -32600, 'dynamic tool name "look up" is malformed: 1 to 64 of A-Z, a-z, 0-9, _ and -')
        client.request(4, "thread/start", {"dynamicTools": [LOOKUP]})
        assert refusal(client, 5, "thread/start") == (-32600, "this connection already has its one thread")
        turn_id = client.turn(6)
        assert refusal(client, 7, "turn/start", {"threadId": THREAD, "input": [{"type": "text", "text": "x"}]}) == (
            -32600, f"turn {turn_id} is running; interrupt it or wait for turn/completed")
        client.request(8, "turn/interrupt", {"threadId": THREAD, "turnId": turn_id})
        client.until("turn/completed")
        assert refusal(client, 9, "turn/start", {"threadId": THREAD, "input": [{"type": "image"}]}) == (
            -32600, 'turn/start input must be a non-empty list of {"type":"text","text":…}')
        assert client.close() == 0


def test_a_line_past_8_mib_closes_the_connection_with_exit_1(tmp_path: Path) -> None:
    with served("text", "openai-responses", tmp_path) as (client, _):
        client.request(1, "initialize", {})
        client.write(b'{"id":2,"method":"initialize","params":{"pad":"' + b"x" * (8 * 1024 * 1024) + b'"}}\n')
        assert client.process.wait(timeout=WAIT_S) == 1
        assert client.process.stderr is not None
        assert client.process.stderr.read() == b"error: a line past 8388608 bytes closes the connection\n"


def test_app_server_refuses_before_serving_like_run(tmp_path: Path) -> None:
    done = subprocess.run([HARNESS, "app-server", "--model", "m"], capture_output=True, timeout=WAIT_S, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (1, b"", b"error: --base-url is required\n")
    env = {**os.environ, "EMPTY_KEY": ""}
    done = subprocess.run([HARNESS, "app-server", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                           "--api-key-env", "EMPTY_KEY"], capture_output=True, timeout=WAIT_S, check=False, env=env)
    assert (done.returncode, done.stderr) == (1, b"error: the credential at --api-key-env EMPTY_KEY is empty\n")


def test_a_budget_stop_ends_the_turn_failed_with_its_stop(tmp_path: Path) -> None:
    with served("bridge-tool", "anthropic-messages", tmp_path, "--max-turns", "1") as (client, _):
        client.open()
        turn_id = client.turn(10)
        seen = answer_calls(client)
        assert client.close() == 0
    assert seen[-1]["params"]["turn"] == {"id": turn_id, "status": "failed",
                                          "error": {"message": 'the turn stopped: {"kind":"max-turns","limit":1}'}}


@pytest.mark.parametrize(("wire", "header"), [("openai-responses", "authorization"), ("anthropic-messages", "x-api-key")])
def test_the_credential_is_presented_on_the_wire_and_never_enters_the_protocol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: str, header: str
) -> None:
    monkeypatch.setenv("BRIDGE_KEY", "sk-bridge-secret")
    with served("bridge-tool", wire, tmp_path, "--api-key-env", "BRIDGE_KEY") as (client, record):
        client.open()
        client.turn(10)
        seen = answer_calls(client)
        assert client.close() == 0
    assert "sk-bridge-secret" not in json.dumps(seen)
    assert {(r["credential_header"], r["credential_length"]) for r in requests_of(record)} == {
        (header, len("sk-bridge-secret"))}
