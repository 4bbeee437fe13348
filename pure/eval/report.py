"""``report.html`` of an evaluation: the task × arm matrix, each run linking to its own page
(docs/eval.md "Output"). One self-contained HTML5 file, no script, byte-stable for the same results."""

from __future__ import annotations

import html
from collections.abc import Collection, Sequence

from metaharness.pure.eval.results import RunResult, arm_totals, result_cells

RUN_PAGE = "page.html"
_STYLE = (
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
    "th,td{border:1px solid #bbb;padding:.3em .6em;text-align:left;vertical-align:top}"
    "td.pass{background:#e3f5e1}td.fail{background:#fbe3e1}td.unfinished{background:#f3e9c6}"
    "a{color:inherit}ul{margin:.2em 0;padding-left:1.1em}li.failed{font-weight:bold}"
)


def run_directory(task: str, arm: str, repeat: int) -> str:
    """Where one run's files live under the out directory."""
    return f"runs/{task}/{arm}/{repeat}"


def _escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def _run_entry(result: RunResult, paged: Collection[tuple[str, str, int]]) -> str:
    passed = sum(outcome.passed for outcome in result.checks)
    label = f"#{result.repeat} {result.state}, {passed}/{len(result.checks)}"
    if (result.task, result.arm, result.repeat) in paged:
        href = f"{run_directory(result.task, result.arm, result.repeat)}/{RUN_PAGE}"
        label = f'<a href="{_escape(href)}">{_escape(label)}</a>'
    else:
        label = _escape(label)
    failed = "".join(
        f'<li class="failed">{_escape(outcome.id)}: {_escape(outcome.reason)}</li>'
        for outcome in result.checks
        if not outcome.passed
    )
    return f"<li>{label}{f'<ul>{failed}</ul>' if failed else ''}</li>"


def report_page(
    results: Sequence[RunResult], tasks: Sequence[str], arms: Sequence[str], paged: Collection[tuple[str, str, int]]
) -> str:
    """The page: a row per task, a column per arm; each cell the checks passed over counted, its
    runs linking to their pages (``paged`` names the runs that have one) with failed checks listed;
    the totals per arm below."""
    cells = result_cells(results)
    rows = []
    for task in tasks:
        columns = []
        for arm in arms:
            cell = cells.get((task, arm))
            if cell is None:
                columns.append("<td></td>")
                continue
            verdict = "unfinished" if cell.unfinished else ("pass" if cell.passed == cell.total else "fail")
            runs = "".join(_run_entry(result, paged) for result in results if (result.task, result.arm) == (task, arm))
            columns.append(f'<td class="{verdict}"><strong>{_escape(cell.text())}</strong><ul>{runs}</ul></td>')
        rows.append(f"<tr><th>{_escape(task)}</th>{''.join(columns)}</tr>\n")
    heads = "".join(f"<th>{_escape(arm)}</th>" for arm in arms)
    totals = "".join(f"<li>{_escape(line)}</li>" for line in arm_totals(cells, arms))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n'
        '<head>\n<meta charset="utf-8">\n'
        "<title>metaharness-eval report</title>\n"
        f"<style>{_STYLE}</style>\n"
        "</head>\n<body>\n<h1>metaharness-eval</h1>\n"
        f"<table>\n<thead><tr><th>task</th>{heads}</tr></thead>\n<tbody>\n{''.join(rows)}</tbody>\n</table>\n"
        f"<ul class=\"totals\">{totals}</ul>\n"
        "</body>\n</html>\n"
    )
