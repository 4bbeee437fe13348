"""``metaharness run``'s refusals before anything starts: stage 2 audit pairing (docs/hermetic.md#auditor), stage 3
kind carriage and ``not-built`` (docs/cli.md#run), stage 4 option pairing (docs/hermetic.md#refusal-order), and the
``--hermetic`` and ``--`` grammar (docs/cli.md#run). The expected codes and reasons are written out from the
documented tables."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from returns.result import Failure, Success

from metaharness.pure.options import (
    AuditFacts,
    RunOptions,
    check_audit_pairing,
    check_kind_carriage,
    check_option_pairing,
)
from metaharness.shell.auditor import gather_audit_facts
from metaharness.shell.cli import run_cli

B10X_READY = ["--decisions", "observe", "--model", "m", "--model-endpoint", "http://127.0.0.1:9"]
VENDOR_SCOPE = "a vendor arm's scope travels sealed in Frame.subjects, and a flag would be a second, unsealed copy of it"
LOOP_ONLY = "it reaches the b10x loop only"


def metaharness(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("metaharness")
    return subprocess.run([str(script), *args], capture_output=True, text=True, env=env, check=False, timeout=60)


def refusal_of(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run the real CLI in-process; the one refusal line it wrote (exit 2, nothing on stdout)."""
    assert run_cli(list(args)) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    return err.rstrip("\n")


NOT_CARRIED_ROWS = [
    *[(f"--{name}", value, kind, VENDOR_SCOPE) for name, value in (("write-scope", "src/**=allowed"), ("scope-announce", "stated")) for kind in ("claude", "codex")],
    *[
        (f"--{name}", value, kind, LOOP_ONLY)
        for name, value in (
            ("hooks", "h.json"),
            ("driver", "d"),
            ("toolchain", "stable"),
            ("prices", "p.json"),
            ("substrate", "/run/s.sock"),
            ("substrate-embedded", None),
            ("cgroup-root", "/sys/fs/cgroup/x"),
            ("model-wire", "anthropic-messages"),
            ("subscription-token-file", "t.json"),
            ("subscription-token-env", "TOKEN"),
            ("subscription-token-pointer", "/access"),
            ("api-key-secret", "openai"),
        )
        for kind in ("claude", "codex")
    ],
    ("--allow-program", "ls", "codex", "codex publishes no run tool metaharness could narrow"),
    ("--max-turns", "3", "codex", "codex exec has no turn ceiling to carry it"),
    ("--effort", "high", "b10x", "the b10x launch carries no effort setting"),
    ("--plugin", "r@n@p", "codex", "marketplace plugins are resolved for Claude Code only"),
    ("--plugin", "r@n@p", "b10x", "marketplace plugins are resolved for Claude Code only"),
    ("--catalogue", "c.json", "b10x", "on this arm the loop's published toolset is the policy"),
]


@pytest.mark.parametrize(("flag", "value", "kind", "reason"), NOT_CARRIED_ROWS)
def test_an_option_the_kind_does_not_carry_is_refused_by_name(
    capsys: pytest.CaptureFixture[str], flag: str, value: str | None, kind: str, reason: str
) -> None:
    words = [flag] if value is None else [flag, value]
    line = refusal_of(capsys, "run", kind, "-p", "task", *words)
    assert line == f"metaharness: {flag[2:]}-not-carried: {flag} is not carried on {kind}: {reason}"


def test_given_means_present_whatever_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    line = refusal_of(capsys, "run", "claude", "-p", "x", "--scope-announce", "stated")
    assert line.startswith("metaharness: scope-announce-not-carried: ")


@pytest.mark.parametrize(
    ("words", "code"),
    [
        (["--tool-surface", "owned"], "tool-surface-not-carried"),
        (["--credentials", "loopback"], "credentials-not-carried"),
    ],
)
def test_value_specific_rows_refuse_only_that_value_on_b10x(
    capsys: pytest.CaptureFixture[str], words: list[str], code: str
) -> None:
    assert refusal_of(capsys, "run", "b10x", *words).startswith(f"metaharness: {code}: ")
    options = RunOptions(kind="b10x", tool_surface="native", credentials="none", given=frozenset({"tool-surface", "credentials"}))
    assert isinstance(check_kind_carriage(options, not_built={}), Success)


def test_not_carried_follows_the_option_table_order(capsys: pytest.CaptureFixture[str]) -> None:
    line = refusal_of(capsys, "run", "codex", "-p", "x", "--cgroup-root", "/c", "--max-turns", "2", "--hooks", "h")
    assert line.startswith("metaharness: max-turns-not-carried: ")


def test_not_built_comes_after_every_not_carried_check() -> None:
    options = RunOptions(kind="claude", prompt="x", effort="high", hooks="h", given=frozenset({"prompt", "effort", "hooks"}))
    refused = check_kind_carriage(options, not_built={"claude": "the claude adapter"})
    assert refused.failure().code == "hooks-not-carried"
    carried = RunOptions(kind="claude", prompt="x", given=frozenset({"prompt"}))
    kind_refusal = check_kind_carriage(carried, not_built={"claude": "the claude adapter", "--prompt": "x"}).failure()
    assert kind_refusal.line() == "metaharness: not-built: run claude is not built in this build: the claude adapter"
    option_refusal = check_kind_carriage(carried, not_built={"--prompt": "the prompt"}).failure()
    assert option_refusal.line() == "metaharness: not-built: --prompt is not built in this build: the prompt"


def test_an_option_not_built_on_one_kind_is_refused_there_only() -> None:
    not_built = {"--catalogue on codex": "the app-server path"}
    given = frozenset({"prompt", "catalogue", "tool-surface"})
    codex = RunOptions(kind="codex", prompt="x", catalogue="c.json", tool_surface="owned", given=given)
    refused = check_kind_carriage(codex, not_built=not_built).failure()
    assert refused.line() == "metaharness: not-built: --catalogue on codex is not built in this build: the app-server path"
    claude = RunOptions(kind="claude", prompt="x", catalogue="c.json", tool_surface="owned", given=given)
    assert isinstance(check_kind_carriage(claude, not_built=not_built), Success)


PAIRING_CASES = [
    (RunOptions(kind="codex", prompt="x", scratch_cwd=True), "scratch-cwd-without-cwd"),
    (RunOptions(kind="b10x", model="m", model_endpoint="http://h"), "frame-required"),
    (RunOptions(kind="claude"), "prompt-required"),
    (RunOptions(kind="codex"), "prompt-required"),
    (RunOptions(kind="b10x", decisions="observe", model="m"), "model-endpoint-required"),
    (RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="ftp://h"), "model-endpoint-malformed"),
    (RunOptions(kind="claude", prompt="x", credentials="none", model_endpoint="http://h:8/v1"), "model-endpoint-malformed"),
    (RunOptions(kind="codex", prompt="x", credentials="none", model_endpoint="http://h:99999"), "model-endpoint-malformed"),
    (RunOptions(kind="codex", prompt="x", credentials="none", model_endpoint="http://h?x=1"), "model-endpoint-malformed"),
    (RunOptions(kind="claude", prompt="x", credentials="none", model_endpoint="127.0.0.1:8"), "model-endpoint-malformed"),
    (RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="http://[::1"), "model-endpoint-malformed"),
    (RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="http://h:abc"), "model-endpoint-malformed"),
    (RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="http://"), "model-endpoint-malformed"),
    (RunOptions(kind="claude", prompt="x", model_endpoint="http://h"), "endpoint-with-credential"),
    (RunOptions(kind="codex", prompt="x", credentials="api-key", model_endpoint="http://h"), "endpoint-with-credential"),
    (RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="http://h", api_key_secret="k"), "api-key-secret-needs-api-key"),
    (
        RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="http://h", subscription_token_file="f", subscription_token_env="E"),
        "subscription-token-conflict",
    ),
    (RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="http://h", subscription_token_pointer="/a"), "subscription-token-pointer-alone"),
    (
        RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="http://h", credentials="api-key", subscription_token_env="E"),
        "subscription-token-with-api-key",
    ),
    (RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="http://h", substrate="s", substrate_embedded=True), "substrate-conflict"),
    (RunOptions(kind="claude", prompt="x", allow_program=("ls",)), "allow-program-needs-owned-surface"),
    (RunOptions(kind="codex", prompt="x", tool_surface="owned"), "tool-surface-owned-needs-catalogue"),
    (RunOptions(kind="claude", prompt="x", catalogue="c.json"), "catalogue-needs-owned-surface"),
    (RunOptions(kind="codex", prompt="x", catalogue="c.json"), "catalogue-needs-owned-surface"),
    (RunOptions(kind="claude", prompt="x", tool_surface="owned", catalogue="c.json", allow_program=("ls",)), "catalogue-with-allow-program"),
    (RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="http://h", catalogue="c", allow_program=("ls",)), "catalogue-with-allow-program"),
]


@pytest.mark.parametrize(("options", "code"), PAIRING_CASES)
def test_pairing_refusals(options: RunOptions, code: str) -> None:
    refused = check_option_pairing(options)
    assert isinstance(refused, Failure)
    assert refused.failure().code == code


@pytest.mark.parametrize(
    "options",
    [
        RunOptions(kind="b10x", decisions="observe", model="m", model_endpoint="https://gateway.example/openai/v1"),
        RunOptions(kind="b10x", frame="f.json", model="m", model_endpoint="http://h", credentials="api-key", api_key_secret="k"),
        RunOptions(kind="claude", prompt="", credentials="none", model_endpoint="http://127.0.0.1:8080/"),
        RunOptions(kind="claude", prompt="x", credentials="loopback", model_endpoint="https://gw.example"),
        RunOptions(kind="claude", prompt="x", tool_surface="owned", allow_program=("ls",)),
        RunOptions(kind="codex", prompt="x", tool_surface="owned", catalogue="c.json", cwd="/w", scratch_cwd=True),
    ],
)
def test_well_paired_options_pass_stage_4(options: RunOptions) -> None:
    assert check_option_pairing(options) == Success(options)


def test_frame_required_message_is_part_40s() -> None:
    message = check_option_pairing(RunOptions(kind="b10x", model="m", model_endpoint="http://h")).failure().message
    assert "with nothing to decide from, every write would be refused" in message
    assert "pass --decisions observe for the arm that decides nothing, or name a frame" in message


def test_b10x_pairing_through_the_cli() -> None:
    result = metaharness("run", "b10x", "--model", "m", "--model-endpoint", "http://127.0.0.1:9", "-p", "t")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("metaharness: frame-required: ")
    assert len(result.stderr.splitlines()) == 1


# Stage 2, audit pairing, against real files and a real PATH.


@pytest.fixture
def auditor_tree(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A readable spec, an executable auditor on a private PATH, and that PATH as the environment."""
    spec = tmp_path / "spec.md"
    spec.write_text("# spec\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    auditor = bin_dir / "audit-tool"
    auditor.write_text("#!/bin/sh\nexit 0\n")
    auditor.chmod(auditor.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    return spec, auditor, env


def audit_stage(options: RunOptions, path: str) -> str | None:
    refused = check_audit_pairing(options, gather_audit_facts(options, path))
    return refused.failure().code if isinstance(refused, Failure) else None


def test_audit_pairing_checks_in_order(auditor_tree: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    spec, _auditor, env = auditor_tree
    path = env["PATH"]

    def options(**values: object) -> RunOptions:
        return RunOptions(kind="b10x", **values)  # type: ignore[arg-type]

    assert audit_stage(options(spec=str(spec)), path) == "spec-without-auditor"
    assert audit_stage(options(auditor="audit-tool"), path) == "auditor-without-spec"
    assert audit_stage(options(spec=str(spec), auditor="audit-tool"), path) == "auditor-without-audit"
    assert audit_stage(options(spec=str(spec), auditor="audit-tool", hermetic="on"), path) == "auditor-without-audit"
    assert audit_stage(options(spec=str(tmp_path / "missing.md"), auditor="audit-tool", audit=True), path) == "spec-unreadable"
    assert audit_stage(options(spec=str(tmp_path), auditor="audit-tool", audit=True), path) == "spec-unreadable"
    assert audit_stage(options(spec=str(spec), auditor="   ", audit=True), path) == "auditor-not-invokable"
    assert audit_stage(options(spec=str(spec), auditor="'unbalanced", audit=True), path) == "auditor-not-invokable"
    assert audit_stage(options(spec=str(spec), auditor="no-such-auditor-xyz", audit=True), path) == "auditor-not-invokable"
    assert audit_stage(options(spec=str(spec), auditor=str(spec), audit=True), path) == "auditor-not-invokable"
    assert audit_stage(options(auditor_args=("--strict",)), path) == "auditor-args-unusable"
    for word in ("--spec", "--transcript", "--spec=x.md"):
        refused = options(spec=str(spec), auditor="audit-tool run", audit=True, auditor_args=("-v", word))
        assert audit_stage(refused, path) == "auditor-args-unusable"


def test_a_well_paired_audit_resolves_the_auditor_on_the_callers_path(
    auditor_tree: tuple[Path, Path, dict[str, str]],
) -> None:
    spec, auditor, env = auditor_tree
    for audited in ({"audit": True}, {"hermetic": "strict"}):
        options = RunOptions(kind="b10x", spec=str(spec), auditor="audit-tool check --deep", auditor_args=("-v",), **audited)  # type: ignore[arg-type]
        pairing = check_audit_pairing(options, gather_audit_facts(options, env["PATH"])).unwrap()
        assert pairing.audited
        assert pairing.auditor_words == ("audit-tool", "check", "--deep")
        assert pairing.auditor_program == str(auditor)
    by_path = RunOptions(kind="b10x", spec=str(spec), auditor=str(auditor), audit=True)
    assert check_audit_pairing(by_path, gather_audit_facts(by_path, "")).unwrap().auditor_program == str(auditor)


def test_stage_2_comes_before_stage_3_through_the_cli(auditor_tree: tuple[Path, Path, dict[str, str]]) -> None:
    spec, _auditor, env = auditor_tree
    result = metaharness("run", "codex", "--max-turns", "2", "--spec", str(spec), env=env)
    assert result.stderr.startswith("metaharness: spec-without-auditor: ")
    missing = metaharness("run", "b10x", "--audit", "--spec", str(spec), "--auditor", "audit-tool", env={**env, "PATH": "/nonexistent"})
    assert missing.stderr.startswith("metaharness: auditor-not-invokable: ")


def test_bare_hermetic_does_not_take_a_word_that_is_not_a_mode(
    capsys: pytest.CaptureFixture[str], auditor_tree: tuple[Path, Path, dict[str, str]]
) -> None:
    spec, auditor, _env = auditor_tree
    # KIND after a bare --hermetic is the kind, not the mode.
    assert refusal_of(capsys, "run", "--hermetic", "b10x", "--effort", "x").startswith("metaharness: effort-not-carried: ")
    audit = ["--spec", str(spec), "--auditor", str(auditor)]
    # bare --hermetic is on, which asks for no audit; strict asks for one exactly as --audit does.
    assert refusal_of(capsys, "run", "b10x", "--hermetic", *audit).startswith("metaharness: auditor-without-audit: ")
    assert refusal_of(capsys, "run", "b10x", "--hermetic", "on", *audit).startswith("metaharness: auditor-without-audit: ")
    for strict in (["--hermetic", "strict"], ["--hermetic=strict"]):
        line = refusal_of(capsys, "run", "b10x", *strict, *audit, "--effort", "x")
        assert line.startswith("metaharness: effort-not-carried: ")


def test_words_after_double_dash_are_auditor_args_even_when_they_look_like_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = refusal_of(capsys, "run", "b10x", "--", "--effort", "x", "--spec")
    assert line == "metaharness: auditor-args-unusable: words after -- (--effort x --spec) are given without --auditor"
    # A prompt that is literally "--" is the prompt, not the separator.
    line = refusal_of(capsys, "run", "b10x", "-p", "--", "--effort", "x")
    assert line.startswith("metaharness: effort-not-carried: ")


def test_audit_facts_of_an_unset_spec_and_auditor() -> None:
    assert gather_audit_facts(RunOptions(kind="b10x"), "/usr/bin") == AuditFacts(spec_readable=False, caller_path="/usr/bin")
