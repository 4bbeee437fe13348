"""What a sealed frame admits, in words (``metaharness-frame explain``, docs/frames.md#5-the-metaharness-frame-tool):
its operation set, then each subject rule in order, first match wins."""

from __future__ import annotations

from metaharness.pure.frames import Frame, Operation


def operation_text(operation: Operation) -> str:
    """``file.write``, or ``mcp.call server/tool`` for an MCP tool."""
    return operation.op if operation.server is None else f"{operation.op} {operation.server}/{operation.tool}"


def _listed(operations: tuple[Operation, ...]) -> str:
    return ", ".join(operation_text(operation) for operation in operations) or "nothing"


def explain_lines(frame: Frame) -> tuple[str, ...]:
    """The frame's identity, its operations and each subject rule, as docs/frames.md#1-write-the-document reads them."""
    step = frame.step
    lines = [
        f"frame {frame.digest}",
        (f"  workflow {frame.workflow.id} {frame.workflow.version} · node {frame.node.id} · step {step.state} "
        f"#{step.index} attempt {step.attempt}"),
        f"operations: {_listed(frame.operations)} — a call of any other operation is denied",
    ]
    if frame.subjects is None:
        lines.append("subjects: no rules, so no subject is narrowed: the operations above decide every call")
    elif not frame.subjects:
        lines.append("subjects: an empty list, so every call that names a subject is denied")
    else:
        lines.append("subjects: the first rule whose glob matches a call's subject decides it; a subject no rule "
                     "matches is denied")  # fmt: skip
        lines += [
            f"  {number}. {rule.subject} admits {_listed(rule.operations)}"
            for number, rule in enumerate(frame.subjects, start=1)
        ]
    return tuple(lines)
