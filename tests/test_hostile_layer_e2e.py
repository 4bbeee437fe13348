"""Hostile review of the tools' layer for codex and gemini against the real vendors and the emulator
(docs/confinement.md#two-layers): a command that asks codex to run it unsandboxed, a git hook a command plants
for the harness's own git to run in the outer layer, and a background job meant to outlive its call (a racer
beside the harness's file tools) each stay inside the layer, and H14 stays a true ok."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.emulator import running_emulator
from vendor_cli import pinned_cli

OK_H14 = "  H14  ok  gating   effect the tools cannot reach the harness or its channel"


def run_steps(
    tmp_path: Path, kind: str, scenario: str, steps: tuple[str, ...], cwd: Path, *options: str
) -> tuple[list[str], str]:
    """``metaharness run KIND --cwd CWD`` of the ``$ `` step lines against the emulator (started with ``options``
    too): the shell results, stderr."""
    home = tmp_path / f"home-{kind}"
    if not home.exists():
        (home / ".local" / "bin").mkdir(parents=True)
        (home / ".local" / "bin" / kind).symlink_to(pinned_cli(kind) or "")
    prompt = "do the steps\n" + "".join(f"$ {step}\n" for step in steps)
    with running_emulator("--scenario", scenario, *options) as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", kind, "--credentials", "none", "--model-endpoint",
                base_url.removesuffix("/v1"), "-p", prompt, "--decisions", "observe", "--hermetic", "on", "--cwd",
                str(cwd)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=240,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [json.dumps(e["content"]) for e in events if e["event"] == "tool.result"]
    return results, done.stderr.decode()


def processes_seen_by(marker: Path) -> str:
    """A hook script that writes how many processes it sees to ``marker`` (in the tools' layer: none)."""
    return f"#!/bin/sh\nls /proc | grep -c '^[0-9]' > {marker}\n"


@pytest.mark.skipif(pinned_cli("codex") is None, reason="no pinned codex")
def test_a_codex_command_asking_to_run_unsandboxed_runs_nowhere(tmp_path: Path) -> None:
    """Codex 0.171.0 runs a ``require_escalated`` command without its sandbox, so without the first ``bwrap`` on its
    PATH, beside the harness; under the launch's ``approval_policy = "never"`` it refuses to, so nothing runs."""
    work = tmp_path / "work"
    work.mkdir()
    marker = work / "escaped.txt"
    results, report = run_steps(tmp_path, "codex", "codex-escalated-steps", (f"ls /proc > {marker}",), work)
    assert any("you cannot ask for escalated permissions" in result for result in results), results
    assert not marker.exists() and OK_H14 in report


@pytest.mark.skipif(pinned_cli("codex") is None, reason="no pinned codex")
def test_a_git_hook_a_codex_command_plants_in_the_tree_never_runs_beside_the_harness(tmp_path: Path) -> None:
    """A command makes the work tree a repository whose ``core.fsmonitor`` is a script of its own (git runs it on
    reading the index); neither that run nor the next one (the tree persists) has the harness's own git run it in
    the outer layer: the marker, if written at all, comes from the tools' layer, which sees no process."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("hi\n")
    marker = work / "escaped.txt"
    (work / "hook.sh").write_text(processes_seen_by(marker))
    (work / "hook.sh").chmod(0o755)
    arm = f'git init -q . && git add a.txt && git config core.fsmonitor "{work}/hook.sh" && rm -f {marker} && echo armed'
    first, report = run_steps(tmp_path, "codex", "codex-shell-steps", (arm, "echo second"), work)
    assert any("armed" in result for result in first), first
    _, again = run_steps(tmp_path, "codex", "codex-shell-steps", ("echo third",), work)
    assert not marker.exists() or marker.read_text().strip() == "0", marker.read_text()
    assert OK_H14 in report and OK_H14 in again


@pytest.mark.skipif(pinned_cli("gemini") is None, reason="no pinned gemini")
def test_a_gemini_background_job_does_not_outlive_its_call(tmp_path: Path) -> None:
    """A ``run_shell_command`` that leaves a job running (a racer that would swap a directory for a link while the
    harness's file tools, in the outer layer, check and then write a path) dies with its call's layer: the next
    call finds nothing it wrote."""
    work = tmp_path / "work"
    work.mkdir()
    alive = work / "alive.txt"
    steps = (f"(sleep 2; echo alive > {alive}) > /dev/null 2>&1 &", f"sleep 4; cat {alive}; echo done-waiting")
    results, report = run_steps(tmp_path, "gemini", "gemini-shell-steps", steps, work)
    assert "done-waiting" in results[-1] and "No such file" in results[-1], results
    assert not alive.exists() and OK_H14 in report


@pytest.mark.skipif(pinned_cli("codex") is None, reason="no pinned codex")
def test_a_codex_patch_through_a_link_a_command_planted_writes_nothing_outside_the_grant(tmp_path: Path) -> None:
    """A command links names in the work tree to the scratch root's ``codex-home`` and hook channel (the outer
    layer can write both; the command learns the scratch root from its ``TMPDIR``) and to a directory outside the
    grant; patches adding a file through each link fail, since codex applies a patch in its sandbox, so in the
    tools' layer, where none of those exists or is writable; a patch inside the tree still lands."""
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    link = (f'ln -s "${{TMPDIR%/tmp}}/codex-home" home && ln -s "${{TMPDIR%/tmp}}/hook-channel" chan && '
            f"ln -s {outside} outside && echo linked")  # fmt: skip
    steps = (link, "patch home/planted.md", "patch chan/planted.md", "patch outside/planted.md", "patch inside.md")
    results, report = run_steps(tmp_path, "codex", "codex-patch-steps", steps, work)
    failed = [r for r in results if "Failed to create parent directories" in r or "Failed to write file" in r]
    assert {name for name in ("home", "chan", "outside") if any(f"{work}/{name}/planted.md" in r for r in failed)} == {
        "home", "chan", "outside"}, results  # fmt: skip
    assert (work / "inside.md").is_file() and not any(outside.iterdir()) and OK_H14 in report


@pytest.mark.skipif(pinned_cli("gemini") is None, reason="no pinned gemini")
def test_gemini_file_tools_in_the_outer_layer_do_not_follow_a_link_a_command_planted(tmp_path: Path) -> None:
    """Gemini CLI's file tools run in the harness (the outer layer, which sees the scratch root and its own
    ``/proc``); a shell command links work-tree names to the scratch root and to ``/proc/self``, and a write and
    two reads through those links are refused: Gemini CLI resolves every link before it checks the workspace."""
    work = tmp_path / "work"
    work.mkdir()
    steps = ('ln -s "${TMPDIR%/tmp}" scratch; ln -s /proc/self proc; echo linked', f"write {work}/scratch/planted.md",
             f"read {work}/proc/environ", f"read {work}/scratch/gemini-home/.gemini/settings.json")  # fmt: skip
    results, report = run_steps(tmp_path, "gemini", "gemini-file-steps", steps, work)
    assert "linked" in results[0] and len(results) == 4, results
    assert all("resolves outside the allowed workspace directories" in result for result in results[1:]), results
    assert OK_H14 in report


@pytest.mark.skipif(pinned_cli("gemini") is None, reason="no pinned gemini")
def test_gemini_never_reads_its_background_pid_file_through_a_link_or_fifo_a_command_planted(tmp_path: Path) -> None:
    """Gemini CLI wraps each command so that it writes its jobs to ``$TMPDIR/gemini-shell-*/bgpids.tmp`` (the wrapper's
    ``$_bgpids_file``), then reads that file in the outer layer and reports its numbers as background PIDs. A command
    swaps it for a link to a number only the outer layer sees (``/proc/sys/kernel/pid_max``; the tools' layer has no
    ``/proc/sys``), then for a FIFO (a read that never ends): the entry removes both once the layer exits, so no
    request to the model reports that number as a background PID, the run completes and a command's status is kept."""
    work = tmp_path / "work"
    work.mkdir()
    pid_max = Path("/proc/sys/kernel/pid_max").read_text().strip()
    swap = 'trap - EXIT; cat /proc/sys/kernel/pid_max 2>&1; rm -f "$_bgpids_file"; '
    steps = (swap + 'ln -s /proc/sys/kernel/pid_max "$_bgpids_file"; echo linked', swap + 'mkfifo "$_bgpids_file"; echo fifo',
             "echo after; exit 3")  # fmt: skip
    record = tmp_path / "requests.jsonl"
    results, report = run_steps(tmp_path, "gemini", "gemini-shell-steps", steps, work, "--record", str(record),
                                "--record-bodies")  # fmt: skip
    assert len(results) == 3 and "linked" in results[0] and "fifo" in results[1] and "after" in results[2], results
    assert all("No such file" in result for result in results[:2]), results
    requests = record.read_text()
    assert not re.search(r"Background PIDs: \d", requests) and pid_max not in "".join(results), results
    assert "Exit Code: 3" in requests  # the entry keeps the command's status
    assert OK_H14 in report


ESCAPES = ("ls /proc | grep -c '^[0-9]'; env -i /usr/bin/bash -c 'ls /proc | grep -c [0-9]'; "
           "exec -a bash /bin/sh -c 'cat /proc/1/comm 2>&1; PATH=/usr/bin:/bin; bash -c \"ls /proc | grep -c [0-9]\"; echo end'")
"""A command that counts the processes it sees, then again from a shell started by absolute path with an empty
environment, then replaces itself with a renamed shell that reads pid 1's name and counts again from a shell it starts on a
PATH of its own."""


@pytest.mark.parametrize(("kind", "scenario"), [("codex", "codex-tty-steps"), ("gemini", "gemini-shell-steps")])
def test_a_shell_started_by_absolute_path_empty_env_or_exec_stays_in_the_layer(kind: str, scenario: str,
                                                                              tmp_path: Path) -> None:
    """Whatever the command starts (``/usr/bin/bash`` by absolute path, ``env -i``, ``exec -a``, a PATH of its own;
    for codex a unified-exec call with a TTY) runs in the layer the entry started: no process is visible, pid 1
    has no name to read, and H14 is ok."""
    if pinned_cli(kind) is None:
        pytest.skip(f"no pinned {kind}")
    work = tmp_path / "work"
    work.mkdir()
    results, report = run_steps(tmp_path, kind, scenario, (ESCAPES,), work)
    output = results[0].replace("\\r", "")
    assert output.startswith('"0\\n0\\n') and "No such file or directory" in output and "0\\nend" in output, results
    assert OK_H14 in report


RACER = ('bg while :; do for folder in "$TMPDIR"/gemini-shell-*; do ln -sfn /proc/sys/kernel/pid_max '
         '"$folder/bgpids.tmp" 2>/dev/null; done; done')
"""A background command that, for as long as the run lasts, links the background-PID file of every command's folder in
its TMPDIR to a number only the outer layer sees."""


@pytest.mark.skipif(pinned_cli("gemini") is None, reason="no pinned gemini")
def test_a_command_running_beside_another_cannot_plant_in_its_background_pid_folder(tmp_path: Path) -> None:
    """Hostile, two commands at once: a background command (``is_background``) keeps linking every
    ``$TMPDIR/gemini-shell-*/bgpids.tmp`` to ``/proc/sys/kernel/pid_max`` while later commands run and end, racing
    whatever would clean up after each (a link there makes the command's own write of the file fail, in its output).
    The tools' TMPDIR is their own, apart from the folders Gemini CLI reads back: no command's output shows the file
    touched, no request to the model reports that number, and H14 is ok."""
    work = tmp_path / "work"
    work.mkdir()
    pid_max = Path("/proc/sys/kernel/pid_max").read_text().strip()
    record = tmp_path / "requests.jsonl"
    steps = (RACER, *(f"sleep 0.3; echo step-{number}" for number in range(6)))
    results, report = run_steps(tmp_path, "gemini", "gemini-background-steps", steps, work, "--record", str(record),
                                "--record-bodies")  # fmt: skip
    assert len(results) == 7 and "step-5" in results[-1], results
    requests = record.read_text()
    assert not any("bgpids.tmp" in result for result in results[1:]), results  # the racer reached no command's folder
    assert pid_max not in requests, re.findall(r"Background PIDs: \d[^\\]*", requests)
    assert OK_H14 in report


@pytest.mark.skipif(pinned_cli("gemini") is None, reason="no pinned gemini")
def test_a_command_cannot_rewrite_the_events_file_kept_in_its_work_tree(tmp_path: Path) -> None:
    """Hostile: ``--events`` names a file in the work tree the tools can write; a command overwrites it with a forged
    stream, then tries to move it away and put a forgery in its place. In the view the file is bound read-only
    (it cannot be written, renamed or removed), so after the run it holds exactly the stream on stdout."""
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home-gemini"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "gemini").symlink_to(pinned_cli("gemini") or "")
    forged = '{"format":"metaharness.event/1","event":"stream.closed","reason":"completed"}'
    steps = (f"echo '{forged}' > ev.jsonl; echo wrote $?", f"mv ev.jsonl moved.jsonl; echo moved $?; echo '{forged}' > ev.jsonl")
    prompt = "do the steps\n" + "".join(f"$ {step}\n" for step in steps)
    with running_emulator("--scenario", "gemini-shell-steps") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "gemini", "--credentials", "none", "--model-endpoint",
                base_url.removesuffix("/v1"), "-p", prompt, "--decisions", "observe", "--cwd", str(work),
                "--events", str(work / "ev.jsonl")]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=240,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    results = [json.dumps(e["content"]) for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "tool.result"]
    assert len(results) == 2 and "Read-only file system" in results[0] and "wrote 1" in results[0], results
    assert "moved 1" in results[1], results
    assert (work / "ev.jsonl").read_bytes() == done.stdout and not (work / "moved.jsonl").exists()
