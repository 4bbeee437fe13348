"""The evaluation plan ``metaharness.eval/1`` read from its bytes (docs/eval.md "The plan").

``read_plan`` turns the document into a ``Plan`` or the first refusal it meets, each naming the key
it is about. The arms' options are checked against the ``run`` command's own option table, handed
in as ``OptionShape`` facts, so the plan accepts exactly what ``metaharness run`` accepts by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec
import yaml
from returns.result import Failure, Result, Success

from metaharness.pure.budgets import EVAL_TASK_TIMEOUT_S
from metaharness.pure.eval.checks import Check, identifier, malformed, read_check
from metaharness.pure.refusal import Refusal

PLAN_FORMAT = "metaharness.eval/1"
RESERVED_OPTIONS = ("prompt", "cwd", "scratch-cwd", "context")
"""The options each task owns: an arm that sets one is refused ``plan-option-reserved``."""
SHIPPED_FILE_OPTIONS = ("frame", "catalogue", "spec", "prices", "hooks", "subscription-token-file")
"""Arm options naming a file relative to the plan: their bytes travel with each run."""
SHIPPED_DIRECTORY_OPTIONS = ("plugin-dir",)
"""Arm options naming a directory relative to the plan: its files travel with each run."""

OptionValue = str | bool | tuple[str, ...]


class OptionShape(msgspec.Struct, frozen=True):
    """How ``run`` takes one option: a flag (no value) or a value, repeatable or not."""

    flag: bool
    multiple: bool


class EvalArm(msgspec.Struct, frozen=True):
    """One arm: its id, its kind and its ``run`` options in the plan's order (``kind`` excluded)."""

    id: str
    kind: str
    options: tuple[tuple[str, OptionValue], ...]

    def option(self, name: str) -> OptionValue | None:
        return next((value for key, value in self.options if key == name), None)


class Task(msgspec.Struct, frozen=True):
    """One task: the prompt, the workspace repository (relative to the plan) at a ref, the context
    files (inside the workspace), the timeout in seconds and the checks."""

    id: str
    prompt: str
    repository: str
    ref: str
    context: tuple[str, ...]
    timeout: float
    checks: tuple[Check, ...]


class Plan(msgspec.Struct, frozen=True):
    arms: tuple[EvalArm, ...]
    tasks: tuple[Task, ...]
    repeat: int


class _Loader(yaml.SafeLoader):
    """YAML whose booleans are only ``true`` and ``false`` (as in YAML 1.2 and JSON), so an option
    value such as ``on`` or ``off`` stays the word ``run`` expects."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

def _scalar(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return str(value)


def _option_value(key: str, value: object, shape: OptionShape) -> Result[OptionValue, Refusal]:
    if shape.flag:
        return Success(value) if isinstance(value, bool) else malformed(key, "a flag takes true or false")
    if shape.multiple:
        words = value if isinstance(value, list) else [value]
        scalars = tuple(_scalar(word) for word in words)
        if any(word is None for word in scalars):
            return malformed(key, "takes a word or a list of words")
        return Success(tuple(word for word in scalars if word is not None))
    word = _scalar(value)
    return Success(word) if word is not None else malformed(key, "takes one word")


def _arm(arm_id: str, raw: object, options: Mapping[str, OptionShape]) -> Result[EvalArm, Refusal]:
    where = f"arms.{arm_id}"
    if not isinstance(raw, dict):
        return malformed(where, "an arm is a map of run options")
    kind = raw.get("kind")
    if not isinstance(kind, str):
        return malformed(f"{where}.kind", "every arm names its kind")
    chosen: list[tuple[str, OptionValue]] = []
    for name, value in raw.items():
        if name == "kind":
            continue
        if name in RESERVED_OPTIONS:
            return Failure(Refusal("plan-option-reserved", f"{where}.{name}: the task sets {name}, not the arm"))
        if not isinstance(name, str) or name not in options:
            return Failure(Refusal("plan-option-unknown", f"{where}.{name}: metaharness run has no option --{name}"))
        if name == "decisions" and value == "ask":
            return Failure(
                Refusal("plan-ask-arm", f"{where}.decisions: ask waits for an embedder's answers, and nobody answers")
            )
        read = _option_value(f"{where}.{name}", value, options[name])
        if isinstance(read, Failure):
            return read
        chosen.append((name, read.unwrap()))
    return Success(EvalArm(id=arm_id, kind=kind, options=tuple(chosen)))


def _task(index: int, raw: object) -> Result[Task, Refusal]:
    where = f"tasks[{index}]"
    if not isinstance(raw, dict):
        return malformed(where, "a task is a map")
    unknown = sorted(set(raw) - {"id", "prompt", "workspace", "context", "timeout", "checks"})
    if unknown:
        return malformed(f"{where}.{unknown[0]}", "not a task key")
    task_id = identifier(f"{where}.id", raw.get("id"))
    if isinstance(task_id, Failure):
        return task_id
    where = f"tasks.{task_id.unwrap()}"
    prompt = raw.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        return malformed(f"{where}.prompt", "a task has a non-empty prompt")
    workspace = raw.get("workspace")
    if not isinstance(workspace, dict) or set(workspace) != {"git", "ref"}:
        return malformed(f"{where}.workspace", "a workspace is {git: PATH, ref: REF}")
    if not all(isinstance(workspace[key], str) and workspace[key] for key in ("git", "ref")):
        return malformed(f"{where}.workspace", "git and ref are non-empty strings")
    context = raw.get("context", [])
    if not isinstance(context, list) or not all(isinstance(path, str) and path for path in context):
        return malformed(f"{where}.context", "a list of paths inside the workspace")
    if any(path.startswith("/") or ".." in path.split("/") for path in context):
        return malformed(f"{where}.context", "paths stay inside the workspace")
    timeout = raw.get("timeout", EVAL_TASK_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return malformed(f"{where}.timeout", "a positive number of seconds")
    checks_raw = raw.get("checks", [])
    if not isinstance(checks_raw, list):
        return malformed(f"{where}.checks", "a list of checks")
    checks: list[Check] = []
    for number, check_raw in enumerate(checks_raw):
        check = read_check(f"{where}.checks[{number}]", check_raw)
        if isinstance(check, Failure):
            return check
        if check.unwrap().id in {known.id for known in checks}:
            return Failure(Refusal("plan-duplicate-id", f"{where}.checks: the check id {check.unwrap().id} repeats"))
        checks.append(check.unwrap())
    return Success(
        Task(
            id=task_id.unwrap(),
            prompt=prompt,
            repository=workspace["git"],
            ref=workspace["ref"],
            context=tuple(context),
            timeout=float(timeout),
            checks=tuple(checks),
        )
    )


def read_plan(data: bytes, options: Mapping[str, OptionShape]) -> Result[Plan, Refusal]:
    """The plan in ``data`` (YAML or JSON), its arm options checked against ``options``, the ``run``
    command's table; the first problem is the refusal."""
    try:
        raw = yaml.load(data, Loader=_Loader)
    except yaml.YAMLError as error:
        return Failure(Refusal("plan-unreadable", f"not YAML or JSON: {' '.join(str(error).split())}"))
    if not isinstance(raw, dict):
        return malformed("(top)", "the plan is a map")
    unknown = sorted(set(raw) - {"format", "arms", "tasks", "repeat"})
    if unknown:
        return malformed(str(unknown[0]), "not a plan key")
    if raw.get("format") != PLAN_FORMAT:
        return malformed("format", f"must be {PLAN_FORMAT}")
    arms_raw = raw.get("arms")
    if not isinstance(arms_raw, dict) or not arms_raw:
        return malformed("arms", "a non-empty map of arm id to run options")
    arms: list[EvalArm] = []
    for arm_id, arm_raw in arms_raw.items():
        checked_id = identifier(f"arms.{arm_id}", arm_id)
        if isinstance(checked_id, Failure):
            return checked_id
        arm = _arm(checked_id.unwrap(), arm_raw, options)
        if isinstance(arm, Failure):
            return arm
        arms.append(arm.unwrap())
    tasks_raw = raw.get("tasks")
    if not isinstance(tasks_raw, list) or not tasks_raw:
        return malformed("tasks", "a non-empty list of tasks")
    tasks: list[Task] = []
    for index, task_raw in enumerate(tasks_raw):
        task = _task(index, task_raw)
        if isinstance(task, Failure):
            return task
        if task.unwrap().id in {known.id for known in tasks}:
            return Failure(Refusal("plan-duplicate-id", f"tasks: the task id {task.unwrap().id} repeats"))
        tasks.append(task.unwrap())
    repeat = raw.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        return malformed("repeat", "a whole number of at least 1")
    return Success(Plan(arms=tuple(arms), tasks=tuple(tasks), repeat=repeat))


def chosen_plan(plan: Plan, only: tuple[str, ...]) -> Result[Plan, Refusal]:
    """The plan narrowed by ``--only``: each name is a task id or an arm id; tasks and arms named keep
    only themselves on their axis, an axis nobody named keeps everything."""
    task_ids = {task.id for task in plan.tasks}
    arm_ids = {arm.id for arm in plan.arms}
    unknown = [name for name in only if name not in task_ids | arm_ids]
    if unknown:
        return Failure(Refusal("only-unknown", f"{unknown[0]} is neither a task nor an arm of the plan"))
    tasks = tuple(task for task in plan.tasks if task.id in only) or plan.tasks
    arms = tuple(arm for arm in plan.arms if arm.id in only) or plan.arms
    return Success(Plan(arms=arms, tasks=tasks, repeat=plan.repeat))


def run_words(arm: EvalArm, shipped: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The arm as ``run`` words after the kind: flags set to true, each value (each of a repeated
    option's values) after its option; a shipped path option takes its paths from ``shipped``."""
    words: list[str] = []
    for name, value in arm.options:
        if value is True:
            words.append(f"--{name}")
        elif value is False:
            continue
        else:
            values = shipped.get(name, value if isinstance(value, tuple) else (value,))
            for word in values:
                words += [f"--{name}", word]
    return tuple(words)


def plan_runs(plan: Plan) -> tuple[tuple[Task, EvalArm, int], ...]:
    """Every run of the plan in plan order: task by task, arm by arm, repeat 1..n."""
    return tuple(
        (task, arm, number) for task in plan.tasks for arm in plan.arms for number in range(1, plan.repeat + 1)
    )

