"""``metaharness-view`` on a terminal: the view's state drawn as ``rich`` renderables (docs/view.md).

Nothing here reads input or writes output; :mod:`metaharness.shell.view` does, and prints what these
functions build. Style words of :mod:`metaharness.pure.run_view` map to colours here.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from metaharness.pure.audit_report import census_lines, withheld_line
from metaharness.pure.run_view import (
    CallView,
    Note,
    Parts,
    ViewState,
    all_calls,
    call_parts,
    completeness_line,
    final_census,
    header_fields,
    implied_exit,
    opaque_line,
    refusal_lines,
    rows_caption,
    state_rows,
    stop_text,
)
from metaharness.pure.terminal_text import shown

STYLES = {
    "tool": "bold",
    "dim": "dim",
    "allow": "green",
    "ok": "green",
    "deny": "bold red",
    "error": "red",
    "gap": "bold red",
    "replace": "yellow",
    "abstain": "magenta",
    "unk": "yellow",
    "pending": "bold yellow",
}
"""Style word → ``rich`` style."""

NOTE_STYLES = {
    "text": "dim",
    "thinking": "dim italic",
    "warning": "yellow",
    "command": "cyan",
    "malformed": "bold red",
    "record": "blue",
}


def line(words: str, style: str = "") -> Text:
    """``words`` as one ``rich`` text in ``style``, its control characters escaped (``shown``): a record's
    strings reach the terminal as text, never as its control sequences (docs/view.md#control-characters)."""
    return Text(shown(words), style=style, overflow="fold")


def styled(parts: Parts) -> Text:
    """The parts as one ``rich`` text, each piece in its style (control characters escaped)."""
    text = Text(overflow="fold")
    for piece, word in parts:
        text.append(shown(piece), style=STYLES.get(word, ""))
    return text


def header(state: ViewState) -> RenderableType:
    """The run's header: a grid of label and value."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", justify="right")
    grid.add_column(overflow="fold")
    for label, value in header_fields(state):
        grid.add_row(label, line(value, "bold" if label == "run" else ""))
    return grid


def note(entry: Note) -> Text:
    """Text or thinking dimmed, a warning with its code, a command answer, a malformed line."""
    style = NOTE_STYLES.get(entry.kind, "")
    if entry.kind in ("text", "thinking"):
        return line(entry.text, style)
    label = f"⚠ {entry.label}" if entry.kind == "warning" else f"{entry.kind} {entry.label}"
    labelled = Text(overflow="fold")
    labelled.append(shown(label), style=f"bold {style}")
    labelled.append(shown(f" {entry.text}"), style=style)
    return labelled


def call_line(call: CallView, now: float | None = None) -> Text:
    """A call on one line; while it waits for an embedder's answer its deadline counts down."""
    return styled((("● ", "dim"), *call_parts(call, now)))


def in_flight(state: ViewState, opened: Note | None, now: float) -> RenderableType:
    """The part redrawn in place: every call without its result yet, then the text still streaming."""
    lines: list[RenderableType] = [call_line(call, now) for call in all_calls(state) if call.result is None]
    if opened is not None:
        lines.append(note(opened))
    return Group(*lines)


def hermetic_table(state: ViewState) -> Table:
    """The hermetic rows coloured by verdict, with their attested state."""
    table = Table(title=line(rows_caption(state)), title_justify="left", expand=False)
    for column in ("row", "verdict", "state", "control", "how / why"):
        table.add_column(column, overflow="fold")
    for row in state_rows(state):
        colour = STYLES[row.verdict]
        table.add_row(line(row.row), line(row.verdict, colour), line(row.state, colour), line(row.control), line(row.text))
    return table


def closing(state: ViewState) -> RenderableType:
    """The end of input: census, hermetic table, stop, completeness and the exit the stream implies."""
    census = line("\n".join(census_lines(final_census(state))))
    parts: list[RenderableType] = [census]
    parts += [line(refused, "bold red") for refused in refusal_lines(state)]
    opaque = opaque_line(state)
    parts += [line(opaque, "dim")] if opaque is not None else []
    parts.append(line(withheld_line(state.started.withheld if state.started is not None else None)))
    if state.started is not None:
        parts.append(hermetic_table(state))
    parts.append(line(f"stop: {stop_text(state)}"))
    parts.append(line(completeness_line(state), "green" if state.last_event == "stream.closed" else "bold red"))
    child, implied = implied_exit(state)
    exit_text = line(f"child exit: {child}; ")
    if implied is None:
        exit_text.append("no exit is implied without a closing marker", style="bold red")
    else:
        exit_text.append(f"the stream implies exit {implied}", style="green" if implied == 0 else "bold red")
    parts.append(exit_text)
    if state.malformed:
        parts.append(Text(f"{state.malformed} malformed line(s) shown and skipped", style="bold red"))
    return Group(*parts)
