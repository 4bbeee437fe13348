"""``b10x-emulator`` as a process over a real loopback socket (docs/loop.md#process-and-routes, #record-file)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.emulator import EMULATOR, running_emulator

from metaharness.pure.emulator.scenarios import SCENARIO_NAMES

emulator = running_emulator


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EMULATOR, *args], capture_output=True, text=True, timeout=30, check=False)


def body(stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {"model": "b10x-emulated", "stream": stream, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}], **extra}


def test_announces_a_loopback_base_url_and_exits_zero_on_sigterm() -> None:
    with emulator("--scenario", "flat-tool") as (base_url, process):
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        assert port > 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    with emulator() as (_, process):
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0


def test_the_announcement_line_is_exactly_base_url_and_scenario() -> None:
    process = subprocess.Popen([EMULATOR, "--scenario", "cold"], stdout=subprocess.PIPE)
    assert process.stdout is not None
    line = process.stdout.readline()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    port = json.loads(line)["base_url"].split(":")[2].split("/")[0]
    assert line == b'{"base_url":"http://127.0.0.1:%s/v1","scenario":"cold"}\n' % port.encode()


def test_ipv6_loopback_is_accepted() -> None:
    if not socket.has_ipv6:
        pytest.skip("this machine has no IPv6 stack")
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("::1 cannot be bound on this machine")
    with emulator("--host", "::1") as (base_url, _):
        assert base_url.startswith("http://[::1]:")
        assert httpx.get(f"{base_url}/models").json() == {"object": "list", "data": []}


@pytest.mark.parametrize(("args", "code"), [
    (("--scenario", "no-such"), "unknown-scenario"),
    (("--host", "0.0.0.0"), "non-loopback-host"),
    (("--host", "192.168.1.1"), "non-loopback-host"),
    (("--host", "localhost"), "non-loopback-host"),
])
def test_unknown_scenario_or_non_loopback_host_exits_2(args: tuple[str, ...], code: str) -> None:
    done = run(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"b10x-emulator: {code}: ")


def test_unwritable_record_file_exits_2(tmp_path: Path) -> None:
    done = run("--record", str(tmp_path / "missing" / "record.jsonl"))
    assert done.returncode == 2 and done.stderr.startswith("b10x-emulator: record-unwritable: ")


def test_list_scenarios_prints_the_json_list() -> None:
    done = run("--list-scenarios")
    assert done.returncode == 0
    names = json.loads(done.stdout)
    assert names[0] == "text" and "codex-patch" in names and "flat-tool" in names and "codex-catalogue-write" in names and names == list(SCENARIO_NAMES)


def test_a_streamed_turn_over_the_socket_is_close_delimited_sse() -> None:
    with emulator("--scenario", "flat-tool") as (base_url, _), httpx.Client() as client, client.stream(
            "POST", f"{base_url}/responses", json=body()) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "text/event-stream"
        assert answer.headers["connection"] == "close"
        assert "content-length" not in answer.headers and "transfer-encoding" not in answer.headers
        raw = b"".join(answer.iter_raw())
    assert raw.endswith(b"data: [DONE]\n\n")
    assert b'"call_id":"call_b10x_001","name":"file_read"' in raw


def test_query_strings_are_ignored_and_messages_end_without_done() -> None:
    with emulator() as (base_url, _):
        answer = httpx.post(f"{base_url}/messages?beta=true", json={
            "model": "m", "stream": True, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]})
    assert answer.status_code == 200
    assert answer.content.endswith(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    assert b"[DONE]" not in answer.content


def test_posts_are_counted_across_connections_for_cold_once() -> None:
    with emulator("--scenario", "cold-once") as (base_url, _):
        first = httpx.post(f"{base_url}/responses", json=body(stream=False))
        second = httpx.post(f"{base_url}/responses", json=body(stream=False))
    assert (first.status_code, first.headers["retry-after"]) == (503, "0")
    assert second.status_code == 200 and second.json()["id"] == "resp_b10x_002"


def test_keep_alive_serves_concurrent_side_requests_and_probes() -> None:
    with emulator("--scenario", "claude-write") as (base_url, _), httpx.Client() as client:
        def side(i: int) -> httpx.Response:
            return client.post(f"{base_url}/messages", json={
                "model": "haiku", "max_tokens": 32, "messages": [{"role": "user", "content": f"title {i}"}]})

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(side, range(12)))
        models = client.get(f"{base_url}/models")
        count = client.post(f"{base_url}/messages/count_tokens", json={"model": "m", "messages": []})
        missing = client.get(f"{base_url.removesuffix('/v1')}/")
    assert all(a.status_code == 200 and a.json()["content"] == [{"type": "text", "text": "emulated"}]
               for a in answers)
    assert sorted(a.json()["id"] for a in answers) == [f"msg_b10x_{i:03d}" for i in range(1, 13)]
    assert models.json() == {"object": "list", "data": []}
    assert count.json() == {"input_tokens": 42}
    assert missing.status_code == 404


def test_body_admission_over_the_socket() -> None:
    with emulator() as (base_url, _):
        wrong = httpx.post(f"{base_url}/responses", content=b"{}", headers={"content-encoding": "br"})
        not_json = httpx.post(f"{base_url}/responses", content=b"nope")
        huge = httpx.post(f"{base_url}/responses", content=b" " * (4 * 1024 * 1024 + 10))
        chunked = httpx.post(f"{base_url}/responses", content=iter([json.dumps(body(stream=False)).encode()]))
    assert (wrong.status_code, not_json.status_code, huge.status_code) == (415, 400, 413)
    assert chunked.status_code == 200 and chunked.json()["output"][0]["content"][0]["text"] == (
        "provider emulation passed")


def test_record_file_has_one_line_per_request_and_no_credential(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    with emulator("--scenario", "flat-tool", "--record", str(record), "--record-bodies") as (base_url, _):
        httpx.post(f"{base_url}/responses", json=body(), headers={
            "authorization": "Bearer sk-do-not-record", "originator": "b10x-harness", "cookie": "jar=secret"})
        httpx.post(f"{base_url}/messages", headers={"x-api-key": "key-do-not-record"}, json={
            "model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
        httpx.get(f"{base_url}/models")
    text = record.read_text()
    assert "do-not-record" not in text and "jar=secret" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["seq"] for line in lines] == [1, 2, 3]
    first, second, third = lines
    assert (first["credential_header"], first["credential_length"]) == ("authorization", 16)
    assert first["originator"] == "b10x-harness" and first["answer"] == "call:file_read"
    assert first["body"]["input"][0]["role"] == "user" and first["stream"] is True
    assert (second["credential_header"], second["credential_length"]) == ("x-api-key", 17)
    assert second["wire"] == "anthropic-messages" and second["stream"] is None
    assert second["answer"] == "call:file_read"
    assert third["path"] == "/v1/models" and third["wire"] is None and third["body"] is None


def test_a_client_closing_a_slow_stream_leaves_the_emulator_serving() -> None:
    with emulator("--scenario", "slow") as (base_url, process), httpx.Client() as client:
        with client.stream("POST", f"{base_url}/responses", json=body()) as answer:
            first = next(answer.iter_raw())
        assert first.startswith(b"event: response.created\n")
        after = httpx.get(f"{base_url}/models")
        assert after.status_code == 200 and process.poll() is None


def test_claude_codes_head_probe_at_the_root_gets_a_bodiless_404_on_a_kept_connection() -> None:
    with emulator() as (base_url, _), httpx.Client() as client:
        probe = client.head(f"{base_url.removesuffix('/v1')}/api/hello")
        after = client.get(f"{base_url}/models")
    assert probe.status_code == 404 and probe.content == b""
    assert after.json() == {"object": "list", "data": []}


def test_a_body_whose_framing_does_not_parse_is_a_400() -> None:
    with emulator() as (base_url, process):
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: many\r\n\r\n")
            head = connection.recv(65536)
        assert head.startswith(b"HTTP/1.1 400 ")
        assert httpx.get(f"{base_url}/models").status_code == 200 and process.poll() is None


@pytest.mark.parametrize("framing", [
    b"Content-Length: -1\r\n\r\n",
    b"Transfer-Encoding: chunked\r\n\r\n-10\r\n",
])  # fmt: skip
def test_a_negative_length_is_a_400_and_never_a_read_to_the_end(framing: bytes) -> None:
    """A hostile client's negative length would read the connection to its end (unbounded): a 400 at once."""
    with emulator() as (base_url, process):
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: x\r\n" + framing + b"x" * 4096)
            head = connection.recv(65536)
        assert head.startswith(b"HTTP/1.1 400 ")
        assert httpx.get(f"{base_url}/models").status_code == 200 and process.poll() is None


def test_a_chunk_size_line_without_an_end_is_a_400_after_a_bounded_read() -> None:
    """A chunk-size line that never ends is not buffered without bound: past its bound it is a 400."""
    with emulator() as (base_url, process):
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            connection.sendall(b"0" * 70000)
            head = connection.recv(65536)
        assert head.startswith(b"HTTP/1.1 400 ")
        assert process.poll() is None


def test_a_body_nested_past_the_depth_bound_is_a_400_and_no_traceback() -> None:
    """JSON nested deeper than the bound (the decoder's recursion ran out, a traceback and no answer) is a 400;
    a client that resets its connection mid-request leaves no traceback either."""
    with emulator() as (base_url, process):
        nested = httpx.post(f"{base_url}/responses", content=b"[" * 100000 + b"]" * 100000)
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        connection = socket.create_connection(("127.0.0.1", port), timeout=10)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        connection.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
        connection.close()  # a reset, not a close
        assert httpx.get(f"{base_url}/models").status_code == 200
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=30)
    assert nested.status_code == 400 and nested.json()["error"]["message"] == "the body is not JSON"
    assert b"Traceback" not in errors
