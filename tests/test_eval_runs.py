"""``metaharness-eval`` end to end: 3 tasks × 2 arms (the project's loop and the pinned Codex CLI,
each against a real ``b10x-emulator``) run as real governed processes, locally and on a real Ray
cluster this module starts on loopback; the summaries agree, a killed Ray worker's run is retried
and finishes, ``--resume`` runs only what is missing, a task past its timeout is ``timed-out``."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from eval_world import (
    EVAL,
    TASKS,
    arms,
    emulators,
    make_world,
    ray_cluster,
    run_eval,
    summary,
    without_timings,
    write_plan,
)
from helpers.silent_endpoint import silent_endpoint
from vendor_cli import PINS, pinned_cli

from metaharness.pure.budgets import EVAL_STOP_GRACE_S

pytestmark = pytest.mark.skipif(
    pinned_cli("codex") is None, reason=f"the pinned Codex CLI {PINS['codex']} is not installed (vendors/install.sh)"
)

TABLE = (
    "task          b10x  codex\n"
    "write-note    4/4   3/4\n"
    "leave-readme  2/3   1/3\n"
    "with-brief    2/2   2/2\n"
    "\n"
    "b10x: 8 pass / 1 fail\n"
    "codex: 6 pass / 3 fail\n"
)
TIMEOUT_S = 10
"""The timed-out task's timeout: past a loaded machine's start-up to the spawn (which took over 1 s under load)."""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """The workspace, HOME and frames, and emulators for both arms and for a slow b10x run."""
    root = make_world(tmp_path_factory.mktemp("eval"))
    with emulators("flat-write", "codex-patch", "slow") as urls:
        write_plan(root, arms(urls), TASKS)
        yield root, urls


@pytest.fixture(scope="module")
def local_out(world: tuple[Path, dict[str, str]]) -> tuple[Path, str, str, int]:
    """The plan run once with the local executor: (out dir, stdout, stderr, exit)."""
    root, _ = world
    done = run_eval(root, "plan.yaml", "--out", "local", "--jobs", "2")
    return root / "local", done.stdout, done.stderr, done.returncode


@pytest.fixture(scope="module")
def ray_address(world: tuple[Path, dict[str, str]]) -> Iterator[str]:
    """One local Ray cluster for this module's Ray tests."""
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[test,ray]')")
    root, _ = world
    (root / "ray-tmp").mkdir()
    with ray_cluster(root / "home", root / "ray-tmp") as address:
        yield address


def test_local_run_scores_every_cell(local_out: tuple[Path, str, str, int]) -> None:
    out, stdout, stderr, code = local_out
    assert code == 1, stderr
    assert stdout == TABLE
    results = summary(out)
    assert [(r["task"], r["arm"], r["repeat"]) for r in results] == [
        (task, arm, 1) for task in ("write-note", "leave-readme", "with-brief") for arm in ("b10x", "codex")
    ]
    assert {r["state"] for r in results} == {"finished"} and {r["attempts"] for r in results} == {1}
    codex_note = next(r for r in results if (r["task"], r["arm"]) == ("write-note", "codex"))
    assert codex_note["checks"][2] == {
        "id": "note-by-harness", "passed": False, "reason": 'note.md does not contain "harness"'
    }
    assert codex_note["census"]["allowed"] == 1 and codex_note["census"]["by_seam"] == {"hook": 1}
    assert len(stderr.splitlines()) == 6 and all(" checks, " in line for line in stderr.splitlines())


def test_each_run_keeps_its_stream_stderr_diff_result_and_page(
    world: tuple[Path, dict[str, str]], local_out: tuple[Path, str, str, int]
) -> None:
    root, _ = world
    out = local_out[0]
    run = out / "runs" / "write-note" / "b10x" / "1"
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "stream.closed" and events[-1]["reason"] == "completed"
    started = next(e for e in events if e["event"] == "session.started")
    assert started["cwd"].startswith(str(root / "tmp"))
    assert (run / "diff.patch").read_text().startswith("diff --git a/note.md b/note.md\nnew file mode 100644\n")
    assert "+written by the harness" in (run / "diff.patch").read_text()
    assert json.loads((run / "result.json").read_text()) == summary(out)[0]
    assert "<!DOCTYPE html>" in (run / "page.html").read_text() and (run / "stderr.txt").exists()
    assert not list((root / "tmp").iterdir()), "every workspace copy is removed after its run"
    report = (out / "report.html").read_text()
    assert '<a href="runs/write-note/codex/1/page.html">' in report and "<script" not in report
    assert "note-by-harness: note.md does not contain &quot;harness&quot;" in report


def test_ray_gives_the_same_summary(
    world: tuple[Path, dict[str, str]], local_out: tuple[Path, str, str, int], ray_address: str
) -> None:
    root, _ = world
    done = run_eval(root, "plan.yaml", "--out", "on-ray", "--jobs", "2", "--ray", ray_address)
    assert done.returncode == 1, done.stderr
    assert done.stdout == TABLE
    assert without_timings(summary(root / "on-ray")) == without_timings(summary(local_out[0]))
    assert (root / "on-ray" / "runs" / "with-brief" / "codex" / "1" / "page.html").is_file()


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _workers_running_a_run(address: str) -> Iterator[int]:
    """The pid of each worker of the Ray cluster at ``address`` (its raylet's child) seen with a governed
    run as its child; another test's cluster, running at the same time, is not looked at."""
    gcs = f":{address.rpartition(':')[2]}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            worker = _parent(int(entry.name))
            worker_words = Path(f"/proc/{worker}/cmdline").read_bytes()
            raylet_words = Path(f"/proc/{_parent(worker)}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if b"metaharness.shell" in words and b"run" in words and worker_words.startswith(b"ray::") and any(
            word.startswith(b"--gcs-address=") and word.endswith(gcs) for word in raylet_words
        ):
            yield worker


def _kill_workers_running_a_run(address: str, stop: threading.Event, killed: list[int], times: int) -> None:
    """SIGKILL each worker of the cluster at ``address`` seen with a governed run as its child, up to ``times``."""
    deadline = time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < deadline and len(killed) < times:
        worker = next((pid for pid in _workers_running_a_run(address) if pid not in killed), None)
        if worker is not None:
            os.kill(worker, signal.SIGKILL)
            killed.append(worker)
        stop.wait(0.05)


def slow_plan(root: Path, urls: dict[str, str], name: str) -> str:
    """One b10x run against the emulator's ``slow`` scenario (about four seconds of streamed text)."""
    slow = {"slow": {"kind": "b10x", "model": "b10x-emulated", "model-endpoint": urls["slow"], "decisions": "observe"}}
    task = {"id": "answer", "prompt": "Say something", "workspace": {"git": "repo", "ref": "HEAD"},
            "checks": [{"id": "completed", "event": {"event": "stream.closed", "reason": "completed"}}]}
    write_plan(root, slow, [task], name=name)
    return name


def killing(root: Path, plan: str, out: str, address: str, times: int) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_workers_running_a_run, args=(address, stop, killed, times))
    killer.start()
    try:
        done = run_eval(root, plan, "--out", out, "--jobs", "1", "--ray", address)
    finally:
        stop.set()
        killer.join()
    return done, killed


def test_a_killed_worker_is_retried_and_its_run_finishes(world: tuple[Path, dict[str, str]], ray_address: str) -> None:
    root, urls = world
    done, killed = killing(root, slow_plan(root, urls, "slow.yaml"), "killed", ray_address, times=1)
    assert len(killed) == 1, "no Ray worker was seen running a governed run"
    assert done.returncode == 0, done.stderr
    (result,) = summary(root / "killed")
    assert (result["state"], result["attempts"], result["checks"][0]["passed"]) == ("finished", 2, True)
    assert "attempt 2" in done.stderr


def test_a_run_whose_worker_dies_twice_is_lost_not_missing(world: tuple[Path, dict[str, str]], ray_address: str) -> None:
    root, urls = world
    done, killed = killing(root, slow_plan(root, urls, "slow.yaml"), "lost", ray_address, times=2)
    assert len(killed) == 2
    assert done.returncode == 3, done.stderr
    (result,) = summary(root / "lost")
    assert (result["state"], result["attempts"], result["checks"], result["exit"]) == ("lost", 2, [], None)
    assert "metaharness-eval: answer/slow/1 lost: " in done.stderr
    assert done.stdout.splitlines()[1].split() == ["answer", "0/0", "lost"]


def test_a_driver_on_a_running_cluster_ends_and_the_raylet_ends_its_job(
    world: tuple[Path, dict[str, str]], ray_address: str
) -> None:
    """``--ray HOST:PORT`` ends the driver without ``ray.shutdown``: the worker that ran its run (kept for
    the job while the driver lives) is ended by the raylet once the driver's process is gone."""
    root, urls = world
    (root / "tmp").mkdir(exist_ok=True)
    driver = subprocess.Popen(
        [str(EVAL), slow_plan(root, urls, "ended.yaml"), "--out", "ended", "--jobs", "1", "--ray", ray_address],
        env={"HOME": str(root / "home"), "PATH": os.environ["PATH"], "TMPDIR": str(root / "tmp")}, cwd=root,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )
    stop, deadline = threading.Event(), time.monotonic() + 120
    while (worker := next(_workers_running_a_run(ray_address), None)) is None and driver.poll() is None and time.monotonic() < deadline:
        stop.wait(0.05)
    assert worker is not None, "no Ray worker was seen running a governed run"
    worker_end = os.pidfd_open(worker)
    try:
        _, stderr = driver.communicate(timeout=120)
        assert driver.returncode == 0, stderr
        assert select.select([worker_end], [], [], 60)[0], "the job's worker outlived its driver by a minute"
    finally:
        os.close(worker_end)


ADOPTING_SUBREAPER = """
import ctypes, json, os, signal, subprocess, sys
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
with open(sys.argv[2], "wb") as stderr:
    code = subprocess.run(json.loads(sys.argv[1]), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=stderr, check=False).returncode
left = [int(pid) for task in os.listdir("/proc/self/task") for pid in open(f"/proc/self/task/{task}/children").read().split()]
print(json.dumps({"code": code, "left": {pid: open(f"/proc/{pid}/cmdline").read()[:60] for pid in left}}))
for pid in left:
    os.kill(pid, signal.SIGKILL)
"""


def test_a_driver_that_started_its_own_cluster_stops_it(world: tuple[Path, dict[str, str]]) -> None:
    """``--ray local`` has the driver start a cluster of its own, which only ``ray.shutdown`` stops: under a
    subreaper that adopts every orphan, no process of that cluster (alive or defunct) is left once the
    driver has exited (a driver ending without the shutdown left its raylet, agents and workers running)."""
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[test,ray]')")
    root, urls = world
    plan = write_plan(root, {"b10x": arms(urls)["b10x"]}, TASKS[:1], name="own-cluster.yaml")
    scratch = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # the cluster's sockets: AF_UNIX paths are short
    env = {"HOME": str(root / "home"), "PATH": os.environ["PATH"], "TMPDIR": scratch, "RAY_USAGE_STATS_ENABLED": "0"}
    argv = [str(EVAL), str(plan), "--out", str(root / "own-cluster"), "--jobs", "1", "--ray", "local"]
    stderr = root / "own-cluster.stderr"
    try:
        done = subprocess.run([sys.executable, "-c", ADOPTING_SUBREAPER, json.dumps(argv), str(stderr)], env=env,
                              cwd=root, capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert json.loads(done.stdout) == {"code": 0, "left": {}}, stderr.read_text()


def test_resume_runs_only_what_is_missing(
    world: tuple[Path, dict[str, str]], local_out: tuple[Path, str, str, int]
) -> None:
    root, _ = world
    resumed = root / "resumed"
    shutil.copytree(local_out[0], resumed)
    (resumed / "runs" / "leave-readme" / "codex" / "1" / "result.json").unlink()
    (resumed / "runs" / "with-brief" / "b10x" / "1" / "result.json").write_text('{"task": "with-brief"')
    refused = run_eval(root, "plan.yaml", "--out", "resumed")
    assert refused.returncode == 2
    assert refused.stderr.startswith("metaharness-eval: out-not-empty: ") and refused.stderr.count("\n") == 1
    done = run_eval(root, "plan.yaml", "--out", "resumed", "--resume")
    assert done.returncode == 1 and done.stdout == TABLE
    assert sorted(line.split(":")[0].split("] ")[1] for line in done.stderr.splitlines()) == [
        "leave-readme codex #1", "with-brief b10x #1"
    ]
    assert without_timings(summary(resumed)) == without_timings(summary(local_out[0]))


def test_a_run_past_its_timeout_is_timed_out_and_exits_3(world: tuple[Path, dict[str, str]]) -> None:
    """The one real-timer test of a task's timeout: against an endpoint that never answers, so the run is
    still in its turn at the timeout, and a timeout long enough that a loaded machine has spawned the
    harness by then (one that lands before the spawn leaves events.jsonl empty: docs/eval.md#one-run)."""
    root, _ = world
    with silent_endpoint() as base_url:
        silent = {"silent": {"kind": "b10x", "model": "b10x-emulated", "model-endpoint": base_url, "decisions": "observe"}}
        task = {"id": "answer", "prompt": "Say something", "workspace": {"git": "repo", "ref": "HEAD"},
                "timeout": TIMEOUT_S, "checks": [{"id": "finished", "exit": 0}]}
        write_plan(root, silent, [task], name="timeout.yaml")
        done = run_eval(root, "timeout.yaml", "--out", "timed-out")
    assert done.returncode == 3, done.stderr
    (result,) = summary(root / "timed-out")
    assert result["state"] == "timed-out"
    assert TIMEOUT_S * 1000 <= result["duration_ms"] < (TIMEOUT_S + EVAL_STOP_GRACE_S) * 1000, "SIGTERM ended it"
    assert done.stdout.splitlines()[1].split() == ["answer", "0/1", "timed-out"]
    events = (root / "timed-out" / "runs" / "answer" / "silent" / "1" / "events.jsonl").read_text().splitlines()
    assert json.loads(events[-1])["event"] == "stream.closed" and json.loads(events[-1])["reason"] == "killed"


def test_a_terminal_gets_a_progress_bar(world: tuple[Path, dict[str, str]]) -> None:
    """stderr on a real pty: the rich bar with done/planned and the running count, no per-run lines."""
    root, _ = world
    controller, terminal = pty.openpty()
    (root / "tmp").mkdir(exist_ok=True)
    process = subprocess.Popen(
        [str(EVAL), "plan.yaml", "--out", "on-a-terminal", "--only", "with-brief", "--only", "b10x"],
        cwd=root, stdout=subprocess.PIPE, stderr=terminal, stdin=subprocess.DEVNULL,
        env={"HOME": str(root / "home"), "PATH": os.environ["PATH"], "TMPDIR": str(root / "tmp"), "TERM": "xterm"},
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    stdout, _ = process.communicate(timeout=120)
    os.close(controller)
    assert process.returncode == 0, shown
    text = shown.decode(errors="replace")
    assert "1/1" in text and "running" in text and "━" in text and "[1/1]" not in text
    assert stdout.decode().splitlines()[-1] == "b10x: 2 pass / 0 fail"


SUBREAPER = """
import ctypes, json, os, subprocess, sys
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
codes = [subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False).returncode
         for argv in json.loads(sys.argv[1])]
left = [int(pid) for task in os.listdir("/proc/self/task")
        for pid in open(f"/proc/self/task/{task}/children").read().split()]
states = {pid: open(f"/proc/{pid}/stat").read().split(" (", 1)[1].replace(") ", " ", 1)[:40] for pid in left}
try:
    waited = os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    waited = None
print(json.dumps({"codes": codes, "left": states, "waited": waited}))
"""


def test_no_process_of_a_confined_batch_is_left_not_even_a_zombie(world: tuple[Path, dict[str, str]]) -> None:
    """A driver that adopts every orphan of its tree (a subreaper) runs confined b10x runs two at a time through
    ``metaharness-eval``, then ``doctor b10x`` (the substrate's trial and the view): afterwards it has no child
    at all, alive or defunct, so no ``bwrap`` (or anything else) was left for PID 1 to reap."""
    root, urls = world
    plan = write_plan(root, {"b10x": arms(urls)["b10x"]}, TASKS[:1], name="reaped.yaml", repeat=4)
    env = {"HOME": str(root / "home"), "PATH": os.environ["PATH"], "TMPDIR": str(root / "tmp")}
    argvs = [[str(EVAL), str(plan), "--out", str(root / "reaped"), "--jobs", "2"],
             [str(EVAL.parent / "metaharness"), "doctor", "b10x"]]  # fmt: skip
    done = subprocess.run([sys.executable, "-c", SUBREAPER, json.dumps(argvs)], env=env, cwd=root,
                          capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    report = json.loads(done.stdout)
    assert report == {"codes": [0, 0], "left": {}, "waited": None}, report
