"""Rows H1a, H1b, H4 and H5 by effect on codex (docs/hermetic.md#by-effect): the scratch ``CODEX_HOME`` as the real
``config_home_effect`` reads it after a materialised launch, and what the child could plant there instead."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from metaharness.pure.codex.launch import CodexLaunch, CodexRunSpec, plan_codex_launch
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.events import Hermetic, SessionStarted, Transcript
from metaharness.pure.hermetic import ConfigHomeEffect, VerdictFacts, row_verdicts
from metaharness.shell.codex.config_home import config_home_effect
from metaharness.shell.codex.run import materialise


def launched(tmp_path: Path) -> CodexLaunch:
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    spec = CodexRunSpec(prompt="p", environment=EnvironmentDeclaration(kind="codex", credentials="none"))
    facts = {"/operator/.local/bin/codex": ProgramCandidate(regular=True, executable=True)}
    launch = plan_codex_launch(spec, {"HOME": "/operator"}, str(scratch), facts).unwrap()
    materialise(launch)
    return launch


def started() -> SessionStarted:
    silent = dict.fromkeys(
        ("session_id", "model", "permission_mode", "credential_source", "output_style", "cwd", "offered_tools",
         "withheld", "slash_commands", "skills", "agents", "plugins", "mcp_servers", "inputs_digest"),
    )  # fmt: skip
    hermetic = Hermetic(mode="strict", decisions="frame", imposed=(), declared=(), unavailable=(), ambient_inputs=(),
                        installed_plugins=())  # fmt: skip
    return SessionStarted(adapter="codex", adapter_class="harness", harness_version="0.171.0",
                          transcript=Transcript(path="/r", digest=None, bytes=None), hermetic=hermetic, **silent)  # fmt: skip


def rows(effect: ConfigHomeEffect | None, namespaces: str = "ok") -> dict[str, str]:
    facts = VerdictFacts(kind="codex", pins=("0.171.0",), home_effect=effect, namespaces=namespaces)  # type: ignore[arg-type]
    return {row.row: row.verdict for row in row_verdicts(started(), facts) if row.row in ("H1a", "H1b", "H4", "H5")}


def test_the_launch_as_written_reads_ok_by_effect_when_confined(tmp_path: Path) -> None:
    effect = config_home_effect(launched(tmp_path))
    assert effect == ConfigHomeEffect(True, (), (), (), effect.system_config)
    assert rows(effect) == {"H1a": "ok", "H1b": "ok", "H4": "ok", "H5": "ok"}
    assert rows(effect, namespaces="unk") == dict.fromkeys(("H1a", "H1b", "H4", "H5"), "unk")
    assert rows(None) == dict.fromkeys(("H1a", "H1b", "H4", "H5"), "unk")


@pytest.mark.parametrize(
    ("plant", "expected"),
    [
        (lambda home: (home / "plugins" / "evil").mkdir(parents=True), {"H1a": "gap"}),
        (lambda home: (home / "auth.json").write_text('{"OPENAI_API_KEY":"sk-x"}'), {"H4": "gap"}),
        (lambda home: (home / ".credentials.json").symlink_to("/etc/hostname"), {"H4": "gap"}),
        (
            lambda home: (home / "config.toml").write_text('[mcp_servers.evil]\ncommand = "sh"\n'),
            dict.fromkeys(("H1a", "H1b", "H4", "H5"), "unk"),
        ),
    ],
)
def test_what_the_child_plants_in_codex_home_is_never_ok(tmp_path: Path, plant, expected: dict[str, str]) -> None:
    """Hostile: a plugin folder, a credential file (a link too) or a rewritten config.toml."""
    launch = launched(tmp_path)
    plant(Path(launch.codex_home))
    got = rows(config_home_effect(launch))
    assert {row: got[row] for row in expected} == expected
    assert "ok" not in {got[row] for row in expected}


def test_a_config_swapped_for_a_link_to_identical_bytes_is_not_the_launchs(tmp_path: Path) -> None:
    """Hostile: the config file replaced by a link to a copy of the same bytes is never read through the link."""
    launch = launched(tmp_path)
    config = Path(launch.codex_home) / "config.toml"
    elsewhere = tmp_path / "same.toml"
    elsewhere.write_bytes(config.read_bytes())
    config.unlink()
    config.symlink_to(elsewhere)
    assert config_home_effect(launch).config_intact is False


def test_a_codex_home_swapped_for_a_link_reads_as_not_intact(tmp_path: Path) -> None:
    """Hostile: ``CODEX_HOME`` itself replaced by a link to a tree that looks like the launch's."""
    launch = launched(tmp_path)
    home = Path(launch.codex_home)
    decoy = tmp_path / "decoy"
    home.rename(decoy)
    os.symlink(decoy, home)
    effect = config_home_effect(launch)
    assert effect.config_intact is False and rows(effect) == dict.fromkeys(("H1a", "H1b", "H4", "H5"), "unk")


def test_a_copied_login_without_a_declared_key_stays_unknown(tmp_path: Path) -> None:
    effect = msgspec.structs.replace(config_home_effect(launched(tmp_path)), credentials=("auth.json",),
                                     launch_credentials=("auth.json",))  # fmt: skip
    assert rows(effect)["H4"] == "unk"


def test_a_system_codex_configuration_keeps_the_rows_unknown(tmp_path: Path) -> None:
    effect = msgspec.structs.replace(config_home_effect(launched(tmp_path)), system_config=("/etc/codex",))
    assert rows(effect) == dict.fromkeys(("H1a", "H1b", "H4", "H5"), "unk")


def test_a_plugin_name_the_child_planted_reaches_the_report_line_as_text(tmp_path: Path) -> None:
    """The H1a detail names what ``plugins/`` holds, names the child made: the report line (docs/hermetic.md#audit-report)
    shows their control characters as ``\\u`` escapes of four hex digits, never as the terminal's control sequences."""
    launch = launched(tmp_path)
    (Path(launch.codex_home) / "plugins" / "e\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2K\rcontrol verdict: ok").mkdir(parents=True)
    facts = VerdictFacts(kind="codex", pins=("0.171.0",), home_effect=config_home_effect(launch), namespaces="ok")  # type: ignore[arg-type]
    (line,) = [row.line() for row in row_verdicts(started(), facts) if row.row == "H1a"]
    assert not {character for character in line if ord(character) < 0x20}, line
    assert "e\\u001b]52;c;ZWNobyBoaQ==\\u0007\\u001b[2K control verdict: ok" in line
