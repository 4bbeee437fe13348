"""The ``metaharness-view`` console script: a ``metaharness.event/1`` stream read from a file or stdin
and shown as it arrives (docs/view.md).

On a terminal the calls in flight are redrawn in place (``rich``'s live display) and everything
settled is printed above them; otherwise one plain line per event that matters. A malformed line is
shown and skipped. Exit 0 when the stream ended with ``stream.closed``, 1 when it did not, 2 on a
refusal.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from typing import IO, NoReturn

import click
from returns.result import Failure
from rich.console import Console, RenderableType
from rich.live import Live

from metaharness.pure.bounds import INPUT_FILE_LIMIT
from metaharness.pure.budgets import VIEW_REFRESHES_PER_S
from metaharness.pure.events import (
    EventLine,
    SessionEnded,
    SessionStarted,
    StreamClosed,
    Text,
    Thinking,
    ToolResult,
    TurnStarted,
    event_name,
    read_event,
)
from metaharness.pure.kind import KINDS, Kind
from metaharness.pure.refusal import Refusal, not_utf8
from metaharness.pure.run_view import (
    Malformed,
    Note,
    ViewState,
    all_calls,
    call_of,
    closing_lines,
    fold_view,
    last_entry,
    open_note,
    plain_lines,
    stop_text,
    turn_text,
    view_exit,
)
from metaharness.pure.terminal_text import shown
from metaharness.shell import view_screen
from metaharness.shell.bounded_reads import read_bounded
from metaharness.shell.parse_output import ClosedAtParse
from metaharness.shell.project import CopyFailed, ScratchCopy, bounded_chunks, mapped_record
from metaharness.shell.refusals import refuse
from metaharness.shell.standard_streams import drop_stdout, stand_in_closed_streams


def read_lines(lines: Iterator[bytes]) -> Iterator[EventLine | Malformed]:
    """Each line read as an event, or as a malformed line naming why."""
    for number, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith(b"\n") else raw
        read = read_event(line)
        if isinstance(read, Failure):
            yield Malformed(number, line.decode("utf-8", errors="replace"), read.failure())
        else:
            yield read.unwrap()


class PlainScreen:
    """One plain line per event that matters; no cursor movement."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out

    def _write(self, lines: tuple[str, ...]) -> None:
        self.out.write("".join(shown(line) + "\n" for line in lines).encode("utf-8"))
        self.out.flush()

    def show(self, before: ViewState, after: ViewState, item: EventLine | Malformed) -> None:
        self._write(plain_lines(before, after, item))

    def close(self, state: ViewState) -> None:
        self._write(closing_lines(state))


class TerminalScreen:
    """Calls in flight and streaming text redrawn in place; settled lines printed above them."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.state = ViewState()
        self.live = Live(
            get_renderable=self._in_flight, console=console, refresh_per_second=VIEW_REFRESHES_PER_S,
            transient=True, redirect_stdout=False, redirect_stderr=False,
        )  # fmt: skip
        self.live.start()

    def _in_flight(self) -> RenderableType:
        return view_screen.in_flight(self.state, open_note(self.state), time.monotonic())

    def show(self, before: ViewState, after: ViewState, item: EventLine | Malformed) -> None:
        opened = open_note(before)
        if opened is not None and (isinstance(item, Malformed) or event_name(item.payload) != opened.kind):
            self.console.print(view_screen.note(opened))
        self.state = after
        if isinstance(item, Malformed):
            last = last_entry(after)
            if isinstance(last, Note):
                self.console.print(view_screen.note(last))
            return
        payload = item.payload
        if isinstance(payload, SessionStarted) and before.started is None:
            self.console.print(view_screen.header(after))
        elif isinstance(payload, ToolResult):
            call = call_of(after, payload.call_id)
            if call is not None:
                self.console.print(view_screen.call_line(call))
        elif isinstance(payload, TurnStarted):
            self.console.print(view_screen.line(turn_text(payload), "dim"))
        elif isinstance(payload, SessionEnded):
            self.console.print(view_screen.line(f"session ended: {stop_text(after)}", "bold"))
        elif not isinstance(payload, Text | Thinking | StreamClosed) and len(after.timeline) > len(before.timeline):
            last = last_entry(after)
            if isinstance(last, Note):
                self.console.print(view_screen.note(last))
        self.live.refresh()

    def close(self, state: ViewState) -> None:
        self.live.stop()
        opened = open_note(state)
        if opened is not None:
            self.console.print(view_screen.note(opened))
        for call in all_calls(state):
            if call.result is None:
                self.console.print(view_screen.call_line(call))
        self.console.print(view_screen.closing(state))


def _source(path: str, kind: Kind | None) -> Iterator[bytes] | Refusal:
    if kind is not None:
        words = not_utf8(((f"--from {kind}'s record path", path),))
        return words if words is not None else _record_source(path, kind)
    if path == "-":
        return iter(sys.stdin.buffer.readline, b"")
    try:
        with open(path, "rb") as handle:
            data = read_bounded(handle, INPUT_FILE_LIMIT)
    except OSError as error:
        return _unreadable(path, error)
    return iter(data.splitlines(keepends=True))


def _unreadable(path: str, error: OSError) -> Refusal:
    return Refusal("view-unreadable", f"{path}: cannot be read: {error.strerror or error}")


def _record_source(path: str, kind: Kind) -> Iterator[bytes] | Refusal:
    """``--from``: the record read once into a sealed memory copy no other process can name or change
    (``metaharness.shell.project.ScratchCopy``; past ``INPUT_FILE_LIMIT`` refused with nothing shown), then the
    event lines ``replay`` maps from the copy, line by line, so the record is never held whole (docs/view.md)."""
    copy = ScratchCopy()
    copied = _copied(path, copy)
    if copied is None:
        copied = copy.sealed(path)
    if copied is not None:
        copy.file.close()
        return copied
    return _event_lines(copy, kind, path)


def _copied(path: str, copy: ScratchCopy) -> Refusal | None:
    """``path`` (``-``: stdin) written into ``copy``, or ``view-unreadable``; a failed write is an ``OSError``
    (``view-io-failed``)."""
    try:
        handle = contextlib.nullcontext(sys.stdin.buffer) if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as error:
        return _unreadable(path, error)
    with handle as source:
        try:
            for _ in copy.copied(bounded_chunks(source)):
                pass
        except CopyFailed as failed:
            raise failed.error from None
        except OSError as error:
            return _unreadable(path, error)
    return None


def _event_lines(copy: ScratchCopy, kind: Kind, path: str) -> Iterator[bytes]:
    """The event lines of the sealed ``copy`` of a ``kind`` record, mapped as ``replay`` maps it with its defaults."""
    with copy.file:
        for output in mapped_record(kind, path, copy.chunks()):
            yield from output.splitlines(keepends=True)


def view(path: str, kind: Kind | None) -> int:
    """Show the stream at ``path`` (``-``: stdin), or the record of ``kind`` mapped as ``replay`` maps it.
    SIGINT is ignored while the input is open: a Ctrl-C on ``run … | metaharness-view`` reaches the run,
    which closes its stream, and the view shows it to the end (docs/view.md)."""
    lines = _source(path, kind)
    if isinstance(lines, Refusal):
        return refuse(lines)
    screen: PlainScreen | TerminalScreen = (
        TerminalScreen(Console(highlight=False)) if sys.stdout.isatty() else PlainScreen(sys.stdout.buffer)
    )
    state = ViewState()
    interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for item in read_lines(lines):
            after = fold_view(state, item, time.monotonic())
            screen.show(state, after, item)
            state = after
    finally:
        signal.signal(signal.SIGINT, interrupt)
        screen.close(state)
    return view_exit(state)


@click.command(cls=ClosedAtParse, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("events", default="-", metavar="[EVENTS|-]")
@click.option("--from", "kind", type=click.Choice(KINDS), help="EVENTS is a retained vendor record of KIND.")
@click.version_option(package_name="metaharness", prog_name="metaharness-view", message="%(prog)s %(version)s")
def _command(events: str, kind: Kind | None) -> int:
    """Show a metaharness.event/1 stream (a file, or stdin) as a person reads it."""
    try:
        return view(events, kind)
    except BrokenPipeError:  # click would exit 1 in silence
        drop_stdout()
        return refuse(Refusal("view-io-failed", "the view could not be written: its reader closed stdout"))


def main() -> NoReturn:
    """The ``metaharness-view`` console script: parse errors are ``usage`` refusals, a failed read or
    write ``view-io-failed``, never a traceback."""
    stand_in_closed_streams()
    try:
        result = _command.main(sys.argv[1:], prog_name="metaharness-view", standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except click.exceptions.ClickException as error:
        code = refuse(Refusal("usage", error.format_message()))
    except (click.exceptions.Abort, KeyboardInterrupt):
        code = refuse(Refusal("signalled", "SIGINT arrived before the stream ended"))
    except OSError as error:
        code = refuse(Refusal("view-io-failed", f"the stream could not be read or the view written: {error.strerror or error}"))
    sys.exit(code)
