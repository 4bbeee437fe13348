"""Planning a Claude Code launch (docs/adapters/common.md#vendor-launch-order; docs/adapters/claude.md;
docs/adapters/common.md#endpoint-route; docs/hermetic.md#attestation, #memory-file-walk, #context-files;
docs/hermetic.md#execution-context-block)."""

from __future__ import annotations

import json

import msgspec
import pytest
from returns.result import Failure, Success

from metaharness.pure.catalogue import load_catalogue, scratch_copy
from metaharness.pure.claude.launch import (
    ClaudeRunSpec,
    check_arguments,
    check_shadowing,
    plan_claude_launch,
    settings_document,
)
from metaharness.pure.claude.plugins import PluginCopy
from metaharness.pure.conformance import launch_fixture
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.hermetic import MemoryHit, MemoryWalk
from metaharness.pure.jsonline import sha256_hex
from metaharness.shell.facts import own_cli

CALLER = {"HOME": "/operator", "SHELL": "/bin/zsh", "ANTHROPIC_API_KEY": "sk-caller", "GIT_DIR": "/x"}
PROGRAM = {"/operator/.local/bin/claude": ProgramCandidate(True, True)}
ENDPOINT = EnvironmentDeclaration(kind="claude", credentials="none", model_endpoint="http://127.0.0.1:41237/")
SCRATCH = "/scratch/run"


def spec(**changes: object) -> ClaudeRunSpec:
    base = ClaudeRunSpec(prompt="run the check", decisions="observe", environment=ENDPOINT)
    return msgspec.structs.replace(base, **changes)


def plan(run: ClaudeRunSpec, **facts: object):  # type: ignore[no-untyped-def]
    return plan_claude_launch(run, CALLER, SCRATCH, PROGRAM, **facts)  # type: ignore[arg-type]


def code(result: object) -> str:
    assert isinstance(result, Failure), result
    return str(result.failure().code)


def test_the_argv_is_the_exact_sequence_with_the_execution_context_user_turn() -> None:
    launch = plan(spec()).unwrap()
    assert launch.program == "/operator/.local/bin/claude"
    turn = (
        "<execution-context>\nexecution_path=metaharness-driven\ninner_harness=claude\n"
        "workspace=metaharness-scratch\nhermetic=off\nconfinement=inner-harness\n"
        "substrate=not-used-by-metaharness\ndecision_mode=observe\n"
        "implication=metaharness records calls but does not narrow them\n</execution-context>\n\nrun the check"
    )
    assert launch.user_turn == turn and turn not in launch.args
    assert launch.args == (
        "-p", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--await-initialize",
        "--permission-prompts", "none", "--replay-user-messages", "--strict-mcp-config",
        "--setting-sources", "", "--settings", "/scratch/run/claude-settings.json",
    )  # fmt: skip
    assert launch.cwd == "/scratch/run/work"
    assert launch.transcript_path == "/scratch/run/transcript.jsonl"


def test_optional_flags_follow_in_order() -> None:
    plugin = PluginCopy(name="p", source="/src/p", digest="d" * 64, version="1.0", files=(), skipped=("ln",))
    launch = plan(spec(model="m1", effort="high", max_turns=3, plugins=(plugin,))).unwrap()
    assert [p.name for p in launch.hermetic.installed_plugins] == ["p"]
    assert "symbolic link skipped in --plugin-dir /src/p: ln" in launch.hermetic.ambient_inputs
    assert launch.args[15:] == (
        "--model", "m1", "--effort", "high", "--max-turns", "3", "--plugin-dir", "/scratch/run/plugins/p",
    )  # fmt: skip
    assert "--allowedTools" not in launch.args


def test_the_endpoint_route_environment_is_built_from_empty() -> None:
    env = plan(spec()).unwrap().environment.as_dict()
    assert env == {
        "ANTHROPIC_AUTH_TOKEN": "metaharness-model-endpoint",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:41237",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CONFIG_DIR": "/scratch/run/claude-home",
        "HOME": "/operator",
        "PATH": "/operator/.local/bin:/usr/local/bin:/usr/bin:/bin",
        "TMPDIR": "/scratch/run/tmp",
    }


def test_loopback_puts_only_the_placeholder_in_the_child() -> None:
    declaration = EnvironmentDeclaration(
        kind="claude", credentials="loopback", loopback_port="41237",
        loopback_placeholder="mh-run-golden-000000000000000000000000",
    )  # fmt: skip
    launch = plan(spec(environment=declaration), custody_path="/operator/.claude/.credentials.json").unwrap()
    env = launch.environment.as_dict()
    assert env["ANTHROPIC_AUTH_TOKEN"] == "mh-run-golden-000000000000000000000000"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:41237"
    assert launch.credential_file is None
    assert all("credentials" not in f.path for f in launch.files)


def test_operator_login_names_the_file_to_copy_and_refuses_without_it() -> None:
    declaration = EnvironmentDeclaration(kind="claude")
    assert code(plan(spec(environment=declaration))) == "credential-file-missing"
    launch = plan(spec(environment=declaration), credential_file_present=True).unwrap()
    assert launch.credential_file == "/operator/.claude/.credentials.json"
    assert "ANTHROPIC_API_KEY" not in launch.environment.as_dict()


def test_api_key_is_forwarded_only_when_declared() -> None:
    launch = plan(spec(environment=EnvironmentDeclaration(kind="claude", credentials="api-key"))).unwrap()
    assert launch.environment.as_dict()["ANTHROPIC_API_KEY"] == "sk-caller"


def test_the_settings_document_holds_no_hook_and_empty_permissions() -> None:
    launch = plan(spec()).unwrap()
    assert launch.settings == (
        b'{"$schema":"https://json.schemastore.org/claude-code-settings.json","permissions":{"allow":[],"deny":[]}}'
    )
    assert [f.path for f in launch.files] == ["/scratch/run/claude-settings.json"]
    assert not any("hook" in directory for directory in launch.directories)


def test_the_shadowing_guard_refuses_any_other_layer() -> None:
    document = settings_document()
    assert isinstance(check_shadowing(document), Success)
    allowing = {**document, "permissions": {"allow": ["Bash"], "deny": []}}
    assert code(check_shadowing(allowing)) == "shadowed"
    assert code(check_shadowing({**document, "hooks": {"PreToolUse": []}})) == "shadowed"


@pytest.mark.parametrize(
    "flag",
    ["--bare", "--safe-mode", "--dangerously-skip-permissions", "--add-dir", "--permission-mode=plan",
     "--allowedTools", "--allowed-tools", "--disallowedTools", "--resume", "--continue",
     "--permission-prompt-tool", "--allow-dangerously-skip-permissions"],
)  # fmt: skip
def test_denied_arguments_are_refused_by_the_part_before_equals(flag: str) -> None:
    assert code(check_arguments(("-p", "--model", "x", flag))) == "denied-argument"


def test_a_denied_word_as_a_flag_value_is_not_a_flag() -> None:
    assert isinstance(check_arguments(("-p", "--model", "--bare", "--max-turns", "--resume")), Success)


def test_context_files_travel_in_append_system_prompt_only() -> None:
    data = b"# Brief\n\nShip the parser.\n"
    read = ContextFileRead(path="docs/brief.md", data=data, sha256=sha256_hex(data))
    launch = plan(spec(cwd="/scratch/run/work", context=(read,))).unwrap()
    index = launch.args.index("--append-system-prompt")
    assert "Ship the parser." in launch.args[index + 1]
    assert "Ship the parser." not in launch.user_turn
    assert launch.context_files[0].channel == "append-system-prompt"
    assert "workspace=operator-named" in launch.user_turn
    assert launch_fixture(launch)["context_files"] == [
        {"path": "docs/brief.md", "sha256": sha256_hex(data), "bytes": 26, "channel": "append-system-prompt"}
    ]


def test_a_prompt_past_max_arg_strlen_goes_on_stdin_and_is_not_refused() -> None:
    launch = plan(spec(prompt="x" * 131072)).unwrap()
    assert launch.user_turn.endswith("x" * 131072) and all(len(arg) < 131072 for arg in launch.args)


def test_an_at_mention_is_an_ambient_input_with_a_warning() -> None:
    launch = plan(spec(prompt="read @notes.md and mail a@b")).unwrap()
    assert "file mention in the task: @notes.md" in launch.hermetic.ambient_inputs
    assert len(launch.ambient_warnings) == 2
    assert plan(spec(prompt="email me @ noon")).unwrap().ambient_warnings == ()


def test_a_memory_file_above_a_scratch_run_is_named_since_the_canary_shows_none_loaded() -> None:
    walk = MemoryWalk(start="/tmp", hits=(MemoryHit("/tmp/CLAUDE.md", "CLAUDE.md"),), root_names=())
    hermetic = plan(spec(), walk=walk).unwrap().hermetic
    h11 = next(row for row in hermetic.imposed if row.row == "H11")
    assert "/tmp/CLAUDE.md" in h11.how and "not loaded" in h11.how


def test_memory_rows_under_cwd_and_scratch_cwd() -> None:
    hit = MemoryHit("/srv/AGENTS.md", "AGENTS.md")
    operator = plan(spec(cwd="/srv/repo"), walk=MemoryWalk("/srv/repo", (hit,), ("CLAUDE.md",))).unwrap().hermetic
    assert [r.row for r in operator.unavailable] == ["H7", "H9", "H11"]
    assert "memory file at the working directory's root: CLAUDE.md" in operator.ambient_inputs
    copy = plan(spec(cwd="/srv/copy", scratch_cwd=True), walk=MemoryWalk("/srv/copy", (hit,), ())).unwrap()
    assert [r.row for r in copy.hermetic.declared] == ["H7"]
    h11 = next(row for row in copy.hermetic.imposed if row.row == "H11")
    assert "/srv/AGENTS.md" in h11.how and "not loaded" in h11.how
    assert "workspace=embedder-scratch-copy" in copy.user_turn


def test_the_attestation_names_the_claude_rows() -> None:
    hermetic = plan(spec(frame_digest="ab" * 32, decisions="frame")).unwrap().hermetic
    rows = [r.row for r in hermetic.imposed]
    assert rows == ["H1a", "H1b", "H2", "H3", "H4", "H5", "H6", "H7", "H8", "H10", "H11"]
    assert hermetic.imposed[9].how == f"frame {'ab' * 32}"
    assert hermetic.imposed[5].how == "--strict-mcp-config with []"
    assert "the network is not isolated" in hermetic.ambient_inputs
    assert not any("observe" in item for item in hermetic.ambient_inputs)


def test_program_not_found() -> None:
    assert code(plan_claude_launch(spec(), CALLER, SCRATCH, {})) == "program-not-found"


def test_the_caller_environment_never_leaks() -> None:
    env = plan(spec()).unwrap().environment.as_dict()
    assert "SHELL" not in env and "GIT_DIR" not in env and "ANTHROPIC_API_KEY" not in env


WRITE_CATALOGUE = b"""{"format":"metaharness.catalogue/1","entries":[
 {"name":"file_write","description":"Write a note.","performs":"file_write",
  "input":{"path":{"type":"string","required":true},"text":{"type":"string","required":true}}}]}"""


def test_a_catalogue_run_serves_the_copy_through_this_builds_mcp_serve() -> None:
    catalogue = load_catalogue(WRITE_CATALOGUE, "tools.json").unwrap()
    launch = plan(spec(catalogue=catalogue, own_cli=own_cli("/venv/bin/python"))).unwrap()
    files = {f.path: f.data for f in launch.files}
    assert json.loads(files["/scratch/run/mcp-config.json"]) == {
        "mcpServers": {"metaharness": {"type": "stdio", "command": "/venv/bin/python", "args": [
            "-m", "metaharness.shell", "mcp-serve", "--catalogue", "/scratch/run/catalogue.json",
            "--workspace", "/scratch/run/work", "--writable"]}}
    }  # fmt: skip
    assert files["/scratch/run/catalogue.json"] == scratch_copy(catalogue)
    assert launch.args[-4:] == ("--tools", "", "--mcp-config", "/scratch/run/mcp-config.json")
    h5 = next(row for row in launch.hermetic.imposed if row.row == "H5")
    assert h5.how == "--strict-mcp-config with [metaharness]"


def test_a_catalogue_run_without_an_interpreter_is_tool_server_missing() -> None:
    catalogue = load_catalogue(WRITE_CATALOGUE, "tools.json").unwrap()
    assert code(plan(spec(catalogue=catalogue, own_cli=own_cli("")))) == "tool-server-missing"


def test_the_attestation_says_the_clis_stdin_is_reachable_by_its_tools() -> None:
    ambient = plan(spec()).unwrap().hermetic.ambient_inputs
    assert any(entry.startswith("Claude Code's stdin, where metaharness answers its calls") for entry in ambient)
