"""The route witness on replayed exchanges: the bytes are the wires' own (the loop's projections for
requests, the emulator's streams for answers), the stream is hand-built, and the reconciliation
names what disagrees (docs/decisions.md#the-route-witness)."""

from __future__ import annotations

import gzip
from typing import Any

import msgspec
import pytest

from metaharness.pure.adapter import WitnessFacts
from metaharness.pure.adapters import adapter_of
from metaharness.pure.emulator import generative, messages, responses
from metaharness.pure.emulator.reply import Call, Ids, Reply
from metaharness.pure.emulator.sse import DONE_FRAME, sse_frame
from metaharness.pure.events import (
    Allow,
    Census,
    Deny,
    Event,
    EventValue,
    Exited,
    FinalAnswer,
    RouteTraffic,
    SessionEnded,
    Stream,
    StreamClosed,
    ToolDecided,
    ToolRequested,
    ToolResult,
    read_event,
)
from metaharness.pure.jsonline import compact
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write
from metaharness.pure.wires import anthropic_messages, google_generative, openai_responses
from metaharness.pure.wires.neutral import ToolCall, TurnRequest, UserText
from metaharness.pure.wires.neutral import ToolResult as ResultItem
from metaharness.pure.witness import (
    WITNESS_PATHS,
    EmittedCall,
    Exchange,
    RouteAccount,
    SentResult,
    StreamAccount,
    http_response_body,
    inflate,
    is_denial,
    observe_event,
    read_exchange,
    reconcile,
    response_complete,
    witness,
)

CENSUS = Census(allowed=0, denied=0, replaced=0, abstained=0, by_seam={}, by_decider={})
REASON = 'proc:touch falls under the subject rule proc:**, which does not admit "shell"'


def answer(wire: str, reply: Reply, n: int, call: int = 1) -> bytes:
    """The emulator's streamed answer on ``wire``."""
    ids = Ids(n=n, call=call, model="m")
    if wire == anthropic_messages.WIRE:
        return b"".join(sse_frame(event) for event in messages.stream_events(reply, ids))
    return b"".join(sse_frame(event) for event in responses.stream_events(reply, ids)) + DONE_FRAME


def request(wire: str, *items: Any) -> bytes:
    """The loop's projection of a turn holding ``items`` on ``wire``."""
    turn = TurnRequest(model="m", instruction="be brief", items=(UserText("go"), *items), tools=())
    projected = (anthropic_messages.project_request(turn, None) if wire == anthropic_messages.WIRE
                 else openai_responses.project_request(turn, "k"))  # fmt: skip
    return projected.unwrap().body


PATH = {anthropic_messages.WIRE: "/v1/messages?beta=true", openai_responses.WIRE: "/v1/responses"}


def route(wire: str, input: dict[str, Any], output: str, failed: bool, name: str = "run") -> RouteAccount:
    """Two exchanges: the model emits one call, then is sent its result and answers ``done``."""
    first = read_exchange(PATH[wire], request(wire), answer(wire, Reply(call=Call(name, compact(input).decode())), 1))
    assert first is not None and first.calls
    call_id = first.calls[0].call_id
    items = (ToolCall(call_id, name, input), ResultItem(call_id, output, failed))
    second = read_exchange(PATH[wire], request(wire, *items), answer(wire, Reply(text="done"), 2))
    assert second is not None and second.answer == "done"
    return witness(witness(RouteAccount(), first), second)


def stream(*payloads: Event) -> StreamAccount:
    account = StreamAccount()
    for payload in payloads:
        account = observe_event(account, payload)
    return account


def requested(call_id: str, input: Any, name: str = "run") -> ToolRequested:
    return ToolRequested(call_id=call_id, name=name, input=input, decision_required=False, deadline_ms=None, seam="hook")


def decided(call_id: str, deny: bool = False) -> ToolDecided:
    decision = Deny(reason=REASON) if deny else Allow()
    return ToolDecided(call_id=call_id, decision=decision, decided_by="frame", seam="hook", latency_ms=0)


def ended(text: str | None = "done", turns: int | None = 2) -> SessionEnded:
    fields: dict[str, Any] = {name: None for name in SessionEnded.__struct_fields__}
    fields.update(final_answer=None if text is None else FinalAnswer(text=text, turn_id=None), num_turns=turns,
                  census=CENSUS)  # fmt: skip
    fields.pop("route")
    fields.pop("rows")
    return SessionEnded(**fields)


def codes(account: RouteAccount, seen: StreamAccount, end: SessionEnded | None = None, deciding: bool = True,
          facts: WitnessFacts | None = None) -> list[str]:  # fmt: skip
    warnings, _ = reconcile(account, seen, end or ended(), facts or WitnessFacts(), deciding)
    return [warning.code for warning in warnings]


WIRES = (anthropic_messages.WIRE, openai_responses.WIRE)


def test_a_call_decided_on_the_input_the_model_emitted_is_reconciled_on_both_wires() -> None:
    for wire in WIRES:
        account = route(wire, {"argv": ["echo", "hi"]}, "hi", False)
        (call_id,) = account.emitted
        warnings, calls = reconcile(account, stream(requested(call_id, {"argv": ["echo", "hi"]}), decided(call_id)),
                                    ended(), WitnessFacts())  # fmt: skip
        assert warnings == () and (calls.emitted, calls.decided, calls.reconciled) == (1, 1, 1), wire


def test_a_laundered_input_is_named() -> None:
    for wire in WIRES:
        account = route(wire, {"argv": ["touch", "deny-me"]}, "", False)
        (call_id,) = account.emitted
        seen = stream(requested(call_id, {"argv": ["echo", "harmless"]}), decided(call_id))
        assert codes(account, seen) == ["DECISION_LAUNDERED"], wire


def test_a_hidden_call_is_a_coverage_gap_when_the_run_decides_only() -> None:
    for wire in WIRES:
        account = route(wire, {"argv": ["touch", "x"]}, "", False)
        assert codes(account, stream()) == ["COVERAGE_GAP"], wire
        assert codes(account, stream(), deciding=False) == [], wire
        (call_id,) = account.emitted
        assert codes(account, stream(requested(call_id, {"argv": ["touch", "x"]}))) == ["COVERAGE_GAP"], wire


def test_a_denied_call_whose_sent_result_is_not_the_denial_is_bypassed() -> None:
    for wire in WIRES:
        ran = route(wire, {"argv": ["touch", "x"]}, "", False)
        (call_id,) = ran.emitted
        seen = stream(requested(call_id, {"argv": ["touch", "x"]}), decided(call_id, deny=True))
        assert codes(ran, seen) == ["DECISION_BYPASSED"], wire
        denial = route(wire, {"argv": ["touch", "x"]}, f"`run` was not approved: {REASON}", True)
        assert codes(denial, seen) == [], wire


def test_a_result_for_a_call_never_emitted_is_a_forged_record() -> None:
    for wire in WIRES:
        body = request(wire, ToolCall("call_ghost", "run", {}), ResultItem("call_ghost", "ran", False))
        exchange = read_exchange(PATH[wire], body, answer(wire, Reply(text="done"), 1))
        assert exchange is not None
        assert codes(witness(RouteAccount(), exchange), stream(), ended(turns=1)) == ["RECORD_FORGED"], wire


def test_a_terminal_record_that_disagrees_with_the_route_is_forged() -> None:
    account = route(anthropic_messages.WIRE, {"argv": ["echo"]}, "", False)
    (call_id,) = account.emitted
    seen = stream(requested(call_id, {"argv": ["echo"]}), decided(call_id))
    assert codes(account, seen, ended("all green, completed")) == ["RECORD_FORGED"]
    assert codes(account, seen, ended("done", turns=9)) == ["RECORD_FORGED"]
    assert codes(account, seen, ended(None, turns=2)) == []


def test_codex_shell_calls_correlate_by_the_recorded_name_and_command_and_code_mode_hosts_are_left_out() -> None:
    facts = adapter_of("codex").witness
    account = route(openai_responses.WIRE, {"cmd": "echo hi"}, "hi", False, name="exec_command")
    (call_id,) = account.emitted
    hook = requested(call_id, {"command": "echo hi"}, name="Bash")
    assert codes(account, stream(hook, decided(call_id)), facts=facts) == []
    laundered = requested(call_id, {"command": "echo harmless"}, name="Bash")
    assert codes(account, stream(laundered, decided(call_id)), facts=facts) == ["DECISION_LAUNDERED"]
    host = route(openai_responses.WIRE, {"code": "tools.exec_command({})"}, "ok", False, name="exec")
    warnings, calls = reconcile(host, stream(), ended(), facts)
    assert warnings == () and calls.emitted == 0


def test_a_relayed_http_response_is_read_through_chunking_and_gzip() -> None:
    body = answer(anthropic_messages.WIRE, Reply(text="done"), 1)
    packed = gzip.compress(body)
    chunked = b"".join(b"%x\r\n%b\r\n" % (len(part), part) for part in (packed[:10], packed[10:])) + b"0\r\n\r\n"
    raw = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked
    decoded, encoding = http_response_body(raw)
    assert decoded is not None and inflate(decoded, encoding) == body
    assert inflate(b"x", "br") is None and http_response_body(b"HTTP/1.1 200 OK\r\n") == (None, None)


def test_an_unreadable_answer_is_counted_and_an_off_wire_path_is_not_read() -> None:
    exchange = read_exchange("/v1/messages", b"{}", b"data: {not json\n\n")
    assert exchange == Exchange((), (), None, decoded=False)
    assert witness(RouteAccount(), exchange).unreadable == 1
    assert read_exchange("/v1/messages/count_tokens", b"{}", b"{}") is None


def test_an_unreadable_answer_is_named_so_its_calls_are_not_counted_as_checked() -> None:
    unread = witness(RouteAccount(), read_exchange("/v1/messages", b"{}", b"data: {not json\n\n"))
    warnings, _ = reconcile(unread, StreamAccount(), ended(text=None, turns=None), WitnessFacts())
    assert [warning.code for warning in warnings] == ["ROUTE_UNREAD"]
    assert "could not read 1 of the 1 model responses" in warnings[0].message
    read = witness(RouteAccount(), read_exchange("/v1/messages", b"{}", answer(anthropic_messages.WIRE, Reply(text="hi"), 1)))
    assert "ROUTE_UNREAD" not in codes(read, StreamAccount(), ended(text=None, turns=None))


def written(payloads: list[Event], account: RouteAccount) -> list[Any]:
    writer, out = StreamWriter(Stream("r"), Amendment()), []
    traffic = RouteTraffic(requests=2, bytes_up=1, bytes_down=1)
    for payload in payloads:
        writer, lines = write(writer, EventValue(payload), traffic, account)
        out += [read_event(line.encoded).unwrap() for line in lines]
    return out


def result(call_id: str, is_error: bool) -> ToolResult:
    return ToolResult(exit_code=None, outcome_source=None, call_id=call_id, is_error=is_error, content=None, bytes=None,
                      tool_use_result=None)  # fmt: skip


def test_the_amended_stream_writes_the_witness_before_the_terminal_record_and_counts_it() -> None:
    account = route(anthropic_messages.WIRE, {"argv": ["touch", "x"]}, "", False)
    (call_id,) = account.emitted
    closed = StreamClosed(events=4, reason="completed", run_id="r", process=Exited(code=0))
    payloads: list[Event] = [requested(call_id, {"argv": ["touch", "x"]}), decided(call_id, deny=True),
                             result(call_id, True), ended(), closed]  # fmt: skip
    lines = written(payloads, account)
    assert [line.seq for line in lines] == [1, 2, 3, 4, 5, 6]
    assert lines[3].payload.code == "DECISION_BYPASSED"
    end = lines[4].payload
    assert end.census.bypassed == 1 and end.route.calls == msgspec.convert(
        {"emitted": 1, "decided": 1, "reconciled": 1}, type(end.route.calls))
    assert lines[5].payload.events == 5


def test_a_record_line_after_the_terminal_record_is_forged() -> None:
    account = route(anthropic_messages.WIRE, {"argv": ["echo"]}, "", False)
    (call_id,) = account.emitted
    payloads: list[Event] = [requested(call_id, {"argv": ["echo"]}), decided(call_id), ended(), ended("forged"),
                             result(call_id, False)]  # fmt: skip
    lines = written(payloads, account)
    assert [getattr(line.payload, "code", None) for line in lines] == [None, None, None, None, "RECORD_FORGED", None]


def test_a_call_id_the_provider_reuses_pairs_each_emission_with_its_own_result() -> None:
    read = Exchange((EmittedCall("call_0", "file_read", {"path": "a"}),), (), None)
    write = Exchange((EmittedCall("call_0", "file_write", {"path": "n"}),), (SentResult("call_0", False, "hello"),), None)
    sent = Exchange((), (SentResult("call_0", False, "hello"), SentResult("call_0", True, f"refused: {REASON}")), "done")
    account = witness(witness(witness(RouteAccount(), read), write), sent)
    seen = stream(requested("call_0", {"path": "a"}, "file_read"), decided("call_0"),
                  requested("call_0", {"path": "n"}, "file_write"), decided("call_0", deny=True))  # fmt: skip
    assert codes(account, seen, ended(turns=3)) == []
    ran = Exchange((), (SentResult("call_0", False, "hello"), SentResult("call_0", False, "written")), "done")
    assert codes(witness(witness(witness(RouteAccount(), read), write), ran), seen, ended(turns=3)) == [
        "DECISION_BYPASSED"
    ]


def test_an_unsettled_account_makes_no_claim_that_needs_every_answer() -> None:
    body = request(anthropic_messages.WIRE, ToolCall("call_ghost", "run", {}), ResultItem("call_ghost", "ran", False))
    exchange = read_exchange(PATH[anthropic_messages.WIRE], body, answer(anthropic_messages.WIRE, Reply(text="done"), 1))
    assert exchange is not None
    account = msgspec.structs.replace(witness(RouteAccount(), exchange), unsettled=True)
    assert codes(account, stream(), ended("another answer", turns=9)) == []


def test_a_response_is_whole_by_its_own_framing() -> None:
    assert response_complete(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    assert not response_complete(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok")
    assert response_complete(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
    assert not response_complete(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nok")


def test_without_a_confined_route_the_witness_still_names_what_it_finds() -> None:
    account = route(anthropic_messages.WIRE, {"argv": ["touch", "x"]}, "", False)
    writer, lines = write(StreamWriter(Stream("r"), Amendment()), EventValue(ended()), None, account)
    out = [read_event(line.encoded).unwrap() for line in lines]
    assert [getattr(line.payload, "code", None) for line in out] == ["COVERAGE_GAP", None]
    assert out[1].payload.route is msgspec.UNSET and writer.amendment.gaps == 1


def test_a_completion_the_route_never_saw_the_model_reach_is_forged() -> None:
    emitted = read_exchange(PATH[anthropic_messages.WIRE], request(anthropic_messages.WIRE),
                            answer(anthropic_messages.WIRE, Reply(call=Call("run", "{}")), 1))  # fmt: skip
    assert emitted is not None
    account = witness(RouteAccount(), emitted)
    (call_id,) = account.emitted
    closed = StreamClosed(events=3, reason="completed", run_id="r", process=Exited(code=0))
    payloads: list[Event] = [requested(call_id, {}), decided(call_id), ended(None, turns=1), closed]
    lines = written(payloads, account)
    assert [getattr(line.payload, "code", None) for line in lines] == [None, None, None, "RECORD_FORGED", None]
    assert lines[-1].payload.events == 4
    answered = route(anthropic_messages.WIRE, {}, "ok", False)
    assert [getattr(line.payload, "code", None) for line in written(payloads, answered)][-2] is None


GENERATIVE = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"


def generative_request(*parts: dict[str, Any]) -> bytes:
    """A Generative Language request as Gemini CLI sends it: the user's text, then the parts of the turn."""
    return compact({"contents": [{"role": "user", "parts": [{"text": "go"}]}, {"role": "user", "parts": list(parts)}]})


def test_the_generative_wire_is_read_streamed_and_whole_with_and_without_call_ids() -> None:
    reply = Reply(call=Call("run_shell_command", compact({"command": "echo hi"}).decode()))
    ids = Ids(n=1, call=1, model="gemini-2.5-pro")
    streamed = b"".join(b"data: " + compact(event) + b"\r\n\r\n" for event in generative.stream_events(reply, ids))
    (call,) = (read_exchange(GENERATIVE, generative_request(), streamed) or Exchange((), (), None)).calls
    assert call == EmittedCall("call_b10x_001", "run_shell_command", {"command": "echo hi"})
    whole = generative.response_body(reply, ids)
    whole["candidates"][0]["content"]["parts"][0]["functionCall"].pop("id")
    exchange = read_exchange("/v1beta/models/gemini-2.5-pro:generateContent", b"{}", compact(whole))
    assert exchange is not None and exchange.calls == (EmittedCall("run_shell_command#1", "run_shell_command",
                                                                   {"command": "echo hi"}, numbered=True),)  # fmt: skip
    answered = generative.response_body(Reply(text="done"), ids)
    assert (read_exchange(GENERATIVE, b"{}", compact(answered)) or Exchange((), (), None)).answer == "done"
    assert read_exchange("/v1beta/models/gemini-2.5-pro:countTokens", b"{}", b"{}") is None
    assert google_generative.WIRE in {wire for _, wire in WITNESS_PATHS}


def test_the_generative_results_are_each_function_response_under_the_harness_id() -> None:
    body = generative_request(
        {"functionResponse": {"id": "run_shell_command__call_b10x_001", "name": "run_shell_command",
                              "response": {"error": f"Tool execution blocked: {REASON}"}}},
        {"functionResponse": {"name": "no-id", "response": {"output": "x"}}},
        {"text": "not a result"},
    )  # fmt: skip
    exchange = read_exchange(GENERATIVE, body, None)
    assert exchange is not None and not exchange.decoded
    (result,) = exchange.results
    assert result.call_id == "run_shell_command__call_b10x_001" and result.is_error is None
    assert is_denial(result, REASON)
    assert read_exchange(GENERATIVE, b"[not json", None) == Exchange((), (), None, decoded=False)


def test_gemini_calls_are_matched_by_name_and_input_not_by_the_wire_id() -> None:
    """The wire numbers an id-less call ``run_shell_command#1`` per response; the stream knows it under the id
    Gemini CLI gave it. Matched by presentation, the decided call is reconciled and its result follows; a twin
    emission with other input is named, and a second twin with the same input takes the other stream id."""
    facts = adapter_of("gemini").witness
    assert facts.by_presentation
    account = RouteAccount()
    for command in ("echo a", "echo b", "echo a"):
        emitted = EmittedCall("run_shell_command#1", "run_shell_command", {"command": command}, numbered=True)
        account = witness(account, Exchange((emitted,), (), None))
    account = witness(account, Exchange((), (SentResult("g-1", None, '{"output":"a"}'),), "done"))
    seen = stream(requested("g-1", {"command": "echo a"}, "run_shell_command"), decided("g-1"),
                  requested("g-2", {"command": "echo a"}, "run_shell_command"), decided("g-2"))  # fmt: skip
    warnings, calls = reconcile(account, seen, ended(turns=None), facts, True)
    assert [(w.code, "run_shell_command#1@2 (run_shell_command)" in w.message) for w in warnings] == [("COVERAGE_GAP", True)]
    assert (calls.emitted, calls.decided, calls.reconciled) == (3, 2, 2)
    assert codes(account, seen, ended(turns=None), facts=WitnessFacts()) .count("COVERAGE_GAP") == 3


def _chunk(*parts: dict[str, Any], finish: str | None = None, candidates: int = 1) -> bytes:
    """One ``data:`` frame of a Generative Language stream: ``parts`` in the first candidate."""
    first: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish is not None:
        first["finishReason"] = finish
    others = [{"content": {"role": "model", "parts": [{"text": "other"}]}}] * (candidates - 1)
    return b"data: " + compact({"candidates": [first, *others]}) + b"\r\n\r\n"


SHELL = {"functionCall": {"name": "run_shell_command", "args": {"command": "rm -rf work"}}}


def test_every_call_gemini_cli_would_run_is_an_emission_whatever_else_the_stream_holds() -> None:
    """Gemini CLI takes a call from any part holding a ``functionCall`` in the first candidate of every chunk, keeps
    reading after a finish reason, runs the calls of a stream that ends without one or with a refusal word (its
    ``processStreamResponse`` checks the finish only when there is no call), and its client's reader takes a frame
    behind white space and JSON that JavaScript parses: each shape is one emission on the route, so a call the
    harness ran undecided is a COVERAGE_GAP, never a clean exchange."""
    streams = {
        "after the finish": _chunk({"text": "done"}, finish="STOP") + _chunk(SHELL),
        "no finish reason": _chunk({"text": "on it"}) + _chunk(SHELL),
        "a refusal word": _chunk(SHELL) + _chunk(finish="MALFORMED_FUNCTION_CALL"),
        "beside text": _chunk({"text": "", **SHELL}, finish="STOP"),
        "in a thought": _chunk({"text": "hmm", "thought": True, **SHELL}, finish="STOP"),
        "two candidates": _chunk(SHELL, finish="STOP", candidates=2),
        "white space first": b"  \n" + _chunk(SHELL, finish="STOP"),
        "a lone surrogate": _chunk({"text": "x"}).replace(b'"x"', b'"\\ud800"') + _chunk(SHELL, finish="STOP"),
    }
    whole = {"no finish": _chunk(SHELL), "refused": _chunk(SHELL, finish="SAFETY")}
    bodies = [(GENERATIVE, shape, body) for shape, body in streams.items()] + [
        ("/v1beta/models/m:generateContent", shape, body.split(b"\r\n")[0][6:]) for shape, body in whole.items()]
    for path, shape, body in bodies:
        exchange = read_exchange(path, generative_request(), body)
        assert exchange is not None and exchange.decoded and exchange.calls == (
            EmittedCall("run_shell_command#1", "run_shell_command", {"command": "rm -rf work"}, numbered=True),
        ), shape
        account = witness(RouteAccount(), exchange)
        assert codes(account, stream(), ended(None, None), facts=adapter_of("gemini").witness) == ["COVERAGE_GAP"]


def test_a_gemini_call_is_one_emission_however_its_bytes_are_cut_or_spelled() -> None:
    """Held: an SSE event cut across HTTP chunks, keys in another order and white space inside the JSON, and a
    presentation whose keys come in another order are the same call (reconciled once decided); a call in a second
    candidate is none (Gemini CLI reads only the first candidate's parts), so it needs no decision."""
    spelled = b'data: {"candidates" : [ {"finishReason":"STOP", "content": {"parts": [{"functionCall": {"args": ' \
              b'{"command":"ls",  "description":"d"}, "name":"run_shell_command"}}]}}]}\r\n\r\n'
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"".join(
        b"%x\r\n%s\r\n" % (len(piece), piece) for piece in (spelled[:40], spelled[40:97], spelled[97:])) + b"0\r\n\r\n"
    body, encoding = http_response_body(raw)
    exchange = read_exchange(GENERATIVE, generative_request(), inflate(body or b"", encoding))
    assert exchange is not None and exchange.calls == (
        EmittedCall("run_shell_command#1", "run_shell_command", {"command": "ls", "description": "d"}, numbered=True),)
    seen = stream(requested("g-1", {"description": "d", "command": "ls"}, "run_shell_command"), decided("g-1"))
    facts = adapter_of("gemini").witness
    assert codes(witness(RouteAccount(), exchange), seen, ended(None, None), facts=facts) == []
    second = b'data: {"candidates":[{"content":{"parts":[{"text":"t"}]},"finishReason":"STOP"},' \
             b'{"content":{"parts":[' + compact(SHELL) + b']}}]}\r\n\r\n'
    assert (read_exchange(GENERATIVE, generative_request(), second) or Exchange((), (), None)).calls == ()


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/responses", "/v1beta/models/m:streamGenerateContent"])
def test_a_body_nested_past_the_decoder_is_an_unread_exchange_not_a_recursion_error(path: str) -> None:
    """A request carrying a tool's output, or a response, nested deeper than the decoder reaches raised
    ``RecursionError`` out of the route's observer: that exchange is now counted unread, so ``ROUTE_UNREAD`` says it."""
    deep = b"[" * 5000 + b"]" * 5000
    request = b'{"messages":' + deep + b',"input":' + deep + b',"contents":' + deep + b"}"
    for body, response in ((request, None), (b"{}", b'{"content":' + deep + b"}"), (b"{}", b"data: " + deep + b"\n\n")):
        exchange = read_exchange(path, body, response)
        assert exchange == Exchange((), (), None, decoded=False)
        assert witness(RouteAccount(), exchange).unreadable == 1
