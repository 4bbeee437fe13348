"""``b10x-harness run`` with ``--skills-dir``, ``--agents-dir``, ``--plugin-dir`` and ``--hooks``: the real
loop against the real emulator (docs/loop-extensions.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from loop_extensions import hook_program, hooks_file, plugin, skill
from loop_process import HARNESS, harness

WIRES = ["openai-responses", "anthropic-messages"]


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "ws"
    work.mkdir()
    (work / "README.md").write_text("hello harness\n")
    return work


@pytest.mark.parametrize("wire", WIRES)
def test_a_plugin_skill_is_offered_loaded_and_listed(tmp_path: Path, wire: str) -> None:
    work = workspace(tmp_path)
    run = harness("skill-load", wire, work, "--plugin-dir", str(plugin(tmp_path, "guide")), record_bodies=True)
    assert run.code == 0, run.stderr
    started = run.lines[0]
    assert started["skills"] == ["guide:planning"] and started["agents"] == ["guide:reviewer"]
    assert started["published_tools"][-1] == "skill" and started["operations"][-1] == "skill.load"
    requested = next(line for line in run.lines if line["kind"] == "tool-requested")
    assert requested == {"kind": "tool-requested", "call_id": requested["call_id"], "name": "skill",
                         "arguments": {"name": "guide:planning"}, "operation": "skill.load"}
    completed = next(line for line in run.lines if line["kind"] == "tool-completed")
    assert completed["failed"] is False and "approval-required" not in run.kinds()
    first = run.requests[0]
    assert "skill" in first["tool_names"]
    assert ("Skills available to you; load one with the skill tool before you follow it:\n"
            "- `guide:planning` — Plan before you write.\n") in first["instruction_text"]
    assert "Write the plan first, then the code." in json.dumps(run.requests[1]["body"])


def test_skill_names_first_wins_and_a_later_one_is_shadowed(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    skill(first, "style", "The house style.", "first body\n")
    skill(second, "style", "Another style.", "second body\n")
    skill(second, "tests", "How to test.", "test body\n")
    run = harness("skill-load", "openai-responses", workspace(tmp_path), "--skills-dir", str(first),
                  "--skills-dir", str(second), record_bodies=True)
    assert run.code == 0, run.stderr
    assert run.lines[0]["skills"] == ["style", "tests"]
    assert run.lines[1] == {"kind": "warning", "code": "skill-shadowed",
                            "message": "skill `style` is defined again and the first definition is kept"}
    assert "first body" in json.dumps(run.requests[1]["body"])


@pytest.mark.parametrize(
    ("layout", "reason"),
    [
        ("---\nname: x\n---\nbody", "frontmatter key `description` is required"),
        ("name: x\ndescription: y\n", "does not open with a `---` frontmatter fence"),
        ("---\nname: x\ndescription: y\nmodel: z\n---\n", "frontmatter key `model` is not one of name, description"),
        ("---\nname: x\ndescription: y\n", "has no closing `---` frontmatter fence"),
    ],
)
def test_a_malformed_skill_refuses_the_run_naming_the_file(tmp_path: Path, layout: str, reason: str) -> None:
    (tmp_path / "skills" / "x").mkdir(parents=True)
    path = tmp_path / "skills" / "x" / "SKILL.md"
    path.write_text(layout)
    run = harness("text", "openai-responses", workspace(tmp_path), "--skills-dir", str(tmp_path / "skills"))
    assert run.code == 1 and not run.requests
    assert run.lines == [{"kind": "refused", "reason": run.lines[0]["reason"]}]
    assert str(path) in run.lines[0]["reason"] and reason in run.lines[0]["reason"]


def test_a_skill_past_the_bound_or_not_utf8_refuses(tmp_path: Path) -> None:
    (tmp_path / "s" / "big").mkdir(parents=True)
    (tmp_path / "s" / "big" / "SKILL.md").write_bytes(b"---\nname: a\ndescription: b\n---\n" + b"x" * 262144)
    run = harness("text", "openai-responses", workspace(tmp_path), "--skills-dir", str(tmp_path / "s"))
    assert run.code == 1 and "is over the 262144 byte bound" in run.lines[0]["reason"]
    (tmp_path / "s" / "big" / "SKILL.md").write_bytes(b"---\nname: a\ndescription: \xff\n---\n")
    run = harness("text", "openai-responses", tmp_path / "ws", "--skills-dir", str(tmp_path / "s"))
    assert run.code == 1 and run.lines[0]["reason"].endswith("SKILL.md is not UTF-8")


@pytest.mark.parametrize(
    ("agent", "reason"),
    [
        ("---\nname: a\ndescription: b\ntools: Read, Fly\n---\n", "`tools` names `Fly`"),
        ("---\nname: a\ndescription: b\ntools:\n---\n", "`tools` must name at least one tool"),
    ],
)
def test_an_agent_with_unknown_or_no_tools_refuses(tmp_path: Path, agent: str, reason: str) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "a.md").write_text(agent)
    run = harness("text", "openai-responses", workspace(tmp_path), "--agents-dir", str(tmp_path / "agents"))
    assert run.code == 1 and reason in run.lines[0]["reason"]


def test_a_plugin_without_a_readable_manifest_refuses_naming_it(tmp_path: Path) -> None:
    (tmp_path / "p" / "skills").mkdir(parents=True)
    run = harness("text", "openai-responses", workspace(tmp_path), "--plugin-dir", str(tmp_path / "p"))
    manifest = tmp_path / "p" / ".claude-plugin" / "plugin.json"
    assert run.code == 1 and run.lines[0]["reason"].startswith(f"{manifest} cannot be read")
    manifest.parent.mkdir()
    manifest.write_text("[]")
    run = harness("text", "openai-responses", tmp_path / "ws", "--plugin-dir", str(tmp_path / "p"))
    assert run.lines[0]["reason"] == f"{manifest} has no `name` string (non-empty, without `:`)"


def test_without_skills_nothing_is_added(tmp_path: Path) -> None:
    run = harness("skill-load", "openai-responses", workspace(tmp_path))
    assert run.code == 0 and run.lines[0]["skills"] == [] and "skill" not in run.lines[0]["published_tools"]
    assert "Skills available" not in run.requests[0]["instruction_text"]
    assert "".join(line["text"] for line in run.lines if line["kind"] == "text-delta") == "no skill was offered"


@pytest.mark.parametrize("wire", WIRES)
def test_a_before_call_hook_blocks_with_its_reason_and_an_after_call_hook_notes(tmp_path: Path, wire: str) -> None:
    block = hook_program(tmp_path, "block", "print(json.dumps({'reason': 'no reads today'}))\nsys.exit(2)\n")
    note = hook_program(tmp_path, "note", "print(json.dumps({'note': 'the write was seen'}))\n")
    hooks = hooks_file(tmp_path, [
        {"on": "before-call", "tools": ["file_read"], "command": [sys.executable, block]},
        {"on": "after-call", "command": [sys.executable, note]},
    ])
    work = workspace(tmp_path)
    run = harness("hooked-calls", wire, work, "--hooks", hooks, "--yes", record_bodies=True)
    assert run.code == 0, run.stderr
    completed = [line for line in run.lines if line["kind"] == "tool-completed"]
    assert [line["failed"] for line in completed] == [True, False]
    assert (work / "note.md").read_text() == "written past the hooks\n"
    bodies = json.dumps([request["body"] for request in run.requests])
    assert "`file_read` was blocked by a hook: no reads today" in bodies
    assert "hook_notes" in bodies and "the write was seen" in bodies
    seen_before = [json.loads(line) for line in Path(block.replace(".py", ".seen")).read_text().splitlines()]
    assert seen_before == [{"on": "before-call", "call_id": completed[0]["call_id"], "name": "file_read",
                            "arguments": {"path": "README.md"}}]
    seen_after = [json.loads(line) for line in Path(note.replace(".py", ".seen")).read_text().splitlines()]
    assert [document["name"] for document in seen_after] == ["file_write"]
    assert not [line for line in run.lines if line["kind"] == "warning"]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("sys.exit(1)\n", "exited 1"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "was killed by a signal"),
        ("raise RuntimeError('crash')\n", "exited 1"),
    ],
)
def test_a_failing_before_call_hook_blocks_fail_closed(tmp_path: Path, body: str, why: str) -> None:
    failing = hook_program(tmp_path, "failing", body)
    hooks = hooks_file(tmp_path, [{"on": "before-call", "command": [sys.executable, failing]}])
    run = harness("flat-tool", "openai-responses", workspace(tmp_path), "--hooks", hooks, record_bodies=True)
    assert run.code == 0, run.stderr
    warning = next(line for line in run.lines if line["kind"] == "warning")
    assert warning["code"] == "hook-failed" and why in warning["message"]
    assert next(line for line in run.lines if line["kind"] == "tool-completed")["failed"] is True
    assert "`file_read` was blocked by a hook: the hook failed" in json.dumps(run.requests[1]["body"])


def test_a_before_call_hook_that_cannot_start_blocks(tmp_path: Path) -> None:
    hooks = hooks_file(tmp_path, [{"on": "before-call", "command": [str(tmp_path / "missing-program")]}])
    run = harness("flat-tool", "openai-responses", workspace(tmp_path), "--hooks", hooks)
    warning = next(line for line in run.lines if line["kind"] == "warning")
    assert warning["code"] == "hook-failed" and "could not start" in warning["message"]
    assert next(line for line in run.lines if line["kind"] == "tool-completed")["failed"] is True


def test_a_hook_runs_without_the_credential_variable_and_with_the_rest(tmp_path: Path) -> None:
    looked = hook_program(tmp_path, "looked", "import os\n"
                          "print(json.dumps({'note': os.environ.get('LOOP_TEST_KEY', 'absent') + ' '"
                          " + os.environ.get('LOOP_TEST_OTHER', 'absent')}))\n")  # fmt: skip
    hooks = hooks_file(tmp_path, [{"on": "after-call", "command": [sys.executable, looked]}])
    run = harness("flat-tool", "openai-responses", workspace(tmp_path), "--hooks", hooks, "--api-key-env",
                  "LOOP_TEST_KEY", record_bodies=True, env={"LOOP_TEST_KEY": "sk-test", "LOOP_TEST_OTHER": "kept"})
    assert run.code == 0, run.stderr
    assert "absent kept" in json.dumps(run.requests[1]["body"])


def test_a_hanging_before_call_hook_is_killed_at_30_s_and_blocks(tmp_path: Path) -> None:
    hanging = hook_program(tmp_path, "hanging", "import time\ntime.sleep(600)\n")
    hooks = hooks_file(tmp_path, [{"on": "before-call", "command": [sys.executable, hanging]}])
    run = harness("flat-tool", "openai-responses", workspace(tmp_path), "--hooks", hooks, timeout=120)
    warning = next(line for line in run.lines if line["kind"] == "warning")
    assert warning["code"] == "hook-failed" and "did not finish within 30 s" in warning["message"]
    assert next(line for line in run.lines if line["kind"] == "tool-completed")["failed"] is True
    assert run.code == 0


def test_a_stop_hook_continues_at_most_three_times(tmp_path: Path) -> None:
    again = hook_program(tmp_path, "again", "print(json.dumps({'reason': 'check your work again'}))\nsys.exit(2)\n")
    hooks = hooks_file(tmp_path, [{"on": "stop", "command": [sys.executable, again]}])
    run = harness("text", "anthropic-messages", workspace(tmp_path), "--hooks", hooks, record_bodies=True)
    assert run.code == 0, run.stderr
    assert run.kinds().count("turn-started") == 4 and run.lines[-1]["turns"] == 4
    assert run.lines[-2] == {"kind": "warning", "code": "stop-hook-exhausted",
                             "message": "a stop hook asked to continue after 3 continuations; the stop stands"}
    assert json.dumps(run.requests[3]["body"]).count("check your work again") == 3
    seen = [json.loads(line) for line in Path(again.replace(".py", ".seen")).read_text().splitlines()]
    assert seen[0] == {"on": "stop", "stop": {"kind": "completed"}, "turns": 1} and len(seen) == 4


def test_a_failing_stop_hook_lets_the_stop_stand(tmp_path: Path) -> None:
    failing = hook_program(tmp_path, "failing", "sys.exit(3)\n")
    hooks = hooks_file(tmp_path, [{"on": "stop", "command": [sys.executable, failing]}])
    run = harness("text", "openai-responses", workspace(tmp_path), "--hooks", hooks)
    assert run.code == 0 and run.lines[-1]["turns"] == 1
    assert run.lines[-2]["code"] == "hook-failed" and "exited 3" in run.lines[-2]["message"]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ('{"version":2,"hooks":[]}', 'must be {"version":1,"hooks":[…]} with no other key'),
        ('{"version":1,"hooks":[{"on":"later","command":["x"]}]}', 'hook 1 has `on` "later"'),
        ('{"version":1,"hooks":[{"on":"stop","command":[]}]}', "hook 1 needs `command`"),
        ('{"version":1,"hooks":[{"on":"stop","tools":["run"],"command":["x"]}]}', "hook 1 may name `tools`"),
        ("not json", "is not JSON"),
    ],
)
def test_a_hooks_file_of_another_shape_refuses(tmp_path: Path, document: str, reason: str) -> None:
    path = tmp_path / "hooks.json"
    path.write_text(document)
    run = harness("text", "openai-responses", workspace(tmp_path), "--hooks", str(path))
    assert run.code == 1 and not run.requests
    assert run.lines[0]["reason"].startswith(f"--hooks {path}") and reason in run.lines[0]["reason"]


def test_input_that_is_not_utf8_is_refused_before_start(tmp_path: Path) -> None:
    done = subprocess.run(
        [HARNESS, "run", "--json", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--input", b"\xff\xfe"],
        capture_output=True, timeout=60, check=False)
    assert done.returncode == 1
    assert done.stdout == b'{"kind":"refused","reason":"--input is not UTF-8 text; pass the task as UTF-8"}\n'
    assert done.stderr == b"error: --input is not UTF-8 text; pass the task as UTF-8\n"


def test_run_help_names_the_declared_but_not_built_flags() -> None:
    done = subprocess.run([HARNESS, "run", "--help"], capture_output=True, text=True, timeout=60, check=False)
    line = next(line.strip() for line in done.stdout.splitlines() if line.strip().startswith("Declared but not"))
    assert line == ("Declared but not built in this implementation: --toolchain --toolchain-spec --driver "
                    "--substrate --substrate-embedded --cgroup-root --output-schema --delegate")
    for flag in ("--hooks", "--plugin-dir", "--skills-dir", "--agents-dir"):
        assert flag in done.stdout and flag not in line


def test_a_blocked_call_is_never_asked_about(tmp_path: Path) -> None:
    """Before-call hooks run after the gates and before the approver: a blocked write is not asked."""
    block = hook_program(tmp_path, "block", "print(json.dumps({'reason': 'no writes'}))\nsys.exit(2)\n")
    hooks = hooks_file(tmp_path, [{"on": "before-call", "tools": ["file_write"], "command": [sys.executable, block]}])
    work = workspace(tmp_path)
    run = harness("hooked-calls", "openai-responses", work, "--hooks", hooks, "--approve", "caller")
    assert run.code == 0, run.stderr
    assert "approval-required" not in run.kinds() and not (work / "note.md").exists()
    assert [line["failed"] for line in run.lines if line["kind"] == "tool-completed"] == [False, True]


def test_an_unreadable_hooks_file_or_a_missing_directory_refuses(tmp_path: Path) -> None:
    work = workspace(tmp_path)
    run = harness("text", "openai-responses", work, "--hooks", str(tmp_path / "absent.json"))
    assert run.code == 1 and run.lines[0]["reason"] == f"--hooks {tmp_path / 'absent.json'} cannot be read: No such file or directory"
    for flag in ("--skills-dir", "--agents-dir", "--plugin-dir"):
        run = harness("text", "openai-responses", work, flag, str(tmp_path / "absent"))
        assert run.code == 1 and run.lines[0]["reason"] == f"{flag} {tmp_path / 'absent'} is not a directory"
        assert not run.requests


def test_app_server_refuses_a_tool_answer_timeout_below_1() -> None:
    done = subprocess.run([HARNESS, "app-server", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                           "--tool-answer-timeout-ms", "0"], capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (1, b"error: --tool-answer-timeout-ms must be at least 1; got 0\n")


def test_run_help_imports_no_http_client_or_loop() -> None:
    """metaharness reads ``run --help`` before the spawn when a run passes an extension flag, so the
    help answers without importing the loop's runner, the bridge or the HTTP client."""
    done = subprocess.run([HARNESS, "run", "--help"], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    modules = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert done.returncode == 0 and "metaharness.shell.loop.command" in modules
    assert not {m for m in modules if m.split(".")[0] in ("httpx", "httpcore")}
    assert not modules & {"metaharness.shell.loop.runner", "metaharness.shell.loop.app_server"}
