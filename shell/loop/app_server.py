"""``b10x-harness app-server``: the loop served over one JSON-RPC connection on stdio
(docs/loop-extensions.md). :mod:`metaharness.pure.loop.app_server` decides every answer; this module
reads the client's lines on a thread, runs each turn on the main thread (where signals land) with the
loop's wires, transport, retry, cancellation and credentials, and writes lines whole.

SIGINT or SIGTERM ends the running turn ``interrupted``; a second one while it ends exits 130, and one
with no turn running ends the server with 130. EOF on stdin ends the server (0) after cancelling a
running turn; a line past 8 MiB ends it with 1.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time
from types import FrameType
from typing import BinaryIO

from metaharness.pure.budgets import ANSWER_POLL_S, LINE_POLL_S
from metaharness.pure.loop import budget
from metaharness.pure.loop.app_server import (
    LINE_CAP,
    Answered,
    BeginTurn,
    Bridge,
    DynamicTool,
    Interrupt,
    Send,
    TurnItems,
    end_items,
    notify,
    read_client_line,
    read_tool_answer,
    tool_call_request,
    turn_completed,
    turn_status,
    unanswered_text,
    with_result,
)
from metaharness.pure.loop.catalogue import publish
from metaharness.pure.loop.gates import unpublished_warning
from metaharness.pure.loop.instruction import Instruction, InstructionFacts, render_instruction
from metaharness.pure.loop.record import RecordLine, ToolRequested
from metaharness.pure.wires.neutral import Item, Sampling, ToolCall, TurnRequest, UserText
from metaharness.shell.loop.approver import AllApprover
from metaharness.shell.loop.cancel import CancelToken, Interrupted
from metaharness.shell.loop.credentials import CredentialSource
from metaharness.shell.loop.runner import Loop, LoopError, Recorder, stderr_error


class Closed(Exception):
    """The server ends with this exit code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class TurnCancel(CancelToken):
    """The loop's token, reset after each turn; ``turn/interrupt`` sets it from the reader thread and
    wakes a blocked main thread with SIGUSR1."""

    def __init__(self) -> None:
        super().__init__(None, time.monotonic())
        self.in_turn = False

    def install(self) -> None:
        super().install()
        signal.signal(signal.SIGUSR1, self._on_wake)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self.in_turn:
            raise Closed(130)
        super()._on_signal(signum, frame)

    def _on_wake(self, signum: int, frame: FrameType | None) -> None:
        if self.cancelled and self._blocking:
            raise Interrupted

    def interrupt(self) -> None:
        """Cancel the running turn from another thread."""
        self.cancelled = True
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)


class Connection:
    """The client's stdio: the bridge's state under a lock, lines written whole, the client's answers
    handed to the turn waiting on them."""

    def __init__(self, version: str, out: BinaryIO, cancel: TurnCancel, answer_timeout_ms: int) -> None:
        self.bridge = Bridge(version=version)
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.out = out
        self.cancel = cancel
        self.answer_timeout_ms = answer_timeout_ms
        self.events: queue.Queue[BeginTurn | int] = queue.Queue()
        self.waiting: dict[int, tuple[threading.Event, list[Answered]]] = {}

    def send(self, line: bytes) -> None:
        with self.write_lock:
            try:
                self.out.write(line)
                self.out.flush()
            except (BrokenPipeError, ValueError):
                pass

    def read_lines(self, stdin: BinaryIO) -> None:
        """The reader thread: every client line through the state machine until EOF or an overlong line."""
        while True:
            line = stdin.readline(LINE_CAP + 1)
            if not line:
                self._close(0)
                return
            if len(line) > LINE_CAP and not line.endswith(b"\n"):
                stderr_error(f"a line past {LINE_CAP} bytes closes the connection")
                self._close(1)
                return
            text = line.rstrip(b"\r\n")
            if not text.strip():
                continue
            with self.lock:
                self.bridge, steps = read_client_line(self.bridge, text)
            for step in steps:
                if isinstance(step, Send):
                    self.send(step.line)
                elif isinstance(step, BeginTurn):
                    self.events.put(step)
                elif isinstance(step, Interrupt):
                    self.cancel.interrupt()
                else:
                    self._deliver(step)

    def _close(self, code: int) -> None:
        if self.bridge.turn_id is not None:
            self.cancel.interrupt()
        self.events.put(code)

    def _deliver(self, answered: Answered) -> None:
        with self.lock:
            slot = self.waiting.get(answered.request_id)
        if slot is not None:
            slot[1].append(answered)
            slot[0].set()

    def ask(self, call: ToolCall) -> tuple[str, bool] | None:
        """``item/tool/call`` for ``call`` and the client's answer as (text, success); ``None`` when the
        turn was cancelled while waiting."""
        slot: tuple[threading.Event, list[Answered]] = (threading.Event(), [])
        with self.lock:
            self.bridge, number, line = tool_call_request(self.bridge, call.call_id, call.name, call.arguments)
            self.waiting[number] = slot
        self.send(line)
        deadline = time.monotonic() + self.answer_timeout_ms / 1000
        try:
            while not slot[0].wait(ANSWER_POLL_S):
                if self.cancel.stopping():
                    return None
                if time.monotonic() >= deadline:
                    return unanswered_text(call.name, self.answer_timeout_ms), False
        finally:
            with self.lock:
                self.waiting.pop(number, None)
        return read_tool_answer(call.name, slot[1][0])


class BridgeRecorder(Recorder):
    """Turns the record lines of one turn into its notifications."""

    def __init__(self, connection: Connection, items: TurnItems) -> None:
        super().__init__(False, True, connection.out, sys.stderr)
        self.connection = connection
        self.items = items

    def write(self, line: RecordLine) -> None:
        self.items, lines = notify(self.items, line)
        for each in lines:
            self.connection.send(each)

    def answered(self, call_id: str, text: str) -> None:
        """The client's answer to ``call_id``, shown on its ``item/completed``."""
        self.items = with_result(self.items, call_id, text)

    def end(self) -> None:
        self.items, lines = end_items(self.items)
        for each in lines:
            self.connection.send(each)


class BridgeLoop(Loop):
    """The loop with the client's tools: a registered call goes to the client, any other is unpublished."""

    def __init__(
        self, *, tools: tuple[DynamicTool, ...], connection: Connection, recorder: BridgeRecorder, **settings: object
    ) -> None:
        super().__init__(recorder=recorder, **settings)  # type: ignore[arg-type]
        self.tools = {tool.name: tool for tool in tools}
        self.connection = connection
        self.notifications = recorder

    def _request(self) -> TurnRequest:
        specs = tuple(tool.spec() for tool in self.tools.values())
        return TurnRequest(self.model, self.instruction, tuple(self.items), specs, self.sampling)

    def _perform(self, call: ToolCall) -> budget.StopObject | None:
        self.recorder.write(ToolRequested(call_id=call.call_id, name=call.name, arguments=call.arguments))
        if call.name not in self.tools:
            warning = unpublished_warning(call.name)
            self._refuse(call, "unpublished-tool", warning, f"{warning}; call only what was published")
            return None
        answer = self.connection.ask(call)
        if answer is None:
            self._result(call, "the run was cancelled while this call ran", True)
            return self._interrupt_stop()
        text, success = answer
        self.notifications.answered(call.call_id, text)
        self._result(call, text, not success)
        return None


class Server:
    """One connection's settings and conversation."""

    def __init__(
        self,
        *,
        wire: str,
        model: str,
        url: str,
        user_agent: str,
        credential: CredentialSource,
        limits: budget.Limits,
        captured_at: str,
        connection: Connection,
    ) -> None:
        self.wire = wire
        self.model = model
        self.url = url
        self.user_agent = user_agent
        self.credential = credential
        self.limits = limits
        self.captured_at = captured_at
        self.connection = connection
        self.conversation: list[Item] = []
        self.usage_total = (0, 0, 0)
        self.session_key = f"b10x-{os.getpid():x}-{time.time_ns():x}"

    def serve(self, stdin: BinaryIO) -> int:
        """Read on a thread, run turns here; the exit code."""
        cancel = self.connection.cancel
        cancel.install()
        threading.Thread(target=self.connection.read_lines, args=(stdin,), daemon=True).start()
        try:
            while True:
                try:
                    event = self.connection.events.get(timeout=LINE_POLL_S)
                except queue.Empty:
                    continue
                if isinstance(event, int):
                    return event
                self._turn(event)
        except Closed as closed:
            return closed.code

    def _instruction(self, tools: tuple[DynamicTool, ...], root: str) -> Instruction:
        """A turn's instruction: the client's tools, no programs, scope or context files (the client's own)."""
        return render_instruction(
            InstructionFacts(
                tools=tuple(tool.name for tool in tools),
                programs=(),
                scope_rules=(),
                scope_stated=False,
                via_metaharness=False,
                context_files=(),
                project_files=(),
                workspace=root,
                platform=sys.platform,
                captured_at=self.captured_at,
            )
        )

    def _turn(self, begin: BeginTurn) -> None:
        connection = self.connection
        with connection.lock:
            bridge = connection.bridge
        root = bridge.cwd if bridge.cwd is not None and os.path.isdir(bridge.cwd) else os.getcwd()
        instruction = self._instruction(bridge.tools, root)
        self.conversation.extend(UserText(text) for text in begin.texts)
        items = TurnItems(thread_id=bridge.thread_id or "", turn_id=begin.turn_id, total=self.usage_total)
        recorder = BridgeRecorder(connection, items)
        cancel = connection.cancel
        cancel.in_turn = True
        stop: budget.StopObject | None = None
        error: str | None = None
        try:
            loop = BridgeLoop(
                tools=bridge.tools,
                connection=connection,
                wire=self.wire,
                model=self.model,
                instruction=instruction.text,
                publication=publish(False, ()),
                scope_rules=(),
                root=root,
                approver=AllApprover(),
                ceiling="destructive",
                sampling=Sampling(None, None, None, None),
                limits=self.limits,
                prices=None,
                items=self.conversation,
                session_key=self.session_key,
                url=self.url,
                user_agent=self.user_agent,
                credential=self.credential,
                cancel=cancel,
                recorder=recorder,
            )
            stop = loop.run()
        except LoopError as failure:
            error = str(failure)
        finally:
            cancel.in_turn = False
            cancel.cancelled = False
        recorder.end()
        self.usage_total = recorder.items.total
        status, message = turn_status(stop, error)
        with connection.lock:
            connection.bridge, line = turn_completed(connection.bridge, status, message)
        connection.send(line)
