"""The run page of ``project --html``: what governance did in one run, or two runs aligned by call
(docs/view.md).

One self-contained HTML5 document: no script, no external resource, no clock, so the same documents
give the same bytes. A summary per run (the header of ``metaharness-view``, the stream's closing, the
census, the audited lines when given); then the calls as the spine: the k-th call of each run on one
row, marked where the runs' tool names or decisions differ, with the text, thinking and warnings
before each call between them; then each run's hermetic rows coloured by verdict.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import msgspec

from metaharness.pure.audit_report import census_lines, withheld_line
from metaharness.pure.events import EVENT_TYPES, EventLine
from metaharness.pure.jsonline import compact
from metaharness.pure.projection import TraceDocument
from metaharness.pure.run_view import (
    CallMark,
    CallView,
    Note,
    ViewState,
    completeness,
    completeness_line,
    decision_why,
    decision_word,
    effective_word,
    entries,
    final_census,
    fold_lines,
    header_fields,
    implied_exit,
    latency_text,
    opaque_line,
    refusal_lines,
    refused_by,
    result_parts,
    rows_caption,
    shortened,
    state_rows,
    stop_text,
)

PAGE_INPUT_CHARACTERS = 160
AUDITED_PREFIXES = ("child exit: ", "control verdict: ", "audit verdict: ")

STYLE = (
    "body{font-family:sans-serif;margin:1em;color:#222}"
    ".runs{display:flex;gap:1em;align-items:flex-start}"
    ".runs section{flex:1 1 0;min-width:0}section.run{border:1px solid #bbb;padding:.5em}"
    "h2{margin:.2em 0;font-size:1.2em}"
    "dl.summary{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.1em .8em;margin:.4em 0}"
    "dt{color:#666}dd{margin:0;font-family:monospace;overflow-wrap:anywhere}"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3em 0;font-size:.9em}"
    "table{border-collapse:collapse;width:100%;margin:.4em 0}"
    "th,td{border:1px solid #ccc;padding:3px 5px;vertical-align:top;text-align:left}"
    "td{overflow-wrap:anywhere}"
    "table.hermetic{table-layout:fixed;font-size:.85em}caption{text-align:left;font-weight:bold;padding:.2em 0}"
    "table.hermetic .c-row{width:2.6em}table.hermetic .c-verdict{width:4.4em}table.hermetic .c-state{width:7.4em}"
    "table.hermetic .c-control{width:35%}"
    ".v-ok .verdict,.v-ok .state{background:#d9f2d9;color:#064}"
    ".v-gap .verdict,.v-gap .state{background:#f8d0d0;color:#900;font-weight:bold}"
    ".v-unk .verdict,.v-unk .state{background:#fbefc4;color:#740}"
    "table.calls{table-layout:fixed}.k{width:7em;color:#666}"
    "tr.differs td.k{background:#ffd8a8;color:#820;font-weight:bold}"
    "tr.between td{background:#fafafa;border-top:none}"
    ".name{font-weight:bold}.id{color:#888}.input{font-family:monospace;overflow-wrap:anywhere}"
    ".decision{margin-top:.2em}.d-allow .word{color:#064}.d-deny .word{color:#b00}"
    ".d-replace .word{color:#a50}.d-abstain .word{color:#707}.d-none .word{color:#888}"
    ".d-deny{background:#fde8e8}.why{font-style:italic}.refused{color:#b00;font-weight:bold}"
    ".result{margin-top:.2em}.r-ok{color:#064}.r-error{color:#b00}"
    ".note{margin:.15em 0;overflow-wrap:anywhere}.n-text{color:#555}.n-thinking{color:#777;font-style:italic}"
    ".n-warning{background:#fff1c7}.n-malformed{background:#f8d0d0}.n-command{color:#046}"
    ".label{font-weight:bold;margin-right:.4em}"
    "dd.s-truncated,dd.s-inconsistent{background:#f8d0d0;color:#900;font-weight:bold}"
    ".run-label{display:none}"
    "@media (max-width:700px){"
    "body{margin:.4em}.runs{flex-direction:column}.runs section{flex:none;width:100%;box-sizing:border-box}"
    "table.calls,table.calls tbody,table.calls tr,table.calls td{display:block;width:auto}"
    "table.calls thead{display:none}table.calls td{border:none;border-top:1px solid #ccc}"
    "table.calls tr{border:1px solid #bbb;margin:.4em 0}table.calls td.k{width:auto}"
    ".run-label{display:block;color:#666;font-size:.85em}"
    "table.hermetic,table.hermetic tbody,table.hermetic caption{display:block}table.hermetic thead{display:none}"
    "table.hermetic tr{display:grid;grid-template-columns:3em 3.6em minmax(0,1fr);border-top:1px solid #ccc}"
    "table.hermetic td{border:none}table.hermetic td:nth-child(n+4){grid-column:1/-1}"
    "}"
)


def _escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def document_state(document: TraceDocument) -> ViewState:
    """The view's fold over a ``trace-ir/1`` document's nodes, read at clock reading zero."""
    return fold_lines([
        EventLine(seq=node.seq, run=document.run,
                  payload=msgspec.convert({"event": node.event, **node.data}, type=EVENT_TYPES[node.event]))
        for node in document.nodes
    ])  # fmt: skip


def audited_lines(report: str) -> tuple[str, ...]:
    """The three closing lines of an audited run's stderr report (``child exit``, ``control verdict``,
    ``audit verdict``), in the order they were written; none when the report has none."""
    return tuple(line for line in report.splitlines() if line.startswith(AUDITED_PREFIXES))


def _summary(document: TraceDocument, state: ViewState, audited: tuple[str, ...], anchor: str) -> str:
    fields = dict(header_fields(state))
    fields["frame"] = state.frame_digest or fields["frame"]
    child, implied = implied_exit(state)
    rows = [
        *((label, fields[label]) for label in ("kind", "version", "model", "directory", "decisions", "frame",
                                                "confinement", "hermetic")),
        ("source", document.metaharness.source),
        ("transcript digest", document.transcript_digest),
        ("stream", completeness_line(state).removeprefix("stream: ")),
        ("stop", stop_text(state)),
        ("child exit", child),
        ("exit", "not implied: no closing marker" if implied is None else f"{implied} (as an unaudited run)"),
    ]
    stream = "" if completeness(state) == "complete" else f' class="s-{completeness(state)}"'
    items = "".join(f"<dt>{_escape(key)}</dt><dd{stream if key == 'stream' else ''}>{_escape(value)}</dd>"
                    for key, value in rows)  # fmt: skip
    opaque = opaque_line(state)
    census = "\n".join((*census_lines(final_census(state)), *refusal_lines(state), *([opaque] if opaque else []),
                        withheld_line(state.started.withheld if state.started is not None else None)))
    audit = (f'<pre class="audited">{_escape(chr(10).join(audited))}</pre>' if audited else "")
    return (
        f'<section class="run" id="{anchor}"><h2>{_escape(document.run)}</h2>'
        f'<dl class="summary">{items}</dl><pre class="census">{_escape(census)}</pre>{audit}</section>\n'

    )


def _hermetic_table(state: ViewState) -> str:
    rows = state_rows(state)
    if not rows:
        return '<p class="hermetic">no hermetic attestation: the stream has no session.started</p>'
    body = "".join(
        f'<tr class="v-{row.verdict}"><td class="row">{_escape(row.row)}</td>'
        f'<td class="verdict">{row.verdict}</td><td class="state">{row.state}</td>'
        f"<td>{_escape(row.control)}</td><td>{_escape(row.text)}</td></tr>"
        for row in rows
    )
    return (
        f'<table class="hermetic"><caption>{_escape(rows_caption(state))}</caption>'
        "<thead><tr><th class=\"c-row\">row</th><th class=\"c-verdict\">verdict</th><th class=\"c-state\">state</th>"
        "<th class=\"c-control\">control</th><th>how / why</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _input_html(value: object) -> str:
    text = compact(value).decode("utf-8")
    short = shortened(text, PAGE_INPUT_CHARACTERS)
    if short == text:
        return f'<code class="input">{_escape(text)}</code>'
    full = msgspec.json.format(compact(value), indent=2).decode("utf-8")
    return (
        f'<code class="input">{_escape(short)}</code>'
        f'<details><summary>full input</summary><pre class="full">{_escape(full)}</pre></details>'
    )


def _call_html(state: ViewState, call: CallView) -> str:
    requested = call.requested
    decided = call.decided
    who = refused_by(state, call)
    refused = f'<div class="refused">refused by {_escape(who)}</div>' if who is not None else ""
    if decided is None:
        word = "undecided"
        said = ("asks the embedder, no answer recorded" if requested.decision_required
                else f"not decided (seam {requested.seam})")
        decision = f'<div class="decision d-none"><span class="word">{word}</span> {_escape(said)}</div>'
    else:
        word = decision_word(decided)
        why = decision_why(decided)
        decision = (
            f'<div class="decision d-{word}"><span class="word">{word}</span> by <span class="by">'
            f"{_escape(decided.decided_by)}</span> on {_escape(decided.seam)}, "
            f'<span class="latency">{_escape(latency_text(decided.latency_ms))}</span>'
            + (f'<div class="why">{_escape(why)}</div>' if why else "")
            + "</div>"
        )
    parts = result_parts(call)
    result = (
        f'<div class="result r-{parts[0][1]}">{_escape("".join(text for text, _ in parts))}</div>'
        if parts else '<div class="result r-none">no result recorded</div>'
    )
    return (
        f'<div class="request"><span class="name">{_escape(requested.name)}</span> '
        f'<span class="id">{_escape(requested.call_id)}</span> {_input_html(requested.input)}</div>'
        f"{decision}{refused}{result}"
    )


def _note_html(note: Note) -> str:
    label = "" if note.kind in ("text", "thinking") else f'<span class="label">{_escape(note.label)}</span>'
    return f'<div class="note n-{_escape(note.kind)}">{label}{_escape(note.text)}</div>'


def _spine(state: ViewState) -> tuple[list[list[Note]], list[CallView]]:
    """The notes before each call (and after the last, as one more group) and the calls in order."""
    groups: list[list[Note]] = [[]]
    calls: list[CallView] = []
    for entry in entries(state):
        if isinstance(entry, CallMark):
            calls.append(state.calls[entry.index])
            groups.append([])
        else:
            groups[-1].append(entry)
    return groups, calls


def _call_key(state: ViewState, call: CallView | None) -> tuple[str, str] | None:
    """What two runs' k-th calls are compared by: the tool and what happened to the call (a refusal is a
    ``deny`` whoever refused: metaharness or the vendor's own permission layer)."""
    if call is None:
        return None
    return call.requested.name, effective_word(state, call)


def _marker(states: Sequence[ViewState], calls: Sequence[CallView | None]) -> str:
    """Where two runs' k-th calls differ: ``≠ tool``, ``≠ decision``, both, or ``≠ absent``."""
    if len(calls) < 2:
        return ""
    keys = [_call_key(state, call) for state, call in zip(states, calls, strict=True)]
    if any(key is None for key in keys):
        return "≠ absent"
    names = {key[0] for key in keys if key is not None}
    words = {key[1] for key in keys if key is not None}
    return " ".join(word for word, differs in (("≠ tool", len(names) > 1), ("≠ decision", len(words) > 1)) if differs)


def _calls_table(documents: Sequence[TraceDocument], states: Sequence[ViewState]) -> str:
    spines = [_spine(state) for state in states]
    length = max(len(calls) for _, calls in spines)
    heads = "".join(f"<th>{_escape(document.run)}</th>" for document in documents)
    rows: list[str] = []
    for k in range(length + 1):
        notes = [groups[k] if k < len(groups) else [] for groups, _ in spines]
        if any(notes):
            cells = "".join(
                f'<td><span class="run-label">{_escape(document.run)}</span>{"".join(_note_html(n) for n in group)}</td>'
                if group else "<td></td>"
                for document, group in zip(documents, notes, strict=True)
            )  # fmt: skip
            rows.append(f'<tr class="between"><td class="k"></td>{cells}</tr>\n')
        if k == length:
            break
        calls = [calls[k] if k < len(calls) else None for _, calls in spines]
        marker = _marker(states, calls)
        cells = "".join(
            f'<td class="call"><span class="run-label">{_escape(document.run)}</span>{_call_html(state, call)}</td>'
            if call is not None else '<td class="call"></td>'
            for document, state, call in zip(documents, states, calls, strict=True)
        )  # fmt: skip
        mark = f'<span class="marker">{marker}</span>' if marker else ""
        classes = "call differs" if marker else "call"
        rows.append(f'<tr class="{classes}" id="call-{k + 1}"><td class="k">call {k + 1} {mark}</td>{cells}</tr>\n')
    return (
        '<table class="calls">\n'
        f'<thead><tr><th class="k">#</th>{heads}</tr></thead>\n<tbody>\n{"".join(rows)}</tbody>\n</table>\n'
    )


def run_page(documents: Sequence[TraceDocument], audits: Sequence[tuple[str, ...]] = ()) -> str:
    """The page of one or two runs; ``audits`` holds each run's audited lines (see
    :func:`audited_lines`), shown in its summary when present."""
    states = [document_state(document) for document in documents]
    title = " | ".join(document.run for document in documents)
    summaries = "".join(
        _summary(document, state, audits[index] if index < len(audits) else (), f"run-{index + 1}")
        for index, (document, state) in enumerate(zip(documents, states, strict=True))
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n'
        '<head>\n<meta charset="utf-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>metaharness run: {_escape(title)}</title>\n"
        f"<style>{STYLE}</style>\n"
        "</head>\n<body>\n"
        f'<div class="runs">\n{summaries}</div>\n'
        + _calls_table(documents, states)
        + '<div class="runs">\n'
        + "".join(f'<section class="rows">{_hermetic_table(state)}</section>\n' for state in states)
        + "</div>\n</body>\n</html>\n"
    )
