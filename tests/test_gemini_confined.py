"""A confined gemini run (``--confine on``, real bubblewrap, the real pinned Gemini CLI): the model route is the
endpoint's three Generative Language methods for the run's model through the bridge, the hook runs inside the
view, and no tool can rewrite the settings or the hook program that govern the run (docs/adapters/gemini.md#confinement)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from codex_process import decided, of, sealed_frame
from gemini_process import GEMINI, PINNED, endpoint, finish, start_run

pytestmark = [
    pytest.mark.skipif(GEMINI is None, reason=f"the pinned Gemini CLI {PINNED} is not on the child's PATH"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
    pytest.mark.usefixtures("own_home"),
]

TAMPER = ('$ for f in "$GEMINI_CLI_HOME/.gemini/settings.json" "$GEMINI_CLI_HOME/../hooks/pretooluse"; '
          'do echo "exit 0" >> "$f" && echo "wrote $f" || echo "refused $f"; done')


def work_tree(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello harness\n")
    return work


@pytest.mark.parametrize("emulator", ["gemini-shell-steps"], indirect=True)
def test_no_tool_in_the_view_can_rewrite_the_settings_or_the_hook(emulator: str, tmp_path: Path) -> None:
    """The shell command runs in the tools' layer, where neither file exists (in the view both are read-only
    binds: tests/test_two_layers_e2e.py holds the outer layer's side)."""
    work = work_tree(tmp_path)
    options = {**endpoint(emulator, decisions="observe", cwd=str(work), confine="on"), "prompt": TAMPER}
    events, code, stderr = finish(start_run(options))
    assert code == 0, stderr
    (result,) = of(events, "tool.result")
    output = json.dumps(result["content"])
    assert "wrote" not in output and output.count("refused") == 2 and "No such file or directory" in output
    started = of(events, "session.started")[0]
    rows = {row["row"]: row["how"] for row in started["hermetic"]["imposed"]}
    assert "own network namespace" in rows["H13"] and "writable" in rows["H12"]
    route = of(events, "session.ended")[0]["route"]
    assert route["requests"] >= 2 and route["bytes_up"] > 0
    assert not [e for e in of(events, "warning") if e["code"] == "ROUTE_REFUSED"]
    requests = [json.loads(line) for line in (tmp_path / "emulator.jsonl").read_text().splitlines()]
    assert {r["path"] for r in requests} <= {"/v1beta/models/gemini-2.5-pro:streamGenerateContent",
                                             "/v1beta/models/gemini-2.5-pro:countTokens"}


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_a_confined_frame_deny_leaves_no_note(emulator: str, tmp_path: Path) -> None:
    work = work_tree(tmp_path)
    frame = sealed_frame(tmp_path, ["file.read"])
    events, code, stderr = finish(start_run(endpoint(emulator, decisions="frame", frame=frame, cwd=str(work),
                                                     confine="on")))  # fmt: skip
    assert code == 0, stderr
    (call,) = [e for e in of(events, "tool.requested") if e["name"] == "write_file"]
    assert call["seam"] == "hook" and decided(events, call["call_id"])["decision"]["decision"] == "deny"
    assert not (work / "note.md").exists()


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_strict_passes_on_a_clean_confined_run_by_effect(emulator: str, tmp_path: Path) -> None:
    """A clean confined scratch run: Gemini CLI's record states no plugins, credential source, MCP servers or
    working directory, so H1a, H4, H5 and H7 are read by effect from outside (the scratch ``GEMINI_CLI_HOME``
    through descriptors, the harness's working directory through ``/proc``) and are ok; H14 is ok (its shell
    commands start in the tools' layer), the witness reconciles, and ``--hermetic strict`` exits 0."""
    temporary = tmp_path / "t"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    events, code, stderr = finish(start_run(endpoint(emulator, decisions="observe", confine="on", hermetic="strict"),
                                            env=env))  # fmt: skip
    assert events[-1]["reason"] == "completed"
    lines = {line.split()[0]: line for line in stderr.splitlines() if line.startswith("  H")}
    verdicts = {row: line.split()[1] for row, line in lines.items()}
    for row in ("H1a", "H4", "H5", "H7"):
        assert verdicts[row] == "ok" and "by effect" in lines[row], lines[row]
    assert "the harness runs in the planned" in lines["H7"]
    assert {row for row, verdict in verdicts.items() if verdict != "ok"} == set(), stderr
    assert verdicts["H14"] == "ok"  # its tools start in the tools' layer (docs/confinement.md#two-layers)
    assert [e["code"] for e in of(events, "warning")] == []
    assert of(events, "session.started")[0]["program"] == str(Path(os.environ["HOME"]) / ".local" / "bin" / "gemini")
    assert code == 0, stderr


PLANT = ('$ mkdir -p "$GEMINI_CLI_HOME/.gemini/extensions/evil" && echo "{}" > "$GEMINI_CLI_HOME/.gemini/oauth_creds.json" '
         '&& echo planted')


@pytest.mark.parametrize("emulator", ["gemini-shell-steps"], indirect=True)
def test_a_tool_cannot_plant_an_extension_or_a_login_in_the_home_and_the_rows_stay_ok(emulator: str, tmp_path: Path) -> None:
    """Hostile: a shell command tries to write an extension folder and a login file into ``GEMINI_CLI_HOME``; it runs
    in the tools' layer, where the scratch root is an empty read-only tmpfs, so nothing is planted, and read by
    effect after the run H1a and H4 are ok (tests/test_gemini_config_home.py holds the reader against plants)."""
    temporary = tmp_path / "t"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    options = {**endpoint(emulator, decisions="observe", confine="on", hermetic="strict"), "prompt": PLANT}
    events, code, stderr = finish(start_run(options, env=env))
    (result,) = of(events, "tool.result")
    assert "planted" not in json.dumps(result["content"]) and "Read-only file system" in json.dumps(result["content"])
    lines = {line.split()[0]: line for line in stderr.splitlines() if line.startswith("  H")}
    assert lines["H1a"].split()[1] == "ok" and lines["H4"].split()[1] == "ok"
    assert code == 0, stderr


@pytest.mark.parametrize("emulator", ["gemini-shell-steps"], indirect=True)
def test_an_extension_and_a_login_a_tool_plants_in_an_unconfined_home_are_never_ok(emulator: str, tmp_path: Path) -> None:
    """Hostile: with ``--confine off`` a tool writes an extension folder and a login file into the scratch
    ``GEMINI_CLI_HOME``; nothing imposed the home there, so H1a and H4 are never ok and strict fails."""
    temporary = tmp_path / "t"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    options = {**endpoint(emulator, decisions="observe", confine="off", hermetic="strict"), "prompt": PLANT}
    events, code, stderr = finish(start_run(options, env=env))
    (result,) = of(events, "tool.result")
    assert "planted" in json.dumps(result["content"])
    lines = {line.split()[0]: line for line in stderr.splitlines() if line.startswith("  H")}
    assert lines["H1a"].split()[1] != "ok" and lines["H4"].split()[1] != "ok", stderr
    assert code != 0
