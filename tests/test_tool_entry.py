"""The tools' layer's entry where it stands in for a program the vendor finds on its PATH
(docs/confinement.md#two-layers): codex's ``bwrap`` keeps of codex's own mounts only its grant's binds and
runs nothing but the command after ``--`` in the layer; gemini's ``bash`` runs the real shell there and
the hook's own line where the harness is; the view puts the entry's folder first on the harness's PATH and
row H14's check wants exactly that PATH. The rendered script runs under the real ``/bin/sh`` with stand-ins
for the programs it would start."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import msgspec
import pytest

from metaharness.pure.adapters import adapter_of
from metaharness.pure.confinement import (
    ConfinementFacts,
    SystemEntry,
    ToolGrant,
    confined_hermetic,
    covered_files,
    plan_confinement,
    render_bwrap,
    render_tool_entry,
    tools_entered,
)
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.events import Hermetic
from metaharness.pure.gemini.launch import GeminiRunSpec, plan_gemini_launch
from metaharness.pure.hook_channel import shell_quote
from metaharness.shell.confinement import system_entries

SCRATCH = "/tmp/metaharness-x"
WORK, TMP = f"{SCRATCH}/work", f"{SCRATCH}/tmp"


def stand_in(tmp_path: Path, name: str) -> str:
    """A program that prints its name and each argument on a line of its own."""
    path = tmp_path / name
    path.write_text(f'#!/bin/sh\necho {name}; for word; do printf "%s\\n" "$word"; done\n')
    path.chmod(0o755)
    return str(path)


def facts(tmp_path: Path, grant: ToolGrant) -> ConfinementFacts:
    return ConfinementFacts(
        bwrap=stand_in(tmp_path, "layer-bwrap"), bwrap_version="0.8.0", system=(SystemEntry("/usr"),), home="/home/op",
        hidden=(), closure=("/opt/node_modules",), writable=(WORK, TMP), init=("/opt/python",), scratch=SCRATCH,
        cwd=WORK, command=("codex",), tools=grant,
    )  # fmt: skip


def entry_script(tmp_path: Path, grant: ToolGrant) -> tuple[Path, ConfinementFacts]:
    planned = facts(tmp_path, grant)
    layer = plan_confinement(planned).unwrap().tools
    assert layer is not None
    entry = tmp_path / "entry"
    entry.write_bytes(render_tool_entry(layer))
    entry.chmod(0o755)
    return entry, planned


def handed(entry: Path, *argv: str) -> tuple[int, list[str]]:
    done = subprocess.run([str(entry), *argv], capture_output=True, text=True, timeout=30, check=False)
    return done.returncode, done.stdout.splitlines()


def codex_grant(tmp_path: Path) -> ToolGrant:
    return ToolGrant(writable=(WORK, TMP), form="bwrap", stands_for="bwrap", program=stand_in(tmp_path, "real-bwrap"),
                     path="/home/op/.local/bin:/usr/bin")  # fmt: skip


def test_codex_s_bwrap_keeps_only_its_grant_s_binds_and_runs_the_command_in_the_layer(tmp_path: Path) -> None:
    entry, _ = entry_script(tmp_path, codex_grant(tmp_path))
    code, out = handed(
        entry, "--as-pid-1", "--ro-bind", "/", "/", "--bind", WORK, WORK, "--ro-bind", f"{WORK}/.git", f"{WORK}/.git",
        "--bind", "/etc", "/etc", "--bind", f"{SCRATCH}/hook-channel", f"{SCRATCH}/hook-channel",
        "--ro-bind", f"{WORK}/../hook-channel", f"{WORK}/../hook-channel", "--ro-bind", f"{WORK}/it's", f"{WORK}/it's",
        "--bind", TMP, "/elsewhere", "--", "/opt/helper", "--apply-seccomp-then-exec", "--", "/bin/bash", "-c", "echo 'a b'",
    )  # fmt: skip
    assert code == 0
    assert out[0] == "layer-bwrap" and out.index("--unshare-all") < out.index("--remount-ro")
    tail = out[len(out) - out[::-1].index("/") :]  # after the layer's own last word, `--remount-ro /`
    assert tail == ["--bind", WORK, WORK, "--ro-bind", f"{WORK}/.git", f"{WORK}/.git", "--",
                    "/opt/helper", "--apply-seccomp-then-exec", "--", "/bin/bash", "-c", "echo 'a b'"]  # fmt: skip
    assert ["--ro-bind", WORK, WORK] == out[out.index(WORK) - 1 : out.index(WORK) + 2]  # read-only until codex binds it


def test_codex_s_bwrap_probe_is_the_real_program_and_anything_without_a_command_is_refused(tmp_path: Path) -> None:
    entry, _ = entry_script(tmp_path, codex_grant(tmp_path))
    assert handed(entry, "--help") == (0, ["real-bwrap", "--help"])
    assert handed(entry, "--version") == (0, ["real-bwrap", "--version"])
    assert handed(entry, "--help", "--ro-bind", "/", "/", "/bin/sh")[0] == 125
    assert handed(entry, "--ro-bind", "/", "/", "/bin/sh", "-c", "id")[0] == 125


def test_gemini_s_bash_runs_the_hook_line_where_the_harness_is_and_every_other_line_in_the_layer(tmp_path: Path) -> None:
    hook = stand_in(tmp_path, "hook")
    grant = ToolGrant(writable=(WORK, TMP), form="program", stands_for="bash", program="/bin/bash",
                      harness=((f"'{hook}'", hook),), path="/usr/bin")  # fmt: skip
    entry, _ = entry_script(tmp_path, grant)
    assert handed(entry, "-c", f"'{hook}'") == (0, ["hook"])
    code, out = handed(entry, "-c", f"'{hook}'; id")
    assert code == 0 and out[0] == "layer-bwrap" and out[-4:] == ["--", "/bin/bash", "-c", f"'{hook}'; id"]
    assert handed(entry, "-c", f"'{hook}'", "x")[1][0] == "layer-bwrap"


def test_the_view_puts_the_entry_s_folder_first_on_the_harness_s_path_and_h14_wants_exactly_it(tmp_path: Path) -> None:
    _, planned = entry_script(tmp_path, codex_grant(tmp_path))
    confinement = plan_confinement(planned).unwrap()
    layer = confinement.tools
    assert layer is not None and layer.entry == f"{SCRATCH}/layer/bin/bwrap"
    argv = render_bwrap(confinement)
    assert argv[argv.index("PATH") - 1 : argv.index("PATH") + 2] == (
        "--setenv", "PATH", f"{SCRATCH}/layer/bin:/home/op/.local/bin:/usr/bin")  # fmt: skip
    assert tools_entered(layer, b"HOME=/h\0PATH=/tmp/metaharness-x/layer/bin:/home/op/.local/bin:/usr/bin\0") == "ok"
    assert tools_entered(layer, b"PATH=/home/op/.local/bin:/tmp/metaharness-x/layer/bin:/usr/bin\0") == "gap"
    assert tools_entered(layer, b"PATH=/tmp/metaharness-x/layer/bin\0") == "gap"
    hermetic = Hermetic(mode="on", decisions="frame", imposed=(), declared=(), unavailable=(), ambient_inputs=(),
                        installed_plugins=())  # fmt: skip
    rows = confined_hermetic(hermetic, confinement, loopback=False, kind="codex")
    (h14,) = [row.how for row in rows.imposed if row.row == "H14"]
    assert h14.startswith("codex starts every shell command through the first bwrap on its PATH")
    assert f"({SCRATCH}/layer/bin first on its PATH)" in h14 and h14.endswith("nothing else of the scratch root")
    bare = confined_hermetic(hermetic, msgspec.structs.replace(confinement, tools=None), loopback=False, kind="codex")
    assert [row.row for row in bare.unavailable] == ["H14"]


def test_the_layer_holds_the_scratch_root_as_an_empty_tmpfs_read_only_once_the_grant_is_bound(tmp_path: Path) -> None:
    layer = plan_confinement(facts(tmp_path, codex_grant(tmp_path))).unwrap().tools
    assert layer is not None
    steps = [(mount.operation, mount.destination) for mount in layer.mounts if mount.destination.startswith(SCRATCH)]
    assert steps == [("tmpfs", SCRATCH), ("ro-bind", WORK), ("ro-bind", TMP), ("remount-ro", SCRATCH)]


def test_gemini_s_kept_line_is_exactly_the_hook_command_its_launch_writes() -> None:
    """The one line gemini's entry keeps where the harness is must be the command the scratch settings give
    the BeforeTool hook: else the hook would run in the tools' layer, without its channel, and Gemini CLI,
    which fails open on a failed hook, would let every call run."""
    launch = plan_gemini_launch(
        GeminiRunSpec(prompt="do it", cwd="/w", environment=EnvironmentDeclaration(
            kind="gemini", credentials="none", model_endpoint="http://127.0.0.1:5")),
        {"PATH": "/bin", "HOME": "/h"}, "/s", {"/h/.local/bin/gemini": ProgramCandidate(regular=True, executable=True)},
    ).unwrap()  # fmt: skip
    (group,) = launch.settings["hooks"]["BeforeTool"]
    kept = adapter_of("gemini").confinement.tools.kept
    assert [hook["command"] for hook in group["hooks"]] == [shell_quote(f"/s/{path}") for path in kept]


def test_h14_is_a_gap_when_a_covered_fallback_is_not_covered_in_the_harness_s_view(tmp_path: Path) -> None:
    bundled = "/opt/node_modules/@openai/codex-linux-x64/vendor/t/codex-resources/bwrap"
    planned = msgspec.structs.replace(facts(tmp_path, codex_grant(tmp_path)), covered=(bundled,))
    confinement = plan_confinement(planned).unwrap()
    assert covered_files(confinement) == (bundled,)
    assert f"--ro-bind /dev/null {bundled}" in " ".join(render_bwrap(confinement))
    layer = confinement.tools
    assert layer is not None
    environ = f"PATH={layer.path}\0".encode()
    assert tools_entered(layer, environ) == "ok" and tools_entered(layer, environ, (bundled,)) == "gap"


def test_gemini_s_bash_gives_the_layer_its_own_tmpdir_and_an_empty_folder_for_each_of_the_harness_s(tmp_path: Path) -> None:
    """Hostile, two commands at once and a killed entry: the harness's TMPDIR holds two of Gemini's folders for
    one command (and a link named like one); the entry hands the layer's ``bwrap`` the tools' own TMPDIR at the
    shared one's path and an empty tmpfs at each real folder, then the real shell and the command, replacing
    itself, so no tool writes a folder the harness reads back and there is nothing left to clean up."""
    tmp = tmp_path / "tmp"
    (tmp / "gemini-shell-a").mkdir(parents=True)
    (tmp / "gemini-shell-b").mkdir()
    (tmp / "gemini-shell-link").symlink_to(tmp_path)
    grant = ToolGrant(writable=(WORK,), own_tmp=(f"{SCRATCH}/tmp/layer-tmp", TMP), form="program", stands_for="bash",
                      program="/bin/bash", path="/usr/bin", apart=(f"{tmp}/gemini-shell-*",))  # fmt: skip
    entry, _ = entry_script(tmp_path, grant)
    code, out = handed(entry, "-c", "echo 'a b'")
    assert code == 0 and out[0] == "layer-bwrap", out
    words = out[1:]
    assert words[words.index(f"{SCRATCH}/tmp/layer-tmp") - 1:][:3] == ["--bind", f"{SCRATCH}/tmp/layer-tmp", TMP]
    assert ["--bind", TMP, TMP] not in [words[i:i + 3] for i in range(len(words))]
    tail = words[words.index("--tmpfs", words.index("--remount-ro")):]
    assert tail == ["--tmpfs", f"{tmp}/gemini-shell-a", "--tmpfs", f"{tmp}/gemini-shell-b", "--", "/bin/bash", "-c", "echo 'a b'"]
    assert b"exec " in entry.read_bytes() and b"trap" not in entry.read_bytes()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap")
def test_a_fifo_a_command_plants_in_its_own_folder_stays_in_the_layer_when_the_entry_is_killed(tmp_path: Path) -> None:
    """Hostile, a SIGKILL of the entry: under the real ``bwrap``, a command wrapped as Gemini CLI wraps it swaps its
    background-PID file for a FIFO (a read the harness would never finish) and waits; its whole group is killed with
    SIGKILL, so nothing can clean up after it. The harness's folder is as the harness made it, empty: the FIFO was
    in the layer's own tmpfs."""
    scratch = tmp_path / "scratch"
    work, tmp = scratch / "work", scratch / "tmp"
    own = tmp / "gemini-shell-own"
    for folder in (work, tmp / "layer-tmp", own):
        folder.mkdir(parents=True)
    grant = ToolGrant(writable=(str(work),), own_tmp=(str(tmp / "layer-tmp"), str(tmp)), form="program",
                      stands_for="bash", program="/bin/bash", path="/usr/bin", apart=(f"{tmp}/gemini-shell-*",))  # fmt: skip
    planned = ConfinementFacts(
        bwrap=shutil.which("bwrap") or "", bwrap_version="0.8.0", system=system_entries(), home=None, hidden=(),
        closure=(), writable=(str(work), str(tmp)), init=("/bin/true",), scratch=str(scratch), cwd=str(work),
        command=("gemini",), tools=grant,
    )  # fmt: skip
    layer = plan_confinement(planned).unwrap().tools
    assert layer is not None
    entry = tmp_path / "entry"
    entry.write_bytes(render_tool_entry(layer))
    entry.chmod(0o755)
    line = (f"_bgpids_file={shell_quote(str(own / 'bgpids.tmp'))}\n"
            'echo kept > "$TMPDIR/kept"; rm -f "$_bgpids_file"; mkfifo "$_bgpids_file" && echo planted; exec sleep 60')
    with subprocess.Popen([str(entry), "-c", line], stdout=subprocess.PIPE, text=True, start_new_session=True,
                          env={**os.environ, "TMPDIR": str(tmp)}) as child:
        assert child.stdout is not None and child.stdout.readline() == "planted\n"
        os.killpg(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    assert list(own.iterdir()) == [] and (tmp / "layer-tmp" / "kept").read_text() == "kept\n" and not (tmp / "kept").exists()


def test_only_gemini_s_tools_have_a_tmpdir_apart_from_the_harness_s() -> None:
    tools = adapter_of("gemini").confinement.tools
    assert tools.apart == ("gemini-shell-*",) and tools.own_tmp == "tmp/layer-tmp"
    assert all(not adapter_of(kind).confinement.tools.apart for kind in ("claude", "codex", "b10x"))
