"""The entry standing in for codex's ``bwrap`` (docs/confinement.md#two-layers), run under the real
``/bin/sh`` over any argv the harness could hand it: it runs the real program only for ``--help`` or
``--version`` alone; otherwise it starts the tools' layer or refuses (exit 125), and what it adds to the
layer is only a writable bind of exactly a granted directory or a read-only bind strictly inside one
(never through ``..``, never a path with a quote), followed by a tail of the argv it was handed."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.confinement import ConfinementFacts, SystemEntry, ToolGrant, plan_confinement, render_tool_entry

WORK, TMP = "/s/work", "/s/tmp"
GRANTED = (WORK, TMP)
WORDS = st.sampled_from([
    "--bind", "--ro-bind", "--ro-bind-try", "--", "--help", "--version", "--tmpfs", "--setenv", WORK, TMP, "/etc",
    "/s/hook-channel", f"{WORK}/.git", f"{WORK}/../hook-channel", f"{TMP}/it's", f"{WORK}x", "/", "-c", "id", "a b",
])  # fmt: skip


def _entry(directory: Path) -> Path:
    for name in ("layer", "real"):
        program = directory / name
        program.write_text(f'#!/bin/sh\necho {name}; for word; do printf "%s\\n" "$word"; done\n')
        program.chmod(0o755)
    grant = ToolGrant(writable=GRANTED, form="bwrap", stands_for="bwrap", program=str(directory / "real"), path="/usr/bin")
    facts = ConfinementFacts(
        bwrap=str(directory / "layer"), bwrap_version="0.8.0", system=(SystemEntry("/usr"),), home=None, hidden=(),
        closure=(), writable=GRANTED, init=("/opt/python",), scratch="/s", cwd=WORK, command=("codex",), tools=grant,
    )  # fmt: skip
    layer = plan_confinement(facts).unwrap().tools
    assert layer is not None
    entry = directory / "entry"
    entry.write_bytes(render_tool_entry(layer))
    entry.chmod(0o755)
    return entry


def _granted(option: str, path: str) -> bool:
    if "'" in path or "/.." in path:
        return False
    if option == "--bind":
        return path in GRANTED
    return any(path.startswith(directory + "/") for directory in GRANTED)


@settings(max_examples=120, deadline=None)
@given(st.lists(WORDS, max_size=12))
def test_the_entry_adds_only_the_grant_and_runs_a_tail_of_what_it_was_handed(argv: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="bwrap-entry-") as directory:
        done = subprocess.run([str(_entry(Path(directory))), *argv], capture_output=True, text=True, timeout=30,
                              check=False)  # fmt: skip
    out = done.stdout.splitlines()
    if argv in (["--help"], ["--version"]):
        assert (done.returncode, out) == (0, ["real", *argv])
        return
    if done.returncode == 125:  # no ``--`` before the words ran out: nothing started
        assert out == [], (argv, out)
        return
    assert done.returncode == 0 and out[0] == "layer", (argv, out, done.stderr)
    added = out[out.index("/", out.index("--remount-ro")) + 1 :] if "--remount-ro" in out else []
    separator = added.index("--")
    assert separator % 3 == 0
    for index in range(0, separator, 3):
        option, source, destination = added[index : index + 3]
        assert option in ("--bind", "--ro-bind", "--ro-bind-try") and source == destination, added
        assert _granted(option, destination), added
    tail = added[separator + 1 :]
    assert "--" in argv and argv[len(argv) - len(tail) :] == tail, (argv, added)
