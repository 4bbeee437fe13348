"""The codex launch plan: argv, environment, config.toml, user turn and its refusals (docs/adapters/codex.md;
docs/adapters/common.md#endpoint-route)."""

from __future__ import annotations

import tomllib

import msgspec
import pytest
from returns.result import Failure, Success

from metaharness.pure.codex.launch import (
    CodexConfig,
    CodexRunSpec,
    ProviderBlock,
    check_arguments,
    check_shadowing,
    plan_codex_launch,
    render_config,
)
from metaharness.pure.context import ContextFileRead, render_context_block
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.hermetic import MemoryHit, MemoryWalk
from metaharness.pure.jsonline import sha256_hex

CALLER = {"HOME": "/operator"}
PROGRAM = "/operator/.local/bin/codex"
FACTS = {PROGRAM: ProgramCandidate(regular=True, executable=True)}
SCRATCH = "/scratch/run"


def endpoint_spec(**changes: object) -> CodexRunSpec:
    base = CodexRunSpec(
        prompt="run the check",
        decisions="observe",
        environment=EnvironmentDeclaration(kind="codex", credentials="none", model_endpoint="http://127.0.0.1:41237"),
    )
    return msgspec.structs.replace(base, **changes)


def planned(spec: CodexRunSpec, caller: dict[str, str] = CALLER):
    result = plan_codex_launch(spec, caller, SCRATCH, FACTS)
    assert isinstance(result, Success), result
    return result.unwrap()


def test_argv_is_the_exact_exec_line_with_the_user_turn_last():
    launch = planned(endpoint_spec())
    assert launch.argv[:8] == (
        PROGRAM,
        "exec",
        "--json",
        "--strict-config",
        "--dangerously-bypass-hook-trust",
        "--skip-git-repo-check",
        "--color",
        "never",
    )
    assert launch.argv[8] == "--"
    assert launch.argv[9] == (
        "<execution-context>\nexecution_path=metaharness-driven\ninner_harness=codex\n"
        "workspace=metaharness-scratch\nhermetic=off\nconfinement=inner-harness\n"
        "substrate=not-used-by-metaharness\ndecision_mode=observe\n"
        "implication=metaharness records calls but does not narrow them\n</execution-context>\n\nrun the check"
    )


def test_model_goes_before_the_separator():
    launch = planned(endpoint_spec(model="gpt-x"))
    assert launch.args[6:9] == ("never", "--model", "gpt-x")


def test_environment_is_the_floor_plus_codex_home_and_nothing_else_on_the_endpoint_route():
    launch = planned(endpoint_spec())
    assert launch.environment.as_dict() == {
        "HOME": "/operator",
        "PATH": "/operator/.local/bin:/usr/local/bin:/usr/bin:/bin",
        "TMPDIR": "/scratch/run/tmp",
        "CODEX_HOME": "/scratch/run/codex-home",
    }


def test_endpoint_config_has_a_provider_without_env_key_and_the_one_hook():
    launch = planned(endpoint_spec())
    text = render_config(launch.config)
    parsed = tomllib.loads(text)
    assert parsed == {
        "approval_policy": "never",
        "sandbox_mode": "read-only",
        "model_provider": "metaharness_endpoint",
        "model_providers": {
            "metaharness_endpoint": {
                "name": "metaharness_endpoint",
                "base_url": "http://127.0.0.1:41237/v1",
                "wire_api": "responses",
            }
        },
        "mcp_servers": {},
        "hooks": {
            "PreToolUse": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": "'/scratch/run/hooks/pretooluse'",
                            "timeout": 60,
                        }
                    ]
                }
            ]
        },
    }
    config_file = next(f for f in launch.files if f.path.endswith("config.toml"))
    assert config_file.path == "/scratch/run/codex-home/config.toml"
    assert config_file.data == text.encode()
    hook = next(f for f in launch.files if f.path.endswith("pretooluse"))
    assert hook.mode == 0o700 and hook.data.startswith(b"#!/bin/bash\n")


def test_cwd_widens_the_sandbox_to_workspace_write_and_names_the_workspace():
    launch = planned(endpoint_spec(cwd="/home/op/repo"))
    assert launch.config.sandbox_mode == "workspace-write"
    assert launch.cwd == "/home/op/repo"
    assert "workspace=operator-named\n" in launch.user_turn
    copy = planned(endpoint_spec(cwd="/home/op/repo", scratch_cwd=True))
    assert "workspace=embedder-scratch-copy\n" in copy.user_turn
    assert "/scratch/run/work" not in planned(endpoint_spec(cwd="/x")).directories


def test_effort_is_a_top_level_key_before_any_table():
    text = render_config(planned(endpoint_spec(effort="high")).config)
    assert text.index('model_reasoning_effort = "high"') < text.index("[")


def test_context_sits_between_the_block_and_the_task_with_blank_lines():
    brief = ContextFileRead("docs/brief.md", b"# Brief\n", sha256_hex(b"# Brief\n"))
    launch = planned(endpoint_spec(cwd="/scratch/run/work", context=(brief,)))
    assert launch.user_turn.endswith("</execution-context>\n\n" + render_context_block((brief,)) + "\nrun the check")
    assert [(f.path, f.bytes, f.channel) for f in launch.context_files] == [("docs/brief.md", 8, "user-turn")]


def test_a_long_prompt_names_each_context_file():
    brief = ContextFileRead("docs/brief.md", b"# Brief\n", sha256_hex(b"# Brief\n"))
    result = plan_codex_launch(endpoint_spec(prompt="x" * 131_072, context=(brief,)), CALLER, SCRATCH, FACTS)
    assert result.failure().message.endswith("context files: docs/brief.md 8 bytes")


def test_loopback_has_the_placeholder_variable_and_the_loopback_provider():
    spec = endpoint_spec(
        environment=EnvironmentDeclaration(
            kind="codex",
            credentials="loopback",
            loopback_port="43111",
            loopback_placeholder="mh-run-x-00",
        )
    )
    launch = planned(spec)
    assert launch.environment.as_dict()["METAHARNESS_LOOPBACK_KEY"] == "mh-run-x-00"
    parsed = tomllib.loads(render_config(launch.config))
    assert parsed["model_provider"] == "metaharness_loopback"
    assert parsed["model_providers"]["metaharness_loopback"] == {
        "name": "metaharness_loopback",
        "base_url": "http://127.0.0.1:43111/v1",
        "wire_api": "responses",
        "env_key": "METAHARNESS_LOOPBACK_KEY",
    }
    assert launch.credential_file is None


def test_no_route_means_no_provider_and_operator_login_copies_auth_json():
    spec = endpoint_spec(environment=EnvironmentDeclaration(kind="codex"))
    result = plan_codex_launch(spec, CALLER, SCRATCH, FACTS, credential_file_present=True)
    launch = result.unwrap()
    assert "model_provider" not in render_config(launch.config)
    assert launch.credential_file == "/operator/.codex/auth.json"


def test_operator_login_without_auth_json_is_refused():
    spec = endpoint_spec(environment=EnvironmentDeclaration(kind="codex"))
    result = plan_codex_launch(spec, CALLER, SCRATCH, FACTS, credential_file_present=False)
    assert isinstance(result, Failure) and result.failure().code == "credential-file-missing"


def test_api_key_forwards_the_key_under_its_own_name_and_refuses_without_one():
    spec = endpoint_spec(environment=EnvironmentDeclaration(kind="codex", credentials="api-key"))
    launch = planned(spec, {"HOME": "/operator", "CODEX_API_KEY": "sk-1"})
    assert launch.environment.as_dict()["CODEX_API_KEY"] == "sk-1"
    refused = plan_codex_launch(spec, CALLER, SCRATCH, FACTS)
    assert refused.failure().code == "api-key-missing"


def test_caller_variables_are_never_inherited_beyond_the_floor():
    launch = planned(
        endpoint_spec(),
        {"HOME": "/operator", "OPENAI_API_KEY": "sk", "SHELL": "/bin/zsh", "LANG": "C"},
    )
    env = launch.environment.as_dict()
    assert "OPENAI_API_KEY" not in env and "SHELL" not in env and env["LANG"] == "C"


def test_program_not_found_is_refused():
    result = plan_codex_launch(endpoint_spec(), CALLER, SCRATCH, {})
    assert result.failure().code == "program-not-found"


@pytest.mark.parametrize(
    "flag",
    ["--add-dir", "-c", "--config=x=1", "--sandbox", "-p", "--oss", "--ephemeral"],
)
def test_denied_arguments_are_refused_by_flag(flag: str):
    result = check_arguments(("exec", "--json", flag, "--", "task"))
    assert result.failure().code == "denied-argument"
    assert flag.split("=")[0] in result.failure().message


def test_a_prompt_that_looks_like_a_flag_is_not_a_denied_argument():
    assert isinstance(check_arguments(("exec", "--model", "-c", "--", "-p")), Success)
    launch = planned(endpoint_spec(prompt="--add-dir /"))
    assert launch.argv[-1].endswith("--add-dir /")


def test_shadowing_guard_refuses_another_approval_policy_or_a_second_hook():
    hook = "'/scratch/run/hooks/pretooluse'"
    config = CodexConfig(
        approval_policy="never",
        sandbox_mode="read-only",
        effort=None,
        provider=ProviderBlock("metaharness_endpoint", "http://h/v1", None),
        hook_commands=(hook,),
        hook_timeout=60,
    )
    assert isinstance(check_shadowing(config, hook), Success)
    asked = msgspec.structs.replace(config, approval_policy="on-request")
    assert check_shadowing(asked, hook).failure().code == "shadowed"
    doubled = msgspec.structs.replace(config, hook_commands=(hook, "'/other'"))
    assert check_shadowing(doubled, hook).failure().code == "shadowed"


def test_a_prompt_past_max_arg_strlen_is_refused_naming_the_prompt():
    result = plan_codex_launch(endpoint_spec(prompt="x" * 131_072), CALLER, SCRATCH, FACTS)
    refusal = result.failure()
    assert refusal.code == "argument-too-long"
    assert refusal.message.startswith("the prompt is ")
    assert refusal.message.endswith("no context file was declared")


def test_toml_strings_escape_backslash_and_quote():
    spec = endpoint_spec(effort='a"b\\c')
    parsed = tomllib.loads(render_config(planned(spec).config))
    assert parsed["model_reasoning_effort"] == 'a"b\\c'


def test_a_memory_file_above_a_scratch_run_is_refused():
    walk = MemoryWalk(start="/tmp", hits=(MemoryHit("/AGENTS.md", "AGENTS.md"),), root_names=())
    result = plan_codex_launch(endpoint_spec(), CALLER, SCRATCH, FACTS, walk=walk)
    assert result.failure().code == "memory-ancestor-found"
    assert "/AGENTS.md" in result.failure().message


def test_a_memory_file_above_a_scratch_copy_is_an_unavailable_row_and_under_cwd_too():
    walk = MemoryWalk(start="/home/op/copy", hits=(MemoryHit("/home/op/CLAUDE.md", "CLAUDE.md"),), root_names=())
    copy = planned_with(endpoint_spec(cwd="/home/op/copy", scratch_cwd=True), walk)
    assert [r.row for r in copy.hermetic.unavailable] == ["H9", "H11"]
    assert [r.row for r in copy.hermetic.declared] == ["H7"]
    operator = planned_with(endpoint_spec(cwd="/home/op/copy"), walk)
    (h7,) = [r for r in operator.hermetic.unavailable if r.row == "H7"]
    assert 'sandbox_mode = "workspace-write"' in h7.why


def planned_with(spec: CodexRunSpec, walk: MemoryWalk):
    return plan_codex_launch(spec, CALLER, SCRATCH, FACTS, walk=walk).unwrap()


def test_the_attestation_of_a_scratch_run_names_codex_home_hook_and_frame():
    launch = planned(endpoint_spec(frame_digest="ab" * 32))
    imposed = {row.row: row.how for row in launch.hermetic.imposed}
    assert list(imposed) == ["H1a", "H1b", "H2", "H3", "H4", "H5", "H6", "H7", "H8", "H10", "H11"]
    assert imposed["H1a"] == "CODEX_HOME=/scratch/run/codex-home"
    assert imposed["H5"] == "[mcp_servers] empty"
    assert "--dangerously-bypass-hook-trust" in imposed["H8"]
    assert imposed["H10"] == "frame " + "ab" * 32
    assert imposed["H3"] == "environment constructed: CODEX_HOME, HOME, PATH, TMPDIR"
    assert launch.hermetic.ambient_inputs == (
        "the git status in the vendor's system prompt",
        "the network is not isolated",
    )
    assert (launch.hermetic.mode, launch.hermetic.decisions) == ("off", "observe")
