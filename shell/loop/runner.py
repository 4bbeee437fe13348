"""The turn driver (docs/loop.md#the-turn-loop): it performs what the pure stages decide and writes the record."""

from __future__ import annotations

import sys
from functools import partial
from typing import Any, BinaryIO, TextIO

import msgspec
from returns.result import Failure

from metaharness.pure.jsonline import compact
from metaharness.pure.loop import budget
from metaharness.pure.loop.approval import needs_approval, not_approved
from metaharness.pure.loop.catalogue import RESULT_CAP, SKILL, Publication
from metaharness.pure.loop.gates import Admitted, GateRefusal, admit_call, announce_call
from metaharness.pure.loop.hooks import (
    STOP_CONTINUATIONS,
    Block,
    Hook,
    after_call_note,
    before_call_verdict,
    blocked_text,
    call_document,
    exhausted_message,
    stop_document,
    stop_verdict,
    with_notes,
)
from metaharness.pure.loop.paths import ScopeRule
from metaharness.pure.loop.record import (
    ApprovalRequired,
    ApprovalResolved,
    Cost,
    Finished,
    ReasoningDelta,
    RecordLine,
    TextDelta,
    ToolArgumentsDelta,
    ToolCompleted,
    ToolRequested,
    TurnRetried,
    TurnStarted,
    WarningLine,
    encode_line,
    usage_line,
)
from metaharness.pure.loop.skills import Skill
from metaharness.pure.wires import anthropic_messages, openai_responses
from metaharness.pure.wires.anthropic_messages import CredentialKind
from metaharness.pure.wires.neutral import (
    Item,
    Outcome,
    Sampling,
    StreamArguments,
    StreamEvent,
    StreamReasoning,
    StreamText,
    StreamWarning,
    ToolCall,
    ToolResult,
    TurnRequest,
    Usage,
    UserText,
    WireError,
)
from metaharness.pure.wires.retry import loop_pause_ms, may_retry_in_loop
from metaharness.shell.loop.approver import Approver
from metaharness.shell.loop.cancel import CancelToken
from metaharness.shell.loop.credentials import CredentialSource
from metaharness.shell.loop.hooks import HookRunner
from metaharness.shell.loop.tools import PathRefused, ToolFailure, Workspace
from metaharness.shell.loop.transport import ModelCall, make_client


class LoopError(Exception):
    """A mid-run loop error: stderr ``error: <message>``, exit 1, no ``finished``."""


class Recorder:
    """Writes record lines: under ``--json`` one flushed line each on stdout; else the answer and progress."""

    def __init__(self, json_mode: bool, quiet: bool, out: BinaryIO, err: TextIO) -> None:
        self.json_mode = json_mode
        self.quiet = quiet
        self.out = out
        self.err = err

    def write(self, line: RecordLine) -> None:
        if self.json_mode:
            self.out.write(encode_line(line))
            self.out.flush()
            return
        if isinstance(line, TextDelta):
            self.out.write(line.text.encode())
            self.out.flush()
        elif isinstance(line, WarningLine):
            self.err.write(f"warning: {line.message}\n")
        elif isinstance(line, Finished):
            self.out.write(b"\n")
            self.out.flush()
            if not self.quiet:
                self.err.write(f"stopped: {compact(line.stop).decode()} after {line.turns} turn(s)\n")
        elif isinstance(line, ToolRequested) and not self.quiet:
            self.err.write(f"tool: {line.name} {compact(line.arguments).decode()}\n")
        self.err.flush()


class Loop:
    """One run's conversation, spending and the performing of its calls."""

    def __init__(
        self,
        *,
        wire: str,
        model: str,
        instruction: str,
        publication: Publication,
        scope_rules: tuple[ScopeRule, ...],
        root: str,
        approver: Approver,
        ceiling: str,
        sampling: Sampling,
        limits: budget.Limits,
        prices: budget.Prices | None,
        items: list[Item],
        session_key: str,
        url: str,
        user_agent: str,
        credential: CredentialSource,
        cancel: CancelToken,
        recorder: Recorder,
        skills: tuple[Skill, ...] = (),
        hooks: tuple[Hook, ...] = (),
    ) -> None:
        self.wire = wire
        self.model = model
        self.instruction = instruction
        self.publication = publication
        self.scope_rules = scope_rules
        self.root = root
        self.approver = approver
        self.ceiling = ceiling
        self.sampling = sampling
        self.limits = limits
        self.prices = prices
        self.items = items
        self.session_key = session_key
        self.credential = credential
        self.cancel = cancel
        self.recorder = recorder
        self.spent = budget.Spent()
        self.usages: list[Usage] = []
        self.workspace = Workspace(root, credential.hidden_variables(), cancel)
        self.skills = {skill.name: skill.body for skill in skills}
        self.hooks = hooks
        self.hook_runner = HookRunner(root, credential.hidden_variables(), cancel)
        self.continuations = 0
        self.client = make_client(url)
        self.call = ModelCall(self.client, wire, url, user_agent, cancel, self._transport_retry)

    def _transport_retry(self, message: str) -> None:
        self.recorder.write(WarningLine(code="turn-retried", message=message))

    def _interrupt_stop(self) -> budget.StopObject:
        return budget.interrupted_stop(self.limits, self.cancel.cancelled)

    def run(self) -> budget.StopObject:
        """Turns until a stop; raises ``LoopError`` on a final model-call error."""
        try:
            return self._turns()
        finally:
            self.client.close()

    def _turns(self) -> budget.StopObject:
        while True:
            stop = budget.stop_before_turn(self.limits, self.spent, self.cancel.cancelled, self.cancel.elapsed_ms())
            if stop is not None:
                return stop
            self.spent = budget.Spent(self.spent.turns + 1, self.spent.output_tokens, self.spent.micro_usd)
            turn = self.spent.turns
            self.recorder.write(TurnStarted(turn=turn))
            outcome = self._model_call(turn)
            if not isinstance(outcome, Outcome):
                return outcome
            self._account(outcome)
            calls = [item for item in outcome.items if isinstance(item, ToolCall)]
            self.items.extend(outcome.items)
            stop = budget.stop_after_usage(self.limits, self.spent, outcome.usage)
            if stop is not None:
                self._unrun(calls, stop)
                return stop
            if not calls:
                stop = budget.stop_without_calls(outcome.stop)
                reason = self._stop_hooks(stop)
                if reason is None:
                    return stop
                self.items.append(UserText(reason))
                continue
            for index, call in enumerate(calls):
                stop = budget.stop_between_calls(self.limits, self.cancel.cancelled, self.cancel.elapsed_ms())
                if stop is not None:
                    self._unrun(calls[index:], stop)
                    return stop
                stop = self._perform(call)
                if stop is not None:
                    self._unrun(calls[index + 1 :], stop)
                    return stop

    def _request(self) -> TurnRequest:
        return TurnRequest(self.model, self.instruction, tuple(self.items), self.publication.specs(), self.sampling)

    def _credential_kind(self) -> CredentialKind | None:
        return self.credential.choice.kind if self.credential.choice is not None else None

    def _model_call(self, turn: int) -> Outcome | budget.StopObject:
        request = self._request()
        if self.wire == openai_responses.WIRE:
            projected = openai_responses.project_request(request, self.session_key)
            decode = partial(openai_responses.decode_stream, request_model=self.model)
        else:
            projected = anthropic_messages.project_request(request, self._credential_kind())
            decode = partial(anthropic_messages.decode_stream, request_model=self.model)
        if isinstance(projected, Failure):
            raise LoopError(projected.failure().message)
        body = projected.unwrap().body
        retries = 0
        while True:
            result, reached = self.call.run(self._headers, body, decode, self._sink)
            if isinstance(result, Outcome):
                return result
            if result.error == "cancelled":
                return self._interrupt_stop()
            if not may_retry_in_loop(result, reached, retries):
                raise LoopError(result.message)
            retries += 1
            self.recorder.write(TurnRetried(turn=turn, attempt=retries, reason=result.message))
            if not self.cancel.sleep(loop_pause_ms(retries) / 1000):
                return self._interrupt_stop()

    def _headers(self) -> tuple[tuple[str, str], ...] | WireError:
        """The wire's headers for one attempt, with the credential as its source yields it now."""
        current = self.credential.current()
        if isinstance(current, Failure):
            return WireError("unauthorized", current.failure())
        value = current.unwrap()
        if self.wire == openai_responses.WIRE:
            return openai_responses.request_headers(self.session_key, value)
        return anthropic_messages.request_headers(self._credential_kind(), value)

    def _sink(self, event: StreamEvent) -> None:
        if isinstance(event, StreamText):
            self.recorder.write(TextDelta(text=event.text))
        elif isinstance(event, StreamReasoning):
            self.recorder.write(ReasoningDelta(text=event.text))
        elif isinstance(event, StreamArguments):
            self.recorder.write(ToolArgumentsDelta(call_id=event.call_id, delta=event.delta))
        elif isinstance(event, StreamWarning):
            self.recorder.write(WarningLine(code=event.code, message=event.message))

    def _account(self, outcome: Outcome) -> None:
        usage = outcome.usage
        if usage is None:
            return
        self.usages.append(usage)
        self.recorder.write(usage_line(outcome.model, usage))
        micro = 0
        if self.prices is not None:
            price = self.prices.models.get(outcome.model) or self.prices.models.get(self.model)
            if price is not None:
                micro = budget.micro_usd(usage, price)
                self.recorder.write(Cost(model=outcome.model, micro_usd=micro))
        self.spent = budget.Spent(
            self.spent.turns, self.spent.output_tokens + usage.output_tokens, self.spent.micro_usd + micro
        )

    def _unrun(self, calls: list[ToolCall], stop: budget.StopObject) -> None:
        text = budget.unrun_text(stop)
        self.items.extend(ToolResult(call.call_id, text, True) for call in calls)

    def _result(self, call: ToolCall, output: str, failed: bool) -> None:
        self.items.append(ToolResult(call.call_id, output, failed))
        self.recorder.write(ToolCompleted(call_id=call.call_id, failed=failed))

    def _refuse(self, call: ToolCall, code: str | None, message: str, text: str) -> None:
        if code is not None:
            self.recorder.write(WarningLine(code=code, message=message))
        self._result(call, text, True)

    def _perform(self, call: ToolCall) -> budget.StopObject | None:
        """One call through gates 1–7; a stop when cancel or deadline ended it."""
        self.recorder.write(announce_call(call.call_id, call.name, call.arguments, self.publication))
        admitted = admit_call(call.name, call.arguments, self.publication, self.scope_rules, self.root)
        if isinstance(admitted, GateRefusal):
            self._refuse(call, admitted.warning_code, admitted.warning, admitted.text)
            return None
        problem = self._filesystem_gate(admitted, call.arguments)
        if problem is not None:
            code, text = problem
            self._refuse(call, code, text, text)
            return None
        name = admitted.entry.name
        blocked = self._before_call_hooks(call, name)
        if blocked is not None:
            self._result(call, blocked, True)
            return None
        if needs_approval(admitted.entry.risk, self.ceiling):
            self.recorder.write(ApprovalRequired(call_id=call.call_id, name=name))
            verdict = self.approver.decide(call.call_id, name, _summary(name, call.arguments))
            if verdict.warning is not None:
                self.recorder.write(WarningLine(code="approval-answer-unreadable", message=verdict.warning))
            self.recorder.write(ApprovalResolved(call_id=call.call_id, approved=verdict.approved))
            if verdict.cancelled:
                self._result(call, "the run was cancelled before this call ran", True)
                return self._interrupt_stop()
            if not verdict.approved:
                self._result(call, not_approved(name, verdict.reason), True)
                return None
        stop = budget.stop_between_calls(self.limits, self.cancel.cancelled, self.cancel.elapsed_ms())
        if stop is not None:
            self._result(call, budget.unrun_text(stop), True)
            return stop
        output, failed = self._execute(admitted, call)
        self._result(call, self._after_call_hooks(call, name, output), failed)
        if self.cancel.stopping() and failed and name == "run":
            return self._interrupt_stop()
        return None

    def _filesystem_gate(self, admitted: Admitted, arguments: dict[str, Any]) -> tuple[str | None, str] | None:
        name = admitted.entry.name
        path = arguments.get("path", ".")
        try:
            if name in ("file_write", "file_edit") and admitted.relative is not None:
                self.workspace.check_write_target(path, admitted.relative, must_exist=name == "file_edit")
                if name == "file_edit":
                    problem = self.workspace.edit_count_problem(path, admitted.relative, arguments["old"])
                    if problem is not None:
                        return None, problem
        except PathRefused as refusal:
            return "path-refused", str(refusal)
        except ToolFailure as failure:
            return None, str(failure)
        except OSError as error:
            return None, f"`{path}` cannot be checked: {error.strerror or error}"
        return None

    def _execute(self, admitted: Admitted, call: ToolCall) -> tuple[str, bool]:
        arguments = call.arguments
        name = admitted.entry.name
        if name == SKILL.name:
            return self.skills[arguments["name"]], False
        try:
            if name == "run":
                reply = self.workspace.run(arguments["argv"])
            else:
                path = arguments.get("path", ".")
                perform = getattr(self.workspace, name)
                reply = perform(path, admitted.relative, arguments)
        except PathRefused as refusal:
            self.recorder.write(WarningLine(code="path-refused", message=str(refusal)))
            return str(refusal), True
        except ToolFailure as failure:
            return str(failure), True
        except OSError as error:
            return f"`{name}` failed: {error.strerror or error}", True
        if len(reply) > RESULT_CAP:
            return f"the result is {len(reply)} bytes, over the {RESULT_CAP} byte bound; narrow the request", True
        return reply.decode("utf-8"), False

    def _hook_failed(self, message: str) -> None:
        self.recorder.write(WarningLine(code="hook-failed", message=message))

    def _before_call_hooks(self, call: ToolCall, name: str) -> str | None:
        """The blocked-call text of the first before-call hook that blocks, else ``None``."""
        for hook in self.hooks:
            if not hook.applies("before-call", name):
                continue
            ended = self.hook_runner.run(hook, call_document("before-call", call.call_id, name, call.arguments))
            verdict = before_call_verdict(hook, ended)
            if isinstance(verdict, Block):
                if verdict.failure is not None:
                    self._hook_failed(verdict.failure)
                return blocked_text(name, verdict.reason)
        return None

    def _after_call_hooks(self, call: ToolCall, name: str, output: str) -> str:
        """``output`` with the notes of the after-call hooks, within the result bound."""
        notes: list[str] = []
        for hook in self.hooks:
            if not hook.applies("after-call", name):
                continue
            ended = self.hook_runner.run(hook, call_document("after-call", call.call_id, name, call.arguments))
            note, failure = after_call_note(hook, ended)
            if failure is not None:
                self._hook_failed(failure)
            elif note is not None:
                notes.append(note)
        noted = with_notes(output, tuple(notes))
        return noted if len(noted.encode()) <= RESULT_CAP else output

    def _stop_hooks(self, stop: budget.StopObject) -> str | None:
        """The reason to continue with when a stop hook asks to and continuations remain, else ``None``."""
        for hook in self.hooks:
            if not hook.applies("stop", None):
                continue
            ended = self.hook_runner.run(hook, stop_document(msgspec.to_builtins(stop), self.spent.turns))
            reason, failure = stop_verdict(hook, ended)
            if failure is not None:
                self._hook_failed(failure)
                continue
            if reason is None:
                continue
            if self.continuations >= STOP_CONTINUATIONS:
                self.recorder.write(WarningLine(code="stop-hook-exhausted", message=exhausted_message()))
                return None
            self.continuations += 1
            return reason
        return None


def _summary(name: str, arguments: Any) -> str:
    """The call as the terminal prompt shows it: ``file_write  note.md  (23 bytes)``."""
    if name == "run":
        return f"run  {' '.join(arguments.get('argv', []))}"
    size = len(arguments.get("text", arguments.get("new", "")).encode())
    return f"{name}  {arguments.get('path', '.')}  ({size} bytes)"



def stderr_error(message: str) -> None:
    """The ``error: <message>`` line."""
    sys.stderr.write(f"error: {' '.join(message.splitlines())}\n")
    sys.stderr.flush()
