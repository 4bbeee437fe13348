"""Every refusal of ``metaharness-eval`` comes before any run starts: the one stderr line
``metaharness-eval: <code>: <message>``, exit 2, and nothing run (the out directory stays empty)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from eval_world import EVAL, make_world, run_eval

from metaharness.pure.bounds import PLAN_FILE_LIMIT

ENDPOINT = "http://127.0.0.1:9/v1"
B10X = {"kind": "b10x", "model": "b10x-emulated", "model-endpoint": ENDPOINT, "frame": "write.frame.json"}
TASK = {"id": "t", "prompt": "p", "workspace": {"git": "repo", "ref": "HEAD"}, "checks": [{"id": "ok", "exit": 0}]}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_world(tmp_path_factory.mktemp("eval-refusals"))


def plan(**changes: object) -> dict:
    return {"format": "metaharness.eval/1", "arms": {"b10x": B10X}, "tasks": [TASK], **changes}


def refused(root: Path, text: str, *args: str) -> str:
    """The refusal line for a plan of ``text``; asserts exit 2, one line, and no run directory."""
    (root / "plan.yaml").write_text(text)
    out = root / "out"
    done = run_eval(root, "plan.yaml", "--out", str(out), *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("metaharness-eval: ") and not done.stdout
    assert not out.exists()
    return done.stderr.rstrip("\n")


CASES = [
    ("[unclosed", "plan-unreadable: not YAML or JSON"),
    (yaml.safe_dump(plan(format="metaharness.eval/2")), "plan-malformed: format: must be metaharness.eval/1"),
    (yaml.safe_dump(plan(arms={"b10x": {"model": "m"}})), "plan-malformed: arms.b10x.kind: every arm names its kind"),
    (yaml.safe_dump(plan(tasks=[{**TASK, "timeout": -1}])), "plan-malformed: tasks.t.timeout: a positive number"),
    (yaml.safe_dump(plan(tasks=[{**TASK, "checks": [{"id": "x", "exit": 0, "file": {"path": "a"}}]}])),
     "plan-malformed: tasks.t.checks[0]: a check has exactly one of"),
    (yaml.safe_dump(plan(tasks=[{**TASK, "checks": [{"id": "x", "census": {"denyed": 0}}]}])),
     "plan-malformed: tasks.t.checks[0].census.denyed:"),
    (yaml.safe_dump(plan(arms={"b10x": {**B10X, "temperature": 0}})),
     "plan-option-unknown: arms.b10x.temperature: metaharness run has no option --temperature"),
    (yaml.safe_dump(plan(arms={"b10x": {**B10X, "cwd": "/tmp"}})),
     "plan-option-reserved: arms.b10x.cwd: the task sets cwd, not the arm"),
    (yaml.safe_dump(plan(arms={"b10x": {**B10X, "scratch-cwd": True}})), "plan-option-reserved: arms.b10x.scratch-cwd"),
    (yaml.safe_dump(plan(arms={"b10x": {**B10X, "decisions": "ask"}})),
     "plan-ask-arm: arms.b10x.decisions: ask waits for an embedder's answers, and nobody answers"),
    (yaml.safe_dump(plan(arms={"b10x": {**B10X, "max-turns": 0}})), "plan-option-invalid: arms.b10x: "),
    (yaml.safe_dump(plan(arms={"b10x": {**B10X, "hermetic": "sometimes"}})), "plan-option-invalid: arms.b10x: "),
    (yaml.safe_dump(plan(tasks=[TASK, TASK])), "plan-duplicate-id: tasks: the task id t repeats"),
    (yaml.safe_dump(plan(tasks=[{**TASK, "checks": [{"id": "ok", "exit": 0}, {"id": "ok", "exit": 1}]}])),
     "plan-duplicate-id: tasks.t.checks: the check id ok repeats"),
    (yaml.safe_dump(plan(tasks=[{**TASK, "workspace": {"git": "home", "ref": "HEAD"}}])),
     "plan-workspace-not-git: tasks.t.workspace: "),
    (yaml.safe_dump(plan(tasks=[{**TASK, "workspace": {"git": "repo", "ref": "no-such-branch"}}])),
     "plan-ref-unresolved: tasks.t.workspace: no-such-branch names no commit in "),
    (yaml.safe_dump(plan(tasks=[{**TASK, "workspace": {"git": "repo", "ref": "bare"}, "context": ["docs/brief.md"]}])),
     "plan-context-missing: tasks.t.context: docs/brief.md is not in bare"),
    (yaml.safe_dump(plan(arms={"b10x": {**B10X, "frame": "missing.frame.json"}})),
     "plan-file-unreadable: arms.b10x.frame: "),
]


@pytest.mark.parametrize(("text", "line"), CASES, ids=[line.split(":")[0] + str(n) for n, (_, line) in enumerate(CASES)])
def test_plan_refusals_come_before_any_run(root: Path, text: str, line: str) -> None:
    assert refused(root, text).startswith(f"metaharness-eval: {line}")


def test_an_unreadable_plan_file(root: Path) -> None:
    done = run_eval(root, "no-such-plan.yaml", "--out", "out")
    assert done.returncode == 2 and done.stderr.startswith("metaharness-eval: plan-unreadable: no-such-plan.yaml: ")


def test_a_plan_past_its_bound_is_refused_unread(root: Path) -> None:
    """A plan larger than ``PLAN_FILE_LIMIT`` (here a sparse file of 17 MiB) is ``plan-unreadable`` naming the bound,
    with no more than the bound read and no run started."""
    with (root / "huge-plan.yaml").open("wb") as handle:
        handle.truncate(PLAN_FILE_LIMIT + 1024 * 1024)
    done = run_eval(root, "huge-plan.yaml", "--out", "out")
    assert done.returncode == 2 and not (root / "out").exists()
    assert done.stderr == f"metaharness-eval: plan-unreadable: huge-plan.yaml: larger than {PLAN_FILE_LIMIT} bytes\n"


def test_only_names_a_task_or_an_arm(root: Path) -> None:
    line = refused(root, yaml.safe_dump(plan()), "--only", "nobody")
    assert line == "metaharness-eval: only-unknown: nobody is neither a task nor an arm of the plan"


def test_a_non_empty_out_directory_without_resume(root: Path) -> None:
    (root / "full").mkdir()
    (root / "full" / "something").write_text("x")
    (root / "plan.yaml").write_text(yaml.safe_dump(plan()))
    done = run_eval(root, "plan.yaml", "--out", "full")
    assert done.returncode == 2
    assert done.stderr == "metaharness-eval: out-not-empty: full is not empty; --resume runs only what is missing there\n"


def test_ray_without_the_extra_is_refused(root: Path, tmp_path: Path) -> None:
    """The ray package hidden from the interpreter: ``--ray`` is ``ray-unavailable``."""
    (tmp_path / "ray.py").write_text("raise ImportError('hidden by the test')\n")
    (root / "plan.yaml").write_text(yaml.safe_dump(plan()))
    done = subprocess.run(
        [str(EVAL), "plan.yaml", "--out", "out-ray", "--ray", "auto"],
        cwd=root, env={"PATH": "/usr/bin:/bin", "HOME": str(root / "home"), "PYTHONPATH": str(tmp_path)},
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 2
    assert done.stderr == "metaharness-eval: ray-unavailable: --ray needs the ray package: pip install 'metaharness[ray]'\n"


def test_a_usage_error_is_one_line(root: Path) -> None:
    done = run_eval(root, "plan.yaml")
    assert done.returncode == 2 and done.stderr == "metaharness-eval: usage: Missing option '--out'.\n"


def test_an_out_path_that_is_a_file(root: Path) -> None:
    (root / "a-file").write_text("x")
    (root / "plan.yaml").write_text(yaml.safe_dump(plan()))
    done = run_eval(root, "plan.yaml", "--out", "a-file")
    assert done.returncode == 2 and done.stderr == "metaharness-eval: out-not-a-directory: a-file exists and is not a directory\n"


def test_an_out_path_that_cannot_be_made(root: Path) -> None:
    (root / "a-file").write_text("x")
    (root / "plan.yaml").write_text(yaml.safe_dump(plan()))
    done = run_eval(root, "plan.yaml", "--out", "a-file/out")
    assert done.returncode == 2 and done.stderr == "metaharness-eval: out-unwritable: a-file/out: Not a directory\n"


def test_jobs_below_one(root: Path) -> None:
    (root / "plan.yaml").write_text(yaml.safe_dump(plan()))
    done = run_eval(root, "plan.yaml", "--out", "out", "--jobs", "0")
    assert done.returncode == 2 and done.stderr == "metaharness-eval: usage: --jobs 0: at least 1\n"


def test_a_ray_address_nobody_answers(root: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[test,ray]')")
    (root / "plan.yaml").write_text(yaml.safe_dump(plan()))
    done = run_eval(root, "plan.yaml", "--out", "out", "--ray", "127.0.0.1:9")
    assert done.returncode == 2
    assert done.stderr.startswith("metaharness-eval: ray-unreachable: --ray 127.0.0.1:9: no Ray cluster answers there (")


@pytest.mark.parametrize("redirect", [">&-", ">/dev/full"])
def test_a_ray_driver_with_stdout_closed_or_full_exits_as_before(root: Path, redirect: str) -> None:
    """The Ray driver's quick exit flushes its streams first: with stdout closed (``None`` in Python) or
    full it still ends with the refusal's exit 2, never a traceback."""
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[test,ray]')")
    (root / "plan.yaml").write_text(yaml.safe_dump(plan()))
    done = subprocess.run(
        ["sh", "-c", f'exec "$0" "$@" {redirect}', str(EVAL), "plan.yaml", "--out", "out", "--ray", "127.0.0.1:9"],
        cwd=root, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("metaharness-eval: ray-unreachable: --ray 127.0.0.1:9: no Ray cluster answers there (")
    assert "Traceback" not in done.stderr
