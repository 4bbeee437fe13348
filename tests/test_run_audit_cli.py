"""``--hermetic``, ``--audit``, ``--spec``/``--auditor`` and ``--retain-dir`` on every kind, through the
``metaharness`` console script (docs/cli.md#run; docs/hermetic.md#auditor, #audit-report, #audited-exit;
docs/events.md#wind-up-and-signals, docs/hermetic.md#rows, #working-directory, #hermetic-modes): one wind-up for
all three.

b10x runs the project's loop, claude and codex the pinned vendor CLIs, all against ``b10x-emulator``;
the auditor and the unk-exit cases use a stand-in ``claude`` (a script on the child's PATH that writes
an opening and a terminal record), so the verdict rests on facts the test chose.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from governed_b10x import LOOP, METAHARNESS
from helpers.emulator import running_emulator
from vendor_cli import pinned_cli

from metaharness.pure.environment import path_floor
from metaharness.pure.events import read_event

PINNED = {"claude": "2.1.332", "codex": "0.171.0"}
SCENARIO = {"b10x": "flat-tool", "claude": "claude-write", "codex": "codex-patch"}
TRANSCRIPT = {"b10x": "loop.jsonl", "claude": "transcript.jsonl", "codex": "rollout.jsonl"}


KINDS = [
    pytest.param("b10x"),
    *(
        pytest.param(kind, marks=pytest.mark.skipif(pinned_cli(kind) is None, reason=f"the pinned {kind} is not installed"))
        for kind in ("claude", "codex")
    ),
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME whose ``.local/bin`` links the project's loop, ahead of the system directories of the
    child's PATH floor; the vendor CLIs are found there as installed."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    for kind in ("claude", "codex"):
        found = shutil.which(kind, path=path_floor(dict(os.environ)))
        if found is not None:
            (home / ".local" / "bin" / kind).symlink_to(found)
    return home


def metaharness(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    return subprocess.run(
        [str(METAHARNESS), *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=180, check=False
    )


@pytest.fixture
def endpoint(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[str]]]:
    """The kind under test (the test's ``kind`` parameter) with the emulator serving its scenario;
    yields (kind, the options that point the run at it)."""
    kind = request.getfixturevalue("kind")
    with running_emulator("--scenario", SCENARIO[kind]) as (base_url, _):
        root = base_url if kind == "b10x" else base_url.removesuffix("/v1")
        model = ["--model", "b10x-emulated"] if kind == "b10x" else ["--credentials", "none"]
        yield kind, ["-p", "write the note", "--decisions", "observe", "--model-endpoint", root, *model]


def events_of(done: subprocess.CompletedProcess[bytes]) -> list[dict]:
    lines = done.stdout.splitlines()
    for number, line in enumerate(lines, start=1):
        assert read_event(line).unwrap().seq == number
    return [json.loads(line) for line in lines]


def report_row(stderr: bytes, row: str) -> str:
    (line,) = [line for line in stderr.decode().splitlines() if line.startswith(f"  {row.ljust(4)} ")]
    return line


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello harness\n")
    return work


@pytest.mark.parametrize("kind", KINDS)
def test_hermetic_strict_on_an_operator_cwd_exits_1_with_control_verdict_gap(
    home: Path, tmp_path: Path, endpoint: tuple[str, list[str]], kind: str
) -> None:
    work = workspace(tmp_path)
    done = metaharness(home, "run", kind, *endpoint[1], "--cwd", str(work), "--hermetic", "strict")
    started = next(e for e in events_of(done) if e["event"] == "session.started")
    assert started["hermetic"]["mode"] == "strict"
    assert [row["row"] for row in started["hermetic"]["unavailable"] if row["row"] == "H7"] == ["H7"]
    assert report_row(done.stderr, "H7").startswith("  H7   gap gating   record the working directory is ours")
    closing = done.stderr.decode().splitlines()[-3:]
    assert closing[1:] == ["control verdict: gap", "audit verdict: gap (exit 1)"], done.stderr
    assert done.returncode == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_declared_scratch_copy_reads_h7_declared_and_ok(
    home: Path, tmp_path: Path, endpoint: tuple[str, list[str]], kind: str
) -> None:
    copy = workspace(tmp_path)
    done = metaharness(home, "run", kind, *endpoint[1], "--cwd", str(copy), "--scratch-cwd", "--hermetic")
    started = next(e for e in events_of(done) if e["event"] == "session.started")
    assert [row["row"] for row in started["hermetic"]["declared"]] == ["H7"]
    h7 = report_row(done.stderr, "H7")
    assert h7.startswith("  H7   ok  gating   record the working directory is ours — declared by the embedder")
    assert f"is the planned {os.path.realpath(copy)}" in h7
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith("hermetic verdict") and not [line for line in lines if line.startswith("child exit:")]
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_retain_dir_keeps_the_raw_record(
    home: Path, tmp_path: Path, endpoint: tuple[str, list[str]], kind: str
) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    done = metaharness(home, "run", kind, *endpoint[1], "--cwd", str(workspace(tmp_path)), "--retain-dir", str(kept))
    events = events_of(done)
    assert done.returncode == 0, done.stderr
    record = (kept / events[0]["run"] / TRANSCRIPT[kind]).read_bytes()
    assert record.count(b"\n") >= 2
    assert not [e for e in events if e.get("code") == "RETAIN_FAILED"]


def stand_in_claude(home: Path, *, silent: bool) -> None:
    """``claude`` on the child's PATH: it answers ``--version`` with the pin and otherwise writes an
    opening record (silent on plugins and MCP servers when ``silent``) and a success record, exit 0."""
    script = home / ".local" / "bin" / "claude"
    script.unlink(missing_ok=True)
    script.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            f"""
            import json, os, sys
            if sys.argv[1:] == ["--version"]:
                print("{PINNED['claude']} (Claude Code)")
                sys.exit(0)
            init = {{"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": "s-1", "tools": ["Read"],
                     "model": "m", "permissionMode": "default", "apiKeySource": "none",
                     "claude_code_version": "{PINNED['claude']}", "output_style": "default", "agents": [],
                     "skills": [], "slash_commands": []}}
            if not {silent}:
                init.update(plugins=[], mcp_servers=[])
            result = {{"type": "result", "subtype": "success", "is_error": False, "session_id": "s-1",
                       "result": "done", "num_turns": 1, "stop_reason": "end_turn"}}
            for record in (init, result):
                sys.stdout.write(json.dumps(record) + "\\n")
            """
        )
    )
    script.chmod(0o755)


def auditor_script(tmp_path: Path, exit_code: int, rows: list[dict]) -> Path:
    """An auditor that records its argv beside itself, prints ``rows`` and one other line, and exits."""
    script = tmp_path / "auditor"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(tmp_path / 'auditor.argv')!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
        f"print('reading the transcript')\n"
        + "".join(f"print({json.dumps(json.dumps(row))})\n" for row in rows)
        + f"sys.exit({exit_code})\n"
    )
    script.chmod(0o755)
    return script


def test_a_harness_silent_on_its_plugins_and_mcp_servers_reads_unk_and_exits_3(home: Path) -> None:
    stand_in_claude(home, silent=True)
    done = metaharness(home, "run", "claude", "-p", "hi", "--credentials", "none", "--decisions", "observe", "--audit")
    assert report_row(done.stderr, "H1a").startswith("  H1a  unk gating ")
    assert report_row(done.stderr, "H5").startswith("  H5   unk gating ")
    assert done.stderr.decode().splitlines()[-3:] == [
        "child exit: 0", "control verdict: unk", "audit verdict: no verdict (exit 3)"
    ]
    assert done.returncode == 3


@pytest.mark.parametrize(
    ("exit_code", "closing", "code"),
    [(0, "audit verdict: ok (exit 0)", 0), (1, "audit verdict: gap (exit 1)", 1), (3, "audit verdict: no verdict (exit 3)", 3)],
)
def test_the_auditor_runs_over_the_transcript_and_its_exit_decides(
    home: Path, tmp_path: Path, exit_code: int, closing: str, code: int
) -> None:
    stand_in_claude(home, silent=False)
    spec = tmp_path / "spec.md"
    spec.write_text("# what the run must do\n")
    auditor = auditor_script(tmp_path, exit_code, [{"row": "A1", "verdict": "ok", "detail": "the note is there"}])
    done = metaharness(
        home, "run", "claude", "-p", "hi", "--credentials", "none", "--decisions", "observe", "--audit",
        "--spec", str(spec), "--auditor", str(auditor), "--", "--strict",
    )  # fmt: skip
    lines = done.stderr.decode().splitlines()
    assert f'auditor ["{auditor}"]: exit {exit_code}, 1 verdict rows' in lines
    assert lines[-2:] == ["control verdict: ok", closing], done.stderr
    argv = json.loads((tmp_path / "auditor.argv").read_text())
    assert argv[:2] == ["--spec", str(spec)] and argv[2] == "--transcript" and argv[4:] == ["--strict"]
    assert argv[3].endswith("/transcript.jsonl")
    assert done.returncode == code


def test_an_auditor_without_verdict_rows_is_refused_after_the_session(home: Path, tmp_path: Path) -> None:
    stand_in_claude(home, silent=False)
    spec = tmp_path / "spec.md"
    spec.write_text("# spec\n")
    auditor = auditor_script(tmp_path, 0, [])
    done = metaharness(
        home, "run", "claude", "-p", "hi", "--credentials", "none", "--decisions", "observe", "--hermetic", "strict",
        "--spec", str(spec), "--auditor", str(auditor),
    )  # fmt: skip
    lines = done.stderr.decode().splitlines()
    assert next(line for line in lines if line.startswith("metaharness: ")).startswith("metaharness: no-verdict-rows: ")
    assert lines[-1] == "audit verdict: refused (exit 2)"
    assert done.returncode == 2


def test_a_spec_changed_during_the_session_is_refused_at_audit_time(home: Path, tmp_path: Path) -> None:
    """The stand-in rewrites the spec while it runs (unconfined: a confined child cannot reach it); the
    re-check after the session sees another sha256."""
    stand_in_claude(home, silent=False)
    spec = tmp_path / "spec.md"
    spec.write_text("# spec\n")
    script = home / ".local" / "bin" / "claude"
    script.write_text(script.read_text().replace("for record in", f"open({str(spec)!r}, 'a').write('x')\nfor record in"))
    auditor = auditor_script(tmp_path, 0, [{"row": "A1", "verdict": "ok", "detail": "fine"}])
    done = metaharness(
        home, "run", "claude", "-p", "hi", "--credentials", "none", "--decisions", "observe", "--audit",
        "--spec", str(spec), "--auditor", str(auditor), "--confine", "off",
    )  # fmt: skip
    assert any(line.startswith("metaharness: spec-unreadable: ") for line in done.stderr.decode().splitlines())
    assert not (tmp_path / "auditor.argv").exists()
    assert done.returncode == 2
