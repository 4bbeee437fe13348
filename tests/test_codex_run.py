"""``run codex`` stages 5–7 over real files: the refusals in order, the plugin copies, the custody
read under loopback (docs/hermetic.md#refusal-order, docs/adapters/common.md#vendor-launch-order;
docs/adapters/codex.md; docs/adapters/common.md#endpoint-route)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec

from metaharness.pure.codex.launch import CodexRunSpec, plan_codex_launch
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.options import RunOptions
from metaharness.shell.codex.inputs import custody_stage
from metaharness.shell.codex.run import materialise, plan_run, strict_version


def options(**changes: object) -> RunOptions:
    base: dict[str, object] = {"prompt": "p", "decisions": "observe", "credentials": "none"}
    return RunOptions(kind="codex", **{**base, **changes})


def refusal(tmp_path: Path, run: RunOptions) -> tuple[str, str]:
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    failure = plan_run(run, str(scratch)).failure()
    return failure.code, failure.message


def test_a_missing_cwd_is_cwd_unusable(tmp_path: Path):
    assert refusal(tmp_path, options(cwd=str(tmp_path / "nope")))[0] == "cwd-unusable"


def test_a_missing_retain_dir_is_retain_dir_unusable(tmp_path: Path):
    assert refusal(tmp_path, options(retain_dir=str(tmp_path / "nope")))[0] == "retain-dir-unusable"


def test_a_context_file_without_cwd_is_refused(tmp_path: Path):
    assert refusal(tmp_path, options(context=("a.md",)))[0] == "context-needs-cwd"


def test_an_unreadable_frame_and_a_frame_beside_observe(tmp_path: Path):
    code, message = refusal(tmp_path, options(decisions="frame", frame=str(tmp_path / "none.json")))
    assert code == "frame-unreadable" and message.startswith(f"frame {tmp_path / 'none.json'}: could not be read")
    frame = Path(__file__).parent.parent / "vectors" / "codex" / "hook" / "frame-deny.json"
    assert refusal(tmp_path, options(frame=str(frame)))[0] == "observe-with-frame"


def test_an_empty_plugin_dir_is_unusable(tmp_path: Path):
    empty = tmp_path / "plugin"
    empty.mkdir()
    code, message = refusal(tmp_path, options(plugin_dir=(str(empty),)))
    assert code == "plugin-dir-unusable" and str(empty) in message


def test_loopback_custody_is_read_once_and_a_chatgpt_login_is_refused(tmp_path: Path):
    (tmp_path / ".codex").mkdir()
    custody = tmp_path / ".codex" / "auth.json"
    env = {"HOME": str(tmp_path)}
    assert custody_stage(options(credentials="loopback"), env).failure().code == "loopback-custody-unreadable"
    custody.write_text(json.dumps({"tokens": {"access_token": "chatgpt"}}))
    assert custody_stage(options(credentials="loopback"), env).failure().code == "loopback-chatgpt-login"
    custody.write_text(json.dumps({"OPENAI_API_KEY": "sk-x", "tokens": {"access_token": "chatgpt"}}))
    assert custody_stage(options(credentials="loopback"), env).unwrap() == str(custody)
    assert custody_stage(options(), env).unwrap() is None


def test_materialise_writes_the_tree_and_copies_plugins_without_symlinks(tmp_path: Path):
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    spec = CodexRunSpec(
        prompt="p", environment=EnvironmentDeclaration(kind="codex", credentials="none", model_endpoint="http://h:1")
    )
    facts = {"/operator/.local/bin/codex": ProgramCandidate(regular=True, executable=True)}
    launch = plan_codex_launch(spec, {"HOME": "/operator"}, str(scratch), facts).unwrap()
    plugin = tmp_path / "my-plugin"
    plugin.mkdir()
    (plugin / "SKILL.md").write_text("skill")
    (plugin / "link").symlink_to("/etc/hostname")
    materialise(launch, (str(plugin),))
    assert (scratch / "codex-home" / "config.toml").read_bytes() == launch.files[0].data
    assert oct((scratch / "hooks" / "pretooluse").stat().st_mode & 0o777) == "0o700"
    copied = scratch / "codex-home" / "plugins" / "my-plugin"
    assert (copied / "SKILL.md").read_text() == "skill" and not (copied / "link").exists()
    assert (scratch / "work").is_dir() and (scratch / "tmp").is_dir()


def _launch_with_program(tmp_path: Path, banner: str):
    program = tmp_path / "codex"
    program.write_text(f"#!/bin/sh\nprintf '%s\\n' '{banner}'\n")
    program.chmod(0o755)
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700, exist_ok=True)
    spec = CodexRunSpec(
        prompt="p", environment=EnvironmentDeclaration(kind="codex", credentials="none", model_endpoint="http://h:1")
    )
    facts = {"/operator/.local/bin/codex": ProgramCandidate(regular=True, executable=True)}
    launch = plan_codex_launch(spec, {"HOME": "/operator"}, str(scratch), facts).unwrap()
    launch = msgspec.structs.replace(launch, program=str(program), cwd=str(scratch))
    return launch


def test_strict_version_refuses_an_off_pin_binary_naming_both_versions(tmp_path: Path):
    off = strict_version(_launch_with_program(tmp_path, "codex-cli 0.160.0")).failure()
    assert off.code == "version-off-pin"
    assert "reports 0.160.0" in off.message and "pinned to 0.171.0" in off.message
    assert strict_version(_launch_with_program(tmp_path, "codex-cli 0.171.0")).unwrap() == "0.171.0"
    assert strict_version(_launch_with_program(tmp_path, "codex-cli")).failure().code == "version-unreadable"


def test_stage_six_checks_context_before_catalogue_before_frame(tmp_path: Path):
    """Stage 6's order, as claude and b10x check it: the context files, then the catalogue file,
    then the frame; the first refusal that applies is the one reported."""
    work = tmp_path / "work"
    work.mkdir()
    metaharness = str(Path(sys.executable).with_name("metaharness"))
    bad = {"context": ["--context", "absent.md"], "catalogue": ["--tool-surface", "owned", "--catalogue",
           str(tmp_path / "absent.json")], "frame": ["--decisions", "frame", "--frame", str(tmp_path / "none.json")]}  # fmt: skip

    def refused(*parts: str) -> str:
        argv = [metaharness, "run", "codex", "-p", "p", "--credentials", "none", "--cwd", str(work)]
        argv += [word for part in parts for word in bad[part]]
        done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
        assert done.returncode == 2 and done.stdout == b""
        return done.stderr.decode().split(":")[1].strip()

    assert refused("frame", "catalogue", "context").startswith("context-")
    assert refused("frame", "catalogue") == "catalogue-unreadable"
    assert refused("frame") == "frame-unreadable"
