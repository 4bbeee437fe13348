"""The child's environment floor, credential postures and guards (docs/hermetic.md#environment-floor, #credentials,
docs/adapters/b10x.md#environment, #program-and-version)."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest
from returns.result import Failure, Success

from metaharness.pure import environment
from metaharness.pure.adapters import adapter_of
from metaharness.pure.environment import (
    ChildEnvironment,
    CredentialPosture,
    EnvironmentDeclaration,
    child_environment,
    credential_posture,
    guard_environment,
    loopback_custody_token,
    operator_login_file,
    path_floor,
    resolve_program,
)
from metaharness.shell.facts import gather_program_candidates, readable_regular_file

CALLER = {
    "HOME": "/home/op",
    "USER": "op",
    "LOGNAME": "op",
    "LANG": "C.UTF-8",
    "TERM": "xterm",
    "SHELL": "/bin/zsh",
    "PATH": "/opt/evil/bin:/usr/bin",
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "OPENAI_API_KEY": "sk-openai-secret",
    "CODEX_API_KEY": "sk-codex-secret",
    "GIT_DIR": "/x",
    "HTTPS_PROXY": "http://proxy",
    "SSH_AUTH_SOCK": "/tmp/agent",
    "RUSTUP_HOME": "/home/op/.rustup",
    "CARGO_HOME": "/home/op/.cargo",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
    "XDG_RUNTIME_DIR": "/run/user/1000",
    "MY_TOKEN": "oauth-secret",
}


def build(declaration: EnvironmentDeclaration, caller: dict[str, str] = CALLER, present: bool = True) -> dict[str, str]:
    posture = credential_posture(declaration, caller, present).unwrap()
    return child_environment(declaration, caller, "/tmp/mh-1", posture).unwrap().as_dict()


def refusal_code(result: object) -> str:
    assert isinstance(result, Failure)
    return result.failure().code


def test_path_floor_uses_the_callers_home_or_the_system_directories() -> None:
    assert path_floor({"HOME": "/home/op"}) == "/home/op/.local/bin:/usr/local/bin:/usr/bin:/bin"
    assert path_floor({}) == "/usr/local/bin:/usr/bin:/bin"


def test_b10x_child_holds_exactly_path_and_config_home_by_default() -> None:
    env = build(EnvironmentDeclaration(kind="b10x"))
    assert env == {"PATH": "/home/op/.local/bin:/usr/local/bin:/usr/bin:/bin", "XDG_CONFIG_HOME": "/tmp/mh-1/config"}


def test_a_declared_keys_only_child_holds_the_scratch_tmpdir_its_floor_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard admits the ``TMPDIR`` the floor itself puts there: a declared-keys-only kind whose floor has a
    scratch ``TMPDIR`` is not refused its own variable (docs/hermetic.md#environment-floor)."""
    b10x = adapter_of("b10x")
    floor = msgspec.structs.replace(b10x.floor, scratch_tmpdir=True)
    monkeypatch.setattr(environment, "adapter_of", lambda _kind: msgspec.structs.replace(b10x, floor=floor))
    declaration = EnvironmentDeclaration(kind="b10x")
    built = child_environment(declaration, CALLER, "/tmp/mh-1", credential_posture(declaration, CALLER, True).unwrap())
    guarded = built.bind(lambda env: guard_environment(declaration, env))
    assert isinstance(guarded, Success) and "TMPDIR" in guarded.unwrap().as_dict()


def test_b10x_api_key_forwards_only_openai_api_key_and_names_it_to_the_loop() -> None:
    declaration = EnvironmentDeclaration(kind="b10x", credentials="api-key")
    env = build(declaration)
    assert env["OPENAI_API_KEY"] == "sk-openai-secret"
    assert set(env) == {"PATH", "XDG_CONFIG_HOME", "OPENAI_API_KEY"}
    posture = credential_posture(declaration, CALLER, False).unwrap()
    assert posture.loop_arguments == ("--api-key-env", "OPENAI_API_KEY")
    assert posture.h6_how == "one declared key variable: OPENAI_API_KEY"


def test_b10x_api_key_secret_forwards_no_key_and_only_the_session_bus_variables() -> None:
    declaration = EnvironmentDeclaration(kind="b10x", credentials="api-key", api_key_secret="openai/main")
    env = build(declaration)
    assert set(env) == {"PATH", "XDG_CONFIG_HOME", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"}
    posture = credential_posture(declaration, {}, False).unwrap()
    assert posture.variables == ()
    assert posture.loop_arguments == ("--api-key-secret", "openai/main")
    assert "no key variable is in the child's environment" in posture.h6_how


def test_b10x_toolchain_actor_and_subscription_token_env() -> None:
    declaration = EnvironmentDeclaration(
        kind="b10x", toolchain="stable", actor="ci-bot", subscription_token_env="MY_TOKEN", subscription_token_pointer="/t"
    )
    env = build(declaration)
    assert env["RUSTUP_HOME"] == "/home/op/.rustup" and env["CARGO_HOME"] == "/home/op/.cargo"
    assert env["AEP_ACTOR"] == "ci-bot" and env["MY_TOKEN"] == "oauth-secret"
    assert "HOME" not in env and "LANG" not in env
    posture = credential_posture(declaration, CALLER, False).unwrap()
    assert posture.loop_arguments == ("--oauth-token-env", "MY_TOKEN", "--oauth-token-pointer", "/t")


def test_b10x_operator_login_reads_as_none() -> None:
    posture = credential_posture(EnvironmentDeclaration(kind="b10x"), CALLER, False).unwrap()
    assert posture == CredentialPosture((), None, (), "no key variable is in the child's environment", "no credential")


def test_b10x_subscription_token_file_is_a_loop_flag_only() -> None:
    declaration = EnvironmentDeclaration(kind="b10x", subscription_token_file="/home/op/tok.json")
    posture = credential_posture(declaration, CALLER, False).unwrap()
    assert posture.loop_arguments == ("--oauth-token-file", "/home/op/tok.json") and posture.variables == ()


def test_claude_floor_keeps_the_listed_caller_variables_and_never_shell() -> None:
    env = build(EnvironmentDeclaration(kind="claude"))
    assert env == {
        "PATH": "/home/op/.local/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/home/op",
        "USER": "op",
        "LOGNAME": "op",
        "LANG": "C.UTF-8",
        "TERM": "xterm",
        "TMPDIR": "/tmp/mh-1/tmp",
        "CLAUDE_CONFIG_DIR": "/tmp/mh-1/claude-home",
    }


def test_codex_floor_has_its_scratch_home_and_api_key_under_its_own_name() -> None:
    env = build(EnvironmentDeclaration(kind="codex", credentials="api-key"), {**CALLER, "OPENAI_API_KEY": "k"})
    assert env["CODEX_HOME"] == "/tmp/mh-1/codex-home" and env["OPENAI_API_KEY"] == "k"
    assert "CODEX_API_KEY" not in env
    caller = {key: value for key, value in CALLER.items() if key != "OPENAI_API_KEY"}
    env = build(EnvironmentDeclaration(kind="codex", credentials="api-key"), caller)
    assert env["CODEX_API_KEY"] == "sk-codex-secret" and "OPENAI_API_KEY" not in env


def test_claude_loopback_and_endpoint_route_variables() -> None:
    loopback = EnvironmentDeclaration(
        kind="claude", credentials="loopback", loopback_port="41234", loopback_placeholder="mh-run-claude-1-" + "a" * 24
    )
    env = build(loopback)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:41234"
    assert env["ANTHROPIC_AUTH_TOKEN"].startswith("mh-run-claude-1-")
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert "ANTHROPIC_API_KEY" not in env
    endpoint = EnvironmentDeclaration(kind="claude", credentials="none", model_endpoint="http://127.0.0.1:9/")
    env = build(endpoint)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert env["ANTHROPIC_AUTH_TOKEN"] == "metaharness-model-endpoint"


def test_codex_loopback_holds_the_placeholder_key_only() -> None:
    env = build(EnvironmentDeclaration(kind="codex", credentials="loopback", loopback_placeholder="mh-run-x-" + "0" * 24))
    assert env["METAHARNESS_LOOPBACK_KEY"] == "mh-run-x-" + "0" * 24
    assert not any(key.startswith("OPENAI_") for key in env)


@pytest.mark.parametrize("kind", ["claude", "codex", "b10x"])
def test_api_key_missing_is_refused_at_stage_five(kind: str) -> None:
    result = credential_posture(EnvironmentDeclaration(kind=kind, credentials="api-key"), {"HOME": "/h"}, True)  # type: ignore[arg-type]
    assert refusal_code(result) == "api-key-missing"


def test_subscription_token_env_unset_is_refused() -> None:
    result = credential_posture(EnvironmentDeclaration(kind="b10x", subscription_token_env="NOPE"), CALLER, False)
    assert refusal_code(result) == "subscription-token-env-unset"
    assert "NOPE" in result.failure().message


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_credential_file_missing_is_refused_and_named(kind: str) -> None:
    result = credential_posture(EnvironmentDeclaration(kind=kind), CALLER, False)  # type: ignore[arg-type]
    assert refusal_code(result) == "credential-file-missing"
    assert str(operator_login_file(kind, CALLER)) in result.failure().message  # type: ignore[arg-type]


def test_operator_login_file_per_kind() -> None:
    assert operator_login_file("claude", {"HOME": "/h"}) == "/h/.claude/.credentials.json"
    assert operator_login_file("claude", {"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}) == "/c/.credentials.json"
    assert operator_login_file("codex", {"HOME": "/h"}) == "/h/.codex/auth.json"
    assert operator_login_file("codex", {}) is None
    posture = credential_posture(EnvironmentDeclaration(kind="claude"), {"HOME": "/h"}, True).unwrap()
    assert posture.credential_file == "/h/.claude/.credentials.json" and posture.variables == ()


def test_real_credential_file_presence_is_gathered(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    path = operator_login_file("codex", {"HOME": str(home)})
    assert not readable_regular_file(path)
    (home / ".codex" / "auth.json").write_text("{}")
    assert readable_regular_file(path)


def test_loopback_custody_classes() -> None:
    assert loopback_custody_token("claude", b'{"claudeAiOauth":{"accessToken":"t1"}}') == Success("t1")
    assert loopback_custody_token("codex", b'{"OPENAI_API_KEY":"k","tokens":{"access_token":"a"}}') == Success("k")
    assert refusal_code(loopback_custody_token("codex", b'{"tokens":{"access_token":"a"}}')) == "loopback-chatgpt-login"
    assert refusal_code(loopback_custody_token("claude", b"not json")) == "loopback-custody-unreadable"
    assert refusal_code(loopback_custody_token("codex", b"[]")) == "loopback-custody-unreadable"


@pytest.mark.parametrize(
    ("kind", "key", "row"),
    [
        ("claude", "CLAUDE_CODE_SAFE_MODE", "H8"),
        ("claude", "ANTHROPIC_API_KEY", "H4"),
        ("claude", "GIT_DIR", "H3"),
        ("claude", "https_proxy", "H3"),
        ("claude", "SSH_AUTH_SOCK", "H3"),
        ("codex", "CODEX_DISABLE_HOOKS", "H8"),
        ("codex", "OPENAI_API_KEY", "H4"),
        ("codex", "OPENAI_BASE_URL", "H3"),
        ("codex", "METAHARNESS_LOOPBACK_KEY", "H3"),
        ("b10x", "HOME", "H3"),
        ("b10x", "OPENAI_API_KEY", "H4"),
    ],
)
def test_denied_environment_names_key_and_row(kind: str, key: str, row: str) -> None:
    declaration = EnvironmentDeclaration(kind=kind)  # type: ignore[arg-type]
    posture = CredentialPosture((), None, (), "", "")
    environment = ChildEnvironment((("PATH", "/bin"), (key, "1")), posture)
    result = guard_environment(declaration, environment)
    assert refusal_code(result) == "denied-environment"
    assert result.failure().message == f"{key} is denied in the {kind} child's environment (row {row})"


def test_guard_admits_codex_home_and_declared_keys() -> None:
    declaration = EnvironmentDeclaration(kind="codex", credentials="api-key")
    posture = CredentialPosture((("OPENAI_API_KEY", "k"),), None, (), "", "")
    environment = ChildEnvironment((("CODEX_HOME", "/s"), ("OPENAI_API_KEY", "k")), posture)
    assert guard_environment(declaration, environment) == Success(environment)


def test_a_credential_that_would_replace_a_floor_variable_is_denied() -> None:
    declaration = EnvironmentDeclaration(kind="b10x", subscription_token_env="PATH")
    posture = credential_posture(declaration, CALLER, False).unwrap()
    assert refusal_code(child_environment(declaration, CALLER, "/s", posture)) == "denied-environment"


@pytest.mark.parametrize("name", ["CLAUDE_CODE_SAFE_MODE", "CODEX_DISABLE_HOOKS", "OPENAI_API_KEY"])
def test_b10x_forwards_a_subscription_token_variable_whatever_its_name(name: str) -> None:
    """docs/adapters/b10x.md#environment: ``--subscription-token-env NAME`` puts NAME in the b10x child; the H8 names
    are the vendor CLIs' guards, not the loop's (docs/hermetic.md#environment-floor)."""
    declaration = EnvironmentDeclaration(kind="b10x", subscription_token_env=name)
    caller = {**CALLER, name: "tok"}
    posture = credential_posture(declaration, caller, False).unwrap()
    built = child_environment(declaration, caller, "/s", posture).unwrap().as_dict()
    assert built == {"PATH": path_floor(caller), "XDG_CONFIG_HOME": "/s/config", name: "tok"}


def test_h3_how_lists_the_sorted_keys() -> None:
    posture = credential_posture(EnvironmentDeclaration(kind="b10x"), {}, False).unwrap()
    environment = child_environment(EnvironmentDeclaration(kind="b10x"), {}, "/s", posture).unwrap()
    assert environment.h3_how() == "environment constructed: PATH, XDG_CONFIG_HOME"
    assert environment.strings() == ("PATH=/usr/local/bin:/usr/bin:/bin", "XDG_CONFIG_HOME=/s/config")


def _executable(path: Path, mode: int = 0o755) -> None:
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)


def test_resolve_program_takes_the_first_executable_regular_file_in_path_order(tmp_path: Path) -> None:
    first, second, third = (tmp_path / name for name in ("a", "b", "c"))
    for folder in (first, second, third):
        folder.mkdir()
    (first / "b10x-harness").mkdir()
    _executable(second / "b10x-harness", 0o644)
    _executable(third / "b10x-harness")
    os.symlink(third / "b10x-harness", tmp_path / "link")
    path = f"{first}:{second}:{third}"
    facts = gather_program_candidates("b10x-harness", path)
    assert resolve_program("b10x-harness", path, facts) == Success(f"{third}/b10x-harness")
    (second / "b10x-harness").chmod(0o755)
    facts = gather_program_candidates("b10x-harness", path)
    assert resolve_program("b10x-harness", path, facts) == Success(f"{second}/b10x-harness")


def test_resolve_program_keeps_a_symlinked_candidate_unresolved(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.mkdir()
    _executable(target / "prog")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(target / "prog", bin_dir / "prog")
    facts = gather_program_candidates("prog", str(bin_dir))
    assert resolve_program("prog", str(bin_dir), facts) == Success(f"{bin_dir}/prog")


def test_program_not_found_names_the_path(tmp_path: Path) -> None:
    path = f"{tmp_path}:/nonexistent"
    result = resolve_program("b10x-harness", path, gather_program_candidates("b10x-harness", path))
    assert refusal_code(result) == "program-not-found"
    assert result.failure().message == f"b10x-harness is not an executable regular file on the PATH {path}"
