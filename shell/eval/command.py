"""The ``metaharness-eval`` console script: read and check the plan, refuse before any run starts,
carry out the runs locally or on Ray, write each run's directory as it finishes, then the summary,
the report and the table (docs/eval.md)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import NoReturn, TypeAlias

import click
import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import PLAN_FILE_LIMIT
from metaharness.pure.eval.plan import EvalArm, OptionShape, Plan, Task, chosen_plan, plan_runs, read_plan, run_words
from metaharness.pure.eval.report import RUN_PAGE, report_page, run_directory
from metaharness.pure.eval.results import RunResult, batch_exit, lost_result, read_result, result_document, result_table
from metaharness.pure.refusal import Refusal
from metaharness.pure.results import each
from metaharness.shell.bounded_reads import read_bounded
from metaharness.shell.child_tree import ChildDir
from metaharness.shell.cli import cli
from metaharness.shell.eval.executors import Outcome, PendingRun, ray_module, ray_reachable, run_locally, run_on_ray
from metaharness.shell.eval.out_tree import (
    existing_out,
    is_regular,
    made_folder,
    open_out,
    read_result_file,
    remove_file,
    replace_file,
)
from metaharness.shell.eval.packing import LastArchive, RunInputs, resolve_workspace, ship_arm
from metaharness.shell.eval.progress import Progress
from metaharness.shell.parse_output import ClosedAtParse
from metaharness.shell.refusals import REFUSAL_EXIT
from metaharness.shell.standard_streams import stand_in_closed_streams

PROGRAM = "metaharness-eval"


def refusal_line(refusal: Refusal) -> str:
    return f"{PROGRAM}: {refusal.code}: {' '.join(refusal.message.splitlines())}"


def run_option_table() -> tuple[click.Command, dict[str, OptionShape]]:
    """The real ``metaharness run`` command and its options by long name."""
    command = cli.commands["run"]
    table = {
        next(flag for flag in param.opts if flag.startswith("--"))[2:]: OptionShape(flag=param.is_flag, multiple=param.multiple)
        for param in command.params
        if isinstance(param, click.Option)
    }
    return command, table


def _check_arm_values(command: click.Command, arm: EvalArm) -> Result[EvalArm, Refusal]:
    """The arm's words parsed by the ``run`` command itself, so a value it would refuse (a choice
    it lacks, a number below its range) is refused here before any run."""
    words = [arm.kind, *run_words(arm, {}), "-p", "prompt"]
    try:
        command.make_context("run", words, resilient_parsing=False)
    except click.ClickException as error:
        return Failure(Refusal("plan-option-invalid", f"arms.{arm.id}: {error.format_message()}"))
    return Success(arm)


def _read_plan(path: Path, only: tuple[str, ...]) -> Result[Plan, Refusal]:
    try:
        with path.open("rb") as handle:
            data = read_bounded(handle, PLAN_FILE_LIMIT)
    except OSError as error:
        return Failure(Refusal("plan-unreadable", f"{path}: {error.strerror or error}"))
    command, table = run_option_table()
    return (
        read_plan(data, table)
        .bind(lambda plan: chosen_plan(plan, only))
        .bind(lambda plan: each(plan.arms, partial(_check_arm_values, command)).map(lambda _: plan))
    )


def _check_out(out: Path, resume: bool) -> Result[Path, Refusal]:
    if out.exists() and not out.is_dir():
        return Failure(Refusal("out-not-a-directory", f"{out} exists and is not a directory"))
    if out.is_dir() and any(out.iterdir()) and not resume:
        return Failure(Refusal("out-not-empty", f"{out} is not empty; --resume runs only what is missing there"))
    return Success(out)


def _run_files(outcome: Outcome) -> tuple[RunResult, tuple[tuple[str, bytes | None], ...]]:
    """The run's result and its files by name (``None``: no such file, one a resumed batch left is removed)."""
    if outcome.output is None:
        result = lost_result(outcome.identity, outcome.attempts)
        return result, (("result.json", result_document(result)),)
    output = outcome.output
    files = (
        ("events.jsonl", output.events), ("stderr.txt", output.stderr), ("diff.patch", output.diff),
        (RUN_PAGE, output.page), ("result.json", output.result),
    )  # fmt: skip
    return msgspec.json.decode(output.result, type=RunResult), files


def _write_run(root: ChildDir, outcome: Outcome) -> tuple[RunResult, list[Refusal]]:
    """The run's files under ``runs/<task>/<arm>/<n>/`` and its page (docs/eval.md#the-out-directory);
    its result, and each write that was refused."""
    result, files = _run_files(outcome)
    made = made_folder(root, run_directory(*outcome.identity))
    if isinstance(made, Failure):
        return result, [made.failure()]
    folder = made.unwrap()
    try:
        written = [replace_file(folder, name, data) if data is not None else remove_file(folder, name) for name, data in files]
    finally:
        folder.close()
    return result, [refused.failure() for refused in written if isinstance(refused, Failure)]


Pending: TypeAlias = tuple[list[PendingRun], dict[tuple[str, str, int], RunResult]]


def _pending(plan: Plan, plan_dir: Path, out: Path, resume: bool) -> Result[Pending, Refusal]:
    """The runs still to do, packers bound; and with ``--resume`` the results already complete.
    Every workspace and shipped file is checked here, before any run starts."""
    commits = {}
    for task in plan.tasks:
        commit = resolve_workspace(plan_dir, task)
        if isinstance(commit, Refusal):
            return Failure(commit)
        commits[task.id] = commit
    shipped = {}
    for arm in plan.arms:
        files = ship_arm(plan_dir, arm)
        if isinstance(files, Refusal):
            return Failure(files)
        shipped[arm.id] = files
    done = _complete_results(plan, out) if resume else {}
    pending = []
    archive = LastArchive()
    for task, arm, repeat in plan_runs(plan):
        identity = (task.id, arm.id, repeat)
        if identity in done:
            continue

        def pack(task: Task = task, arm: EvalArm = arm, repeat: int = repeat) -> RunInputs:
            workspace = archive(plan_dir, task, commits[task.id])
            return RunInputs(
                task=task.id, arm=arm.id, repeat=repeat, kind=arm.kind, options=arm.options, prompt=task.prompt,
                context=task.context, timeout=task.timeout, checks=task.checks, commit=commits[task.id],
                workspace=workspace.tree, repository=workspace.repository, shipped=shipped[arm.id],
            )

        pending.append(PendingRun(identity=identity, pack=pack))
    return Success((pending, done))


def _complete_results(plan: Plan, out: Path) -> dict[tuple[str, str, int], RunResult]:
    """``--resume``: the runs whose ``result.json`` in ``out`` is complete, read as regular files through no link."""
    root = existing_out(out)
    if root is None:
        return {}
    done = {}
    try:
        for task, arm, repeat in plan_runs(plan):
            identity = (task.id, arm.id, repeat)
            data = read_result_file(root, run_directory(*identity), "result.json")
            complete = read_result(data) if data is not None else None
            if complete is not None:
                done[identity] = complete
    finally:
        root.close()
    return done


def _ray(ray_address: str | None) -> Result[ModuleType | None, Refusal]:
    """The Ray module for ``--ray``, once a cluster at an address answers (``None`` without ``--ray``)."""
    if ray_address is None:
        return Success(None)
    ray = ray_module()
    if isinstance(ray, Refusal):
        return Failure(ray)
    unreachable = ray_reachable(ray_address)
    return Success(ray) if unreachable is None else Failure(unreachable)


Prepared: TypeAlias = tuple[ModuleType | None, Plan, Pending, ChildDir]


def _prepared(path: Path, out: Path, jobs: int, ray_address: str | None, resume: bool, only: tuple[str, ...]) -> Result[Prepared, Refusal]:
    """Everything checked before any run starts, the out directory made last and held by its descriptor."""
    return Result.do(
        (ray, plan, pending, root)
        for _ in (Failure(Refusal("usage", f"--jobs {jobs}: at least 1")) if jobs < 1 else Success(jobs))
        for ray in _ray(ray_address)
        for plan in _read_plan(path, only)
        for _ in _check_out(out, resume)
        for pending in _pending(plan, path.parent, out, resume)
        for root in open_out(out)
    )


def evaluate(plan_path: str, out_dir: str, jobs: int, ray_address: str | None, resume: bool, only: tuple[str, ...]) -> int:
    """The whole command; a refusal before any run starts is its one line and exit 2, and so is a file of
    the out directory that could not be written, each named as the batch goes on (docs/eval.md)."""
    prepared = _prepared(Path(plan_path), Path(out_dir), jobs, ray_address, resume, only)
    if isinstance(prepared, Failure):
        sys.stderr.write(refusal_line(prepared.failure()) + "\n")
        return REFUSAL_EXIT
    ray, plan, (pending, results), root = prepared.unwrap()
    try:
        return _carried_out(ray, ray_address, plan, (pending, results), root, jobs)
    finally:
        root.close()


def _carried_out(
    ray: ModuleType | None, ray_address: str | None, plan: Plan, pending: Pending, root: ChildDir, jobs: int
) -> int:
    """The runs carried out, each run's files written as it finishes, then the summary, report and table; the
    table to the stdout held before any run, which a Ray driver gives over to what Ray prints."""
    runs, results = pending
    table = sys.stdout
    outcomes: Iterator[Outcome] = (
        run_on_ray(ray, ray_address, runs, jobs) if ray is not None and ray_address is not None else run_locally(runs, jobs)
    )
    refused: list[Refusal] = []
    with Progress(planned=len(runs), jobs=jobs) as progress:
        for outcome in outcomes:
            result, refusals = _write_run(root, outcome)
            if outcome.output is None:
                sys.stderr.write(f"{PROGRAM}: {'/'.join(map(str, outcome.identity))} lost: {outcome.error}\n")
            _name_refused(refusals, refused)
            results[outcome.identity] = result
            progress.finished(result)
    ordered = [results[(task.id, arm.id, repeat)] for task, arm, repeat in plan_runs(plan)]
    paged = {identity for identity in results if is_regular(root, run_directory(*identity), RUN_PAGE)}
    tasks, arms = [task.id for task in plan.tasks], [arm.id for arm in plan.arms]
    summary = b"".join(result_document(result) + b"\n" for result in ordered)
    report = report_page(ordered, tasks, arms, paged).encode("utf-8")
    for name, data in (("summary.jsonl", summary), ("report.html", report)):
        written = replace_file(root, name, data)
        _name_refused([written.failure()] if isinstance(written, Failure) else [], refused)
    table.write(result_table(ordered, tasks, arms))
    table.flush()
    return REFUSAL_EXIT if refused else batch_exit(ordered)


def _name_refused(refusals: list[Refusal], refused: list[Refusal]) -> None:
    """Each refused write of the out directory as its stderr line, kept for the batch's exit."""
    for refusal in refusals:
        sys.stderr.write(refusal_line(refusal) + "\n")
    refused += refusals


class _EvalCommand(ClosedAtParse):
    program = PROGRAM


@click.command(cls=_EvalCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("plan", metavar="PLAN")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Where the runs, the summary and the report go.")
@click.option("--jobs", type=int, default=os.cpu_count() or 1, show_default="the CPU count", help="Runs at once.")
@click.option("--ray", "ray_address", metavar="ADDRESS", help="Run on this Ray cluster (auto: RAY_ADDRESS or local).")
@click.option("--resume", is_flag=True, help="Run only what has no complete result.json in DIR.")
@click.option("--only", multiple=True, metavar="TASK_OR_ARM", help="Only these tasks or arms (repeatable).")
@click.version_option(package_name="metaharness", prog_name=PROGRAM, message="%(prog)s %(version)s")
def eval_command(plan: str, out_dir: str, jobs: int, ray_address: str | None, resume: bool, only: tuple[str, ...]) -> int:
    """Run every task of PLAN on every arm, governed, and score them side by side."""
    return evaluate(plan, out_dir, jobs, ray_address, resume, only)


def run_eval_cli(args: Sequence[str]) -> int:
    """The command over ``args``: its exit, or 2 with one refusal line."""
    try:
        result = eval_command.main(list(args), prog_name=PROGRAM, standalone_mode=False)
    except click.exceptions.ClickException as error:
        sys.stderr.write(refusal_line(Refusal("usage", error.format_message())) + "\n")
        return REFUSAL_EXIT
    return result if isinstance(result, int) else 0


def main() -> NoReturn:
    """The ``metaharness-eval`` console script: never a traceback; a closed standard stream gets its
    stand-in first (docs/cli.md#closed-standard-streams)."""
    stand_in_closed_streams()
    try:
        code = run_eval_cli(sys.argv[1:])
    except KeyboardInterrupt:
        sys.stderr.write(refusal_line(Refusal("signalled", "SIGINT arrived before the evaluation finished")) + "\n")
        code = REFUSAL_EXIT
    except Exception as error:  # noqa: BLE001 - never a traceback, whatever failed
        sys.stderr.write(refusal_line(Refusal("internal-error", f"{type(error).__name__}: {error}")) + "\n")
        code = 3
    _end(code)


def _end(code: int) -> NoReturn:
    """Exit with ``code``. A driver that connected to Ray skips the interpreter's teardown once its
    streams are flushed: unwinding Ray's modules and native threads is ~0.25 s of nothing, and a
    connection to a running cluster left open is closed by the process's end, which the raylet takes
    as the job's end (docs/eval.md "Executors"). A stream that does not flush takes the ordinary exit,
    whose report and exit byte stay Python's; a closed one has nothing to flush."""
    if "ray" in sys.modules:
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:  # a standard stream closed at start is None
                    stream.flush()
        except (OSError, ValueError):
            sys.exit(code)
        os._exit(code)
    sys.exit(code)
