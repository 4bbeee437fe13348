"""The MCP server's stdio loop (docs/hermetic.md#mcp-wire): read lines, step the pure wire, perform through the
loop's confined tools (docs/loop.md#tools), write one flushed answer per request; end of file ends it."""

from __future__ import annotations

import sys
import time
from typing import Any, BinaryIO, TextIO

from metaharness.pure.bounds import COMMAND_LINE_LIMIT
from metaharness.pure.loop.catalogue import RESULT_CAP, Publication
from metaharness.pure.loop.gates import GateRefusal, admit_call
from metaharness.pure.mcp import (
    INTERNAL_ERROR,
    Note,
    Perform,
    ResponseLine,
    Server,
    error_answer,
    performed_answer,
    read_line,
    request_id_of,
)
from metaharness.shell.bounded_reads import bounded_lines
from metaharness.shell.loop.cancel import CancelToken
from metaharness.shell.loop.tools import PathRefused, ToolFailure, Workspace


def perform_entry(workspace: Workspace, publication: Publication, name: str, arguments: dict[str, Any]) -> bytes | str:
    """Loop entry ``name`` through the loop's gates 1-4 and 7 (docs/loop.md#gates; no approver: the frame
    or the embedder decided before the call reached the server): its compact reply, or the failure text."""
    admitted = admit_call(name, arguments, publication, (), workspace.root)
    if isinstance(admitted, GateRefusal):
        return admitted.text
    path = arguments.get("path", ".")
    try:
        if name == "run":
            reply = workspace.run(arguments["argv"])
        else:
            relative = admitted.relative or "."
            if name in ("file_write", "file_edit"):
                workspace.check_write_target(path, relative, must_exist=name == "file_edit")
            reply = getattr(workspace, name)(path, relative, arguments)
    except (PathRefused, ToolFailure) as failure:
        return str(failure)
    except OSError as error:
        return f"`{name}` failed: {error.strerror or error}"
    if len(reply) > RESULT_CAP:
        return f"the result is {len(reply)} bytes, over the {RESULT_CAP} byte bound; narrow the request"
    return reply


def serve_stdio(
    server: Server, workspace: Workspace, publication: Publication, stdin: BinaryIO, stdout: BinaryIO, stderr: TextIO
) -> int:
    """ResponseLine every request line until end of file on ``stdin``, then exit 0."""
    for line in bounded_lines(stdin, COMMAND_LINE_LIMIT):
        try:
            step = read_line(server, line)
            if isinstance(step, Perform):
                outcome = perform_entry(workspace, publication, step.entry, step.arguments)
                step = performed_answer(step.request_id, outcome)
        except Exception as error:  # noqa: BLE001 - docs/hermetic.md#mcp-wire: a server fault is -32603, never a crash
            step = error_answer(request_id_of(line), INTERNAL_ERROR, f"server fault: {type(error).__name__}: {error}")
        if isinstance(step, ResponseLine):
            stdout.write(step.line)
            stdout.flush()
        elif isinstance(step, Note):
            stderr.write(f"metaharness mcp-serve: {step.text}\n")
            stderr.flush()
    return 0


def open_workspace(root: str) -> Workspace:
    """The loop's workspace at the real path of ``root``, with no deadline and no hidden variable."""
    return Workspace(root, (), CancelToken(None, time.monotonic()))


def run_server(server: Server, root: str, publication: Publication) -> int:
    """Serve on this process's stdin and stdout."""
    return serve_stdio(server, open_workspace(root), publication, sys.stdin.buffer, sys.stdout.buffer, sys.stderr)
