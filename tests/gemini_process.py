"""The pinned Gemini CLI found as a run's child would find it, a run of ``run_gemini`` in a real subprocess,
and the stream checks the gemini end-to-end tests share (docs/adapters/gemini.md)."""

from __future__ import annotations

import json
import subprocess
import sys

from codex_process import well_formed
from vendor_cli import PINS, pinned_cli

PINNED = PINS["gemini"]
GEMINI = pinned_cli("gemini")
"""The ``gemini`` on the child's PATH floor (``$HOME/.local/bin`` first) when it is the pin, else None."""

DRIVER = """
import json, sys
from metaharness.pure.options import RunOptions
from returns.result import Failure
from metaharness.shell.gemini.inputs import gathered_inputs
from metaharness.shell.gemini.run import run_gemini
from metaharness.shell.refusals import refuse
options, hook_timeout_s = RunOptions(kind="gemini", **json.loads(sys.argv[1])), json.loads(sys.argv[2])
inputs = gathered_inputs(options)
sys.exit(refuse(inputs.failure()) if isinstance(inputs, Failure) else run_gemini(options, inputs.unwrap(), hook_timeout_s))
"""


def start_run(options: dict, hook_timeout_s: int | None = None, env: dict[str, str] | None = None,
              cwd: str | None = None) -> subprocess.Popen[bytes]:  # fmt: skip
    """``run_gemini`` in a subprocess with real pipes; ``hook_timeout_s`` shortens the hook's timeout."""
    return subprocess.Popen([sys.executable, "-c", DRIVER, json.dumps(options), json.dumps(hook_timeout_s)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=cwd)  # fmt: skip


def endpoint(root: str, **options: object) -> dict:
    return {"prompt": "do the task", "credentials": "none", "model_endpoint": root, **options}


def finish(process: subprocess.Popen[bytes], lines: list[bytes] | None = None) -> tuple[list[dict], int, str]:
    """The run's well-formed stream, exit code and stderr once it ended."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    if not process.stdin.closed:
        process.stdin.close()
    rest, stderr = process.stdout.read(), process.stderr.read()
    code = process.wait(timeout=180)
    raw = [*(lines or []), *rest.splitlines(keepends=True)]
    if not raw:
        return [], code, stderr.decode()
    return well_formed(raw), code, stderr.decode()
