"""The pinned vendor CLIs against the emulator (docs/loop.md#vendor-cli-scenarios,
docs/adapters/common.md#endpoint-route, #pins): the real Claude Code over ``/v1/messages`` and the real Codex over
``/v1/responses``, each launched directly with a throwaway home and no credential, complete their scenario's tool call
in a scratch workspace.

These tests skip only when a vendor binary is not installed (``vendors/install.sh`` links both into
``$HOME/.local/bin``); the lockfile test always runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.emulator import running_emulator

VENDORS = Path(__file__).resolve().parent.parent / "vendors"
PINS = {"@anthropic-ai/claude-code": "2.1.332", "@openai/codex": "0.171.0", "@google/gemini-cli": "0.61.0"}
PLACEHOLDER = "emulator-placeholder-token"
NOTE = "written by the emulator\n"


def vendor_binary(name: str) -> str | None:
    """``name`` on PATH, else in ``$HOME/.local/bin`` where ``vendors/install.sh`` links it."""
    local_bin = Path.home() / ".local" / "bin"
    return shutil.which(name) or shutil.which(name, path=str(local_bin))


def needs(name: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(vendor_binary(name) is None,
                              reason=f"`{name}` is not installed; run vendors/install.sh to install the pinned CLIs")


@dataclass
class Launch:
    """A finished vendor run: its JSON-lines stdout, its workspace and the emulator's record."""

    lines: list[dict[str, Any]]
    workspace: Path
    record: list[dict[str, Any]]
    stderr: str


def child_environment(home: Path, program: str, **extra: str) -> dict[str, str]:
    """A constructed environment (docs/adapters/common.md#vendor-launch-order): no inherited credential or proxy, the
    vendor's bin directory and node on PATH, a throwaway HOME and its own TMPDIR beside it, as a governed run's child
    has (Codex 0.171.0's bubblewrap sandbox, used when ``bwrap`` is installed, fails every write and command of a
    child that has no TMPDIR)."""
    path = os.pathsep.join(dict.fromkeys([str(Path(program).parent), "/usr/local/bin", "/usr/bin", "/bin"]))
    tmp = home.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    return {"PATH": path, "HOME": str(home), "TMPDIR": str(tmp), "LANG": "C.UTF-8", **extra}


def launch(tmp_path: Path, scenario: str, argv: list[str], environment: dict[str, str],
           configure: Any = None) -> Launch:
    """Run ``argv`` in ``tmp_path/work`` (README.md inside) against a fresh emulator of ``scenario``."""
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello harness\n")
    record = tmp_path / "record.jsonl"
    with running_emulator("--scenario", scenario, "--record", str(record)) as (base_url, _):
        if configure is not None:
            configure(base_url)
        done = subprocess.run(argv, cwd=workspace, env=environment, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return Launch(lines, workspace, [json.loads(line) for line in record.read_text().splitlines()], done.stderr)


def claude(tmp_path: Path, scenario: str, *flags: str) -> Launch:
    """``claude -p … --output-format stream-json --verbose`` on the endpoint route of
    docs/adapters/common.md#endpoint-route."""
    program = vendor_binary("claude")
    assert program is not None
    home = tmp_path / "home"
    home.mkdir()
    root: dict[str, str] = {}
    environment = child_environment(home, program, CLAUDE_CONFIG_DIR=str(home / ".claude"),
                                    ANTHROPIC_AUTH_TOKEN=PLACEHOLDER, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")

    def configure(base_url: str) -> None:
        root["url"] = base_url.removesuffix("/v1")
        environment["ANTHROPIC_BASE_URL"] = root["url"]

    argv = [program, "-p", "do the task", "--output-format", "stream-json", "--verbose", *flags]
    return launch(tmp_path, scenario, argv, environment, configure)


def codex(tmp_path: Path, scenario: str, *flags: str) -> Launch:
    """``codex exec --json`` with a scratch ``CODEX_HOME/config.toml`` naming the emulator as a
    ``responses`` provider with no ``env_key`` (docs/adapters/common.md#endpoint-route), so no credential is sent."""
    program = vendor_binary("codex")
    assert program is not None
    home, codex_home = tmp_path / "home", tmp_path / "codex-home"
    home.mkdir()
    codex_home.mkdir()

    def configure(base_url: str) -> None:
        (codex_home / "config.toml").write_text(
            'model_provider = "emulator"\n\n[model_providers.emulator]\nname = "emulator"\n'
            f'base_url = "{base_url}"\nwire_api = "responses"\n')

    argv = [program, "exec", "--json", "--skip-git-repo-check", "--color", "never", *flags, "--", "do the task"]
    return launch(tmp_path, scenario, argv, child_environment(home, program, CODEX_HOME=str(codex_home)), configure)


def gemini(tmp_path: Path, scenario: str, *flags: str) -> Launch:
    """``gemini -p … --output-format stream-json --skip-trust --approval-mode yolo`` against the emulator through
    ``GOOGLE_GEMINI_BASE_URL``, with a scratch ``GEMINI_CLI_HOME`` whose settings pick the API-key auth type (the
    0.61.0 gateway auth type fails validation) and turn usage statistics and telemetry off."""
    program = vendor_binary("gemini")
    assert program is not None
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}))
    environment = child_environment(home, program, GEMINI_CLI_HOME=str(home), GEMINI_API_KEY=PLACEHOLDER)

    def configure(base_url: str) -> None:
        environment["GOOGLE_GEMINI_BASE_URL"] = base_url.removesuffix("/v1")

    argv = [program, "-p", "do the task", "--model", "gemini-2.5-pro", "--output-format", "stream-json",
            "--skip-trust", "--approval-mode", "yolo", *flags]
    return launch(tmp_path, scenario, argv, environment, configure)


def gemini_calls(run: Launch) -> list[tuple[str, str]]:
    """Gemini CLI's ``tool_use`` lines as (tool name, result status), in order."""
    status = {line["tool_id"]: line["status"] for line in run.lines if line["type"] == "tool_result"}
    return [(line["tool_name"], status[line["tool_id"]]) for line in run.lines if line["type"] == "tool_use"]


def tool_results(run: Launch) -> list[dict[str, Any]]:
    """Claude Code's ``tool_result`` blocks, in order."""
    return [block for line in run.lines if line.get("type") == "user"
            for block in line["message"]["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]


def codex_items(run: Launch, kind: str) -> list[dict[str, Any]]:
    return [line["item"] for line in run.lines if line.get("type") == "item.completed" and line["item"]["type"] == kind]


def assert_main_loop(record: list[dict[str, Any]], path: str, answers: list[str]) -> None:
    """The main-loop requests got the call and then the closing text; side requests got ``emulated``;
    no credential value was recorded."""
    main = [line for line in record if line["path"] == path and line["side"] is False]
    assert [line["answer"] for line in main] == answers
    assert [line["tool_results"] for line in main] == [0, 1]
    assert PLACEHOLDER not in json.dumps(record)


def test_lockfile_pins_the_clis_with_integrity_and_linux_x64_packages() -> None:
    manifest = json.loads((VENDORS / "package.json").read_text())
    assert manifest["dependencies"] == PINS
    packages = json.loads((VENDORS / "package-lock.json").read_text())["packages"]
    for name, version in PINS.items():
        entry = packages[f"node_modules/{name}"]
        assert entry["version"] == version and entry["integrity"].startswith("sha512-")
    assert packages["node_modules/@anthropic-ai/claude-code-linux-x64"]["version"] == "2.1.332"
    assert packages["node_modules/@openai/codex-linux-x64"]["version"] == "0.171.0-linux-x64"
    assert all(entry["integrity"].startswith("sha512-") for key, entry in packages.items() if key)


@needs("claude")
def test_claude_code_version_is_on_the_pin() -> None:
    program = vendor_binary("claude")
    assert program is not None
    banner = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert banner.split()[0] == PINS["@anthropic-ai/claude-code"]


@needs("gemini")
def test_gemini_cli_version_is_on_the_pin(tmp_path: Path) -> None:
    program = vendor_binary("gemini")
    assert program is not None
    banner = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=60, check=True,
                            env=child_environment(tmp_path, program, GEMINI_CLI_HOME=str(tmp_path))).stdout
    assert banner.split() == [PINS["@google/gemini-cli"]]


@needs("codex")
def test_codex_version_is_on_the_pin(tmp_path: Path) -> None:
    program = vendor_binary("codex")
    assert program is not None
    banner = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=60, check=True,
                            env=child_environment(tmp_path, program, CODEX_HOME=str(tmp_path))).stdout
    assert banner.split() == ["codex-cli", PINS["@openai/codex"]]


@needs("claude")
def test_claude_code_writes_the_note_through_its_write_tool(tmp_path: Path) -> None:
    run = claude(tmp_path, "claude-write", "--permission-mode", "acceptEdits")
    assert (run.workspace / "note.md").read_text() == NOTE
    init = run.lines[0]
    assert (init["type"], init["subtype"], init["apiKeySource"]) == ("system", "init", "none")
    calls = [block for line in run.lines if line.get("type") == "assistant"
             for block in line["message"]["content"] if block["type"] == "tool_use"]
    assert [(c["id"], c["name"], c["input"]["file_path"]) for c in calls] == [
        ("toolu_b10x_001", "Write", str(run.workspace / "note.md"))]
    assert [bool(r.get("is_error")) for r in tool_results(run)] == [False]
    result = run.lines[-1]
    assert (result["type"], result["is_error"], result["result"]) == ("result", False, "emulated work is done")
    assert_main_loop(run.record, "/v1/messages", ["call:Write", "text"])
    main = next(line for line in run.record if line["side"] is False)
    assert (main["method"], main["query"], main["credential_header"]) == ("POST", "beta=true", "authorization")
    assert main["credential_length"] == len(PLACEHOLDER)


@needs("claude")
def test_claude_code_headless_default_refuses_the_unapproved_write(tmp_path: Path) -> None:
    run = claude(tmp_path, "claude-write")
    assert not (run.workspace / "note.md").exists()
    assert [d["tool_name"] for d in run.lines[-1]["permission_denials"]] == ["Write"]
    assert tool_results(run)[0]["is_error"] is True


@needs("claude")
def test_claude_code_runs_the_bash_call(tmp_path: Path) -> None:
    run = claude(tmp_path, "claude-bash", "--allowedTools", "Bash(echo:*)")
    results = tool_results(run)
    assert len(results) == 1 and results[0]["content"] == "emulated" and not results[0].get("is_error")
    assert_main_loop(run.record, "/v1/messages", ["call:Bash", "text"])


@needs("claude")
def test_claude_code_reads_the_readme(tmp_path: Path) -> None:
    run = claude(tmp_path, "claude-read")
    results = tool_results(run)
    assert len(results) == 1 and "hello harness" in json.dumps(results[0]["content"])
    assert_main_loop(run.record, "/v1/messages", ["call:Read", "text"])


@needs("gemini")
def test_gemini_cli_writes_the_note_on_the_generative_language_wire(tmp_path: Path) -> None:
    run = gemini(tmp_path, "gemini-write")
    assert (run.workspace / "note.md").read_text() == NOTE
    assert [line["type"] for line in run.lines[:2]] == ["init", "message"]
    assert gemini_calls(run) == [("write_file", "success")]
    tool_use = next(line for line in run.lines if line["type"] == "tool_use")
    assert tool_use["tool_id"] == "write_file__call_b10x_001"
    assert run.lines[-1]["type"] == "result" and run.lines[-1]["status"] == "success"
    path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert_main_loop(run.record, path, ["call:write_file", "text"])
    main = next(line for line in run.record if line["side"] is False)
    assert (main["query"], main["credential_header"], main["credential_length"]) == (
        "alt=sse", "x-goog-api-key", len(PLACEHOLDER))


@needs("gemini")
def test_gemini_cli_runs_the_shell_call_and_parallel_calls(tmp_path: Path) -> None:
    shell = gemini(tmp_path / "shell", "gemini-shell")
    assert gemini_calls(shell) == [("run_shell_command", "success")]
    parallel = gemini(tmp_path / "parallel", "gemini-parallel")
    assert sorted(gemini_calls(parallel)) == [("run_shell_command", "success"), ("write_file", "success")]
    assert (parallel.workspace / "note.md").read_text() == NOTE


@needs("codex")
def test_codex_applies_the_patch_through_its_code_mode_host(tmp_path: Path) -> None:
    run = codex(tmp_path, "codex-patch", "--sandbox", "workspace-write")
    assert (run.workspace / "note.md").read_text() == NOTE
    changes = codex_items(run, "file_change")
    assert [c["status"] for c in changes] == ["completed"]
    assert codex_items(run, "agent_message")[-1]["text"] == "emulated work is done"
    assert_main_loop(run.record, "/v1/responses", ["call:exec", "text"])
    assert all(line["credential_header"] is None for line in run.record)


@needs("codex")
def test_codex_applies_the_patch_as_a_freeform_tool_when_the_model_offers_it_directly(tmp_path: Path) -> None:
    run = codex(tmp_path, "codex-patch", "--sandbox", "workspace-write", "--model", "gpt-5.5")
    assert (run.workspace / "note.md").read_text() == NOTE
    assert_main_loop(run.record, "/v1/responses", ["call:apply_patch", "text"])


@needs("codex")
def test_codex_read_only_sandbox_rejects_the_patch(tmp_path: Path) -> None:
    run = codex(tmp_path, "codex-patch")
    assert not (run.workspace / "note.md").exists()
    assert codex_items(run, "file_change") == []


@needs("codex")
def test_codex_runs_the_shell_call(tmp_path: Path) -> None:
    run = codex(tmp_path, "codex-shell")
    commands = codex_items(run, "command_execution")
    assert [(c["aggregated_output"], c["exit_code"], c["status"]) for c in commands] == [("emulated\n", 0, "completed")]
    assert_main_loop(run.record, "/v1/responses", ["call:exec", "text"])
