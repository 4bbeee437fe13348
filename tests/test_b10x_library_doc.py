"""docs/library.md's dry-run example runs and prints what the page says, touching nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "library.md"


def test_the_dry_run_example_prints_what_the_page_says() -> None:
    text = DOC.read_text()
    code, expected = re.findall(r"```(?:python)?\n(.*?)```", text, flags=re.DOTALL)[:2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    assert not os.path.exists("/tmp/metaharness-dry-run")


def test_the_refusal_the_page_names() -> None:
    from metaharness.pure.b10x.launch import B10xLaunchFacts, plan_b10x_launch
    from metaharness.pure.options import RunOptions

    options = RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="https://g/v1", credentials="api-key")
    facts = B10xLaunchFacts(caller_env={"HOME": "/home/op"}, caller_cwd="/", scratch="/tmp/x", program="/p")
    line = plan_b10x_launch(options, facts).failure().line()
    assert line == "metaharness: api-key-missing: --credentials api-key on b10x: the caller's environment has no OPENAI_API_KEY"
    assert line in DOC.read_text()
