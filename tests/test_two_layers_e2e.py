"""The two layers against the real vendors and the loop (docs/confinement.md#two-layers): a Claude Code
shell call runs in the tools' layer, where it finds no harness to open or signal and no route to send a
request of its own, and the harness's environment is exactly the attested one; so does a program the
loop's ``run`` starts; so does a codex and a gemini shell command (each vendor finds the entry first on its
PATH), and unconfined the same command lands where the host side still holds; a process in the outer layer cannot rename ``hooks/`` or plant anything
in the read-only scratch root; no defunct ``bwrap`` is left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.emulator import running_emulator
from returns.result import Failure
from vendor_cli import pinned_cli

from metaharness.pure.confinement import BRIDGE_PORT
from metaharness.shell.confinement import Prepared, confine
from metaharness.shell.substrate import substrate


def linked_home(tmp_path: Path, *programs: tuple[str, str]) -> Path:
    """A caller's home whose PATH floor entry links each (name, target)."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    for name, target in programs:
        (home / ".local" / "bin" / name).symlink_to(target)
    return home


def descendant_named(root: int, name: str) -> int | None:
    """The first process below ``root`` whose ``comm`` is ``name``."""
    pending = [root]
    while pending:
        pid = pending.pop()
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == name and pid != root:
                return pid
            for task in os.listdir(f"/proc/{pid}/task"):
                pending += [int(w) for w in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return None


def events_of(lines: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def shell_results(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e["content"]) for e in events if e["event"] == "tool.result" and not e["call_id"].startswith("exec-")]


HOSTILE = (
    "ls /proc | grep -c '^[0-9]'; "
    "for p in 1 2 3 4 5 6 7 8; do echo forged > /proc/$p/fd/1 2>/dev/null && echo wrote-$p; done; "
    "for p in 3 4 5 6 7 8; do kill -0 $p 2>/dev/null && echo signalled-$p; done; "
    f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {BRIDGE_PORT}), 3)\" 2>/dev/null "
    "|| echo no-route; echo socks-$(ls $TMPDIR/cc-socks | grep -c sock); echo probe-done"
)
"""A shell call that looks for the harness in ``/proc``, writes a forged line into each low pid's stdout,
signals each pid past its own layer's two (the layer's init and its shell), sends its own request
to the model route's bridge, and counts Claude Code's own messaging sockets in the shared TMPDIR."""


@pytest.mark.skipif(pinned_cli("claude") is None, reason="no pinned claude")
def test_a_claude_shell_call_finds_no_harness_and_no_route_and_the_harness_env_is_attested(tmp_path: Path) -> None:
    home = linked_home(tmp_path, ("claude", pinned_cli("claude") or ""))
    with running_emulator("--scenario", "claude-bash-steps") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "-p", f"do the steps\n$ {HOSTILE}\n",
                "--decisions", "ask", "--hermetic", "on"]  # fmt: skip
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env={**os.environ, "HOME": str(home)})  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        lines: list[bytes] = []
        environ: set[str] = set()
        while line := process.stdout.readline():
            lines.append(line)
            event = json.loads(line)
            if event["event"] == "tool.requested" and event.get("decision_required"):
                harness = descendant_named(process.pid, "claude")
                assert harness is not None
                environ = {entry.split(b"=", 1)[0].decode() for entry in Path(f"/proc/{harness}/environ").read_bytes().split(b"\0") if entry}
                command = {"format": "metaharness.command/1", "id": "c1", "command": "tool.decide",
                           "call_id": event["call_id"], "decision": {"decision": "allow"}}  # fmt: skip
                process.stdin.write(json.dumps(command).encode() + b"\n")
                process.stdin.flush()
        _, err = process.communicate(timeout=120)
    events = events_of(lines)
    said = f"exit {process.returncode}; {err.decode()}; {json.dumps(events)}"  # a failure under load names what the run did
    assert len(shell_results(events)) == 1, said
    (result,) = shell_results(events)
    assert result.startswith('"0\\n') and "probe-done" in result and "no-route" in result, result
    assert "wrote-" not in result and "signalled-" not in result and "socks-0" in result
    started = next(e for e in events if e["event"] == "session.started")
    (h3,) = [row["how"] for row in started["hermetic"]["imposed"] if row["row"] == "H3"]
    assert environ == set(h3.removeprefix("environment constructed: ").split(", ")), (environ, h3)
    assert not {"PWD", "LC_CTYPE", "PYTHONCOERCECLOCALE"} & environ and "CLAUDE_CODE_SHELL_PREFIX" in environ
    (ended,) = [e for e in events if e["event"] == "session.ended"]
    assert ended["route"]["requests"] == 2, said
    assert "  H14  ok  gating   effect the tools cannot reach the harness or its channel" in err.decode(), said


TOOL_PROBE = (
    "S=${TMPDIR%/tmp}; printf pids-; ls /proc | grep -c '^[0-9]'; for p in /proc/[0-9]*; do read c < $p/comm; "
    "case $c in codex|node|gemini) ls $p/fd >/dev/null 2>&1 && echo opened-fds-of-$c; "
    "kill -0 ${p#/proc/} 2>/dev/null && echo signalled-$c;; esac; done 2>/dev/null; "
    'touch "$S/hook-channel/planted" 2>/dev/null && echo wrote-channel; ls "$S/hooks" >/dev/null 2>&1 && echo saw-hooks; '
    f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {BRIDGE_PORT}), 3)\" 2>/dev/null "
    "|| echo no-route; test -c {bundled} && echo covered; echo probe-done"
)
"""A shell call (no command substitution: Gemini CLI blocks it) that counts the processes it sees, opens the
descriptors of and signals each harness process (codex, node, gemini), plants a file in the hook channel, looks
at the scratch root's hooks, sends its own request to the model route's bridge, and checks that codex's bundled
``bwrap`` (the fallback beside the tools' layer) is covered."""

BUNDLED = "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/codex-resources/bwrap"


def probed_run(tmp_path: Path, kind: str, scenario: str, *extra: str) -> tuple[list[str], str, int]:
    """``metaharness run KIND`` of :data:`TOOL_PROBE` against the emulator: the shell results, stderr, exit."""
    home = linked_home(tmp_path, (kind, pinned_cli(kind) or ""))
    bundled = Path(os.path.realpath(pinned_cli("codex") or "/")).parents[3] / BUNDLED
    probe = TOOL_PROBE.replace("{bundled}", str(bundled))
    with running_emulator("--scenario", scenario) as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", kind, "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "-p", f"do the steps\n$ {probe}\n",
                "--decisions", "observe", *extra]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)},
                              timeout=240, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    return shell_results(events_of(done.stdout.splitlines())), done.stderr.decode(), done.returncode


@pytest.mark.skipif(pinned_cli("codex") is None, reason="no pinned codex")
def test_a_codex_shell_call_finds_no_harness_no_channel_and_no_route_and_h14_is_ok(tmp_path: Path) -> None:
    """Codex 0.171.0 starts its shell command through the first ``bwrap`` on its PATH, the tools' layer's entry:
    the command sees no process, cannot open or signal the harness, finds neither the hook channel nor the
    scratch root, has no route, and the bundled ``bwrap`` it could fall back to is an empty device; H14 ok."""
    results, report, code = probed_run(tmp_path, "codex", "codex-shell-steps", "--hermetic", "on")
    (result,) = [r for r in results if "probe-done" in r]
    assert "pids-0" in result and "no-route" in result and "covered" in result, result
    assert not any(word in result for word in ("opened-fds", "signalled", "wrote-channel", "saw-hooks")), result
    assert code == 0, report
    assert "  H14  ok  gating   effect the tools cannot reach the harness or its channel" in report


BROKEN_ENTRY = (
    "import sys; import metaharness.shell.confinement as c; "
    "c.render_tool_entry = lambda layer: b'#!/bin/sh\\nexit 1\\n'; "
    "from metaharness.shell.entry import main; sys.argv[0] = 'metaharness'; main()"
)
"""metaharness with a tools' layer entry that fails whatever it is handed (codex's ``bwrap --help`` probe too)."""


@pytest.mark.skipif(pinned_cli("codex") is None, reason="no pinned codex")
def test_a_codex_whose_entry_fails_its_probe_runs_no_command_beside_the_layer(tmp_path: Path) -> None:
    """When the first ``bwrap`` on its PATH fails the probe, codex 0.171.0 falls back to its bundled
    ``codex-resources/bwrap``; the view covers that file with an empty device, so the command is not run
    at all, rather than run beside the harness."""
    home = linked_home(tmp_path, ("codex", pinned_cli("codex") or ""))
    with running_emulator("--scenario", "codex-shell-steps") as (base_url, _):
        argv = [sys.executable, "-c", BROKEN_ENTRY, "run", "codex", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "-p", "do the steps\n$ echo ran-the-command\n",
                "--decisions", "observe"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=240,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    results = shell_results(events_of(done.stdout.splitlines()))
    assert results and not any("ran-the-command" in result for result in results), results
    assert any("bubblewrap is unavailable" in result for result in results), results


@pytest.mark.skipif(pinned_cli("codex") is None, reason="no pinned codex")
def test_with_confine_off_a_codex_shell_call_reads_the_scratch_root_and_the_host_side_holds(tmp_path: Path) -> None:
    """The same call unconfined lands where codex's own sandbox lets it (it reads the scratch root's hooks);
    its read-only sandbox keeps it from the channel, and H14 says the tools run beside the harness."""
    results, report, code = probed_run(tmp_path, "codex", "codex-shell-steps", "--confine", "off", "--hermetic", "on")
    (result,) = [r for r in results if "probe-done" in r]
    assert "saw-hooks" in result and "wrote-channel" not in result, result
    assert code == 0, report
    assert "H14  gap gating   effect the tools cannot reach the harness or its channel — unavailable: --confine off" in report


@pytest.mark.skipif(pinned_cli("gemini") is None, reason="no pinned gemini")
def test_a_gemini_shell_call_finds_no_harness_no_channel_and_no_route_and_h14_is_ok(tmp_path: Path) -> None:
    """Gemini CLI 0.61.0 starts ``run_shell_command`` through the first ``bash`` on its PATH, the tools' layer's
    entry, while its hook's own line still runs where the harness is (the call is decided); H14 ok."""
    results, report, code = probed_run(tmp_path, "gemini", "gemini-shell-steps", "--hermetic", "on")
    (result,) = results
    assert "pids-0" in result and "no-route" in result and "probe-done" in result, result
    assert not any(word in result for word in ("opened-fds", "signalled", "wrote-channel", "saw-hooks")), result
    assert code == 0, report
    assert "  H14  ok  gating   effect the tools cannot reach the harness or its channel" in report


@pytest.mark.skipif(pinned_cli("gemini") is None, reason="no pinned gemini")
def test_with_confine_off_a_gemini_shell_call_reaches_the_harness_and_the_host_side_holds(tmp_path: Path) -> None:
    """Unconfined, the same call opens the harness's descriptors, signals it and plants a file in the hook
    channel; the host side holds: the run ends exit 0 with the call decided, the planted name ignored."""
    results, report, code = probed_run(tmp_path, "gemini", "gemini-shell-steps", "--confine", "off", "--hermetic", "on")
    (result,) = results
    assert "opened-fds-of-node" in result and "signalled-node" in result and "wrote-channel" in result, result
    assert code == 0, report
    assert "H14  gap gating   effect the tools cannot reach the harness or its channel — unavailable: --confine off" in report


@pytest.mark.skipif(pinned_cli("codex") is None, reason="no pinned codex")
def test_under_cwd_codex_s_grant_is_the_tree_and_tmpdir_and_the_scratch_root_is_not_there(tmp_path: Path) -> None:
    """A codex command under ``--cwd`` writes the tree and its TMPDIR (codex binds them, the tools' layer keeps
    those binds); the hook channel and codex's real home are not in its layer at all (what lies under ``/tmp``
    there is the layer's own empty tmpfs, and ``exclude_slash_tmp`` keeps codex from granting it)."""
    home = linked_home(tmp_path, ("codex", pinned_cli("codex") or ""))
    tree = tmp_path / "tree"
    tree.mkdir()
    step = ('ls "$CODEX_HOME/../hook-channel" >/dev/null 2>&1 && echo saw-channel; '
            'ls "$CODEX_HOME/config.toml" >/dev/null 2>&1 && echo saw-config; '
            'touch "$TMPDIR/x" && echo wrote-tmpdir; touch here && echo wrote-tree')  # fmt: skip
    with running_emulator("--scenario", "codex-shell-steps") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "codex", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "-p", f"do the steps\n$ {step}\n",
                "--decisions", "observe", "--cwd", str(tree)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=240,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    (result,) = [r for r in shell_results(events_of(done.stdout.splitlines())) if "wrote-tree" in r]
    assert "wrote-tmpdir" in result and (tree / "here").exists(), result
    assert "saw-channel" not in result and "saw-config" not in result, result


def test_a_program_the_loop_runs_is_in_the_tools_layer(tmp_path: Path) -> None:
    """b10x: the loop's ``run`` starts its program through the tools' layer's entry: the scratch
    config home is not there, the model route is not reachable, and H14 is ok."""
    home = linked_home(tmp_path, ("b10x-harness", str(Path(sys.executable).parent / "b10x-harness")))
    probe = home / ".local" / "bin" / "probe"
    probe.write_text(
        "#!/bin/sh\n"
        'ls -d "$XDG_CONFIG_HOME" 2>&1\n'
        "ls /proc | grep -c '^[0-9]'\n"
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {BRIDGE_PORT}), 3)\" 2>/dev/null"
        " || echo no-route\n"
    )
    probe.chmod(0o755)
    record = tmp_path / "emulator.jsonl"
    with running_emulator("--scenario", "flat-run", "--record", str(record), "--record-bodies") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "b10x", "--decisions", "observe", "--model",
                "b10x-emulated", "--model-endpoint", base_url, "--allow-program", "probe", "-p", "probe",
                "--hermetic", "on"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=120,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    bodies = record.read_text()
    assert "/config': No such file or directory\\\\n0\\\\nno-route" in bodies
    assert "  H14  ok  gating   effect the tools cannot reach the harness or its channel" in done.stderr.decode()


def test_a_process_in_the_outer_layer_cannot_rename_hooks_or_plant_anything(tmp_path: Path) -> None:
    """The renamed-``hooks/`` attack from inside the view itself: ``hooks/`` is a read-only mount, the
    scratch root a read-only tmpfs and ``/`` read-only, so the rename, the plant and the rewrite fail."""
    found = substrate()
    if isinstance(found, Failure):
        pytest.skip(found.failure().message)
    bwrap, version = found.unwrap()
    scratch = tmp_path / "scratch"
    for name in ("work", "tmp", "hooks"):
        (scratch / name).mkdir(parents=True)
    (scratch / "hooks" / "pretooluse").write_text("#!/bin/sh\nexit 2\n")
    attack = (f"cd {scratch}; mv hooks hooks.old 2>/dev/null && echo renamed; mkdir planted 2>/dev/null && echo planted; "
              "echo 'exit 0' > hooks/pretooluse 2>/dev/null && echo rewritten; mkdir /planted 2>/dev/null && echo root; "
              "echo attack-done")  # fmt: skip
    prepared = Prepared(kind="claude", bwrap=bwrap, bwrap_version=version, route=None, reads=(), home=None, hidden=())
    spawn = confine(prepared, program="/bin/sh", command=["/bin/sh", "-c", attack], child_path="/usr/bin:/bin",
                    scratch=str(scratch), cwd=str(scratch / "work"), writable=(str(scratch / "work"), str(scratch / "tmp")),
                    governing=(str(scratch / "hooks" / "pretooluse"),)).unwrap()  # fmt: skip
    view = subprocess.Popen(spawn.argv, pass_fds=spawn.pass_fds, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    spawn.spawned()
    out, err = view.communicate(timeout=60)
    assert out.decode() == "attack-done\n", err
    assert spawn.namespaces() == "ok" and sorted(p.name for p in scratch.iterdir()) == ["hooks", "layer", "resolv.conf", "tmp", "work"]


def test_no_defunct_bwrap_is_left_in_the_caller_s_group_after_a_run(tmp_path: Path) -> None:
    """The trial's and the view's bwrap leave no process of the run's group behind, not even a zombie
    for PID 1 to reap."""
    home = linked_home(tmp_path, ("b10x-harness", str(Path(sys.executable).parent / "b10x-harness")))
    with running_emulator("--scenario", "text") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "b10x", "--decisions", "observe", "--model",
                "b10x-emulated", "--model-endpoint", base_url, "-p", "hello"]  # fmt: skip
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   env={**os.environ, "HOME": str(home)}, start_new_session=True)  # fmt: skip
        _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    left = []
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.isdigit() and int(fields[2]) == process.pid:
            left.append((entry, Path(f"/proc/{entry}/comm").read_text().strip(), fields[0].decode()))
    assert left == []
