"""``metaharness capabilities`` starts light: the CLI imports a verb's modules only when that verb runs,
so the descriptor is printed without the HTTP client, YAML, the adapters' shells or their record
readers (docs/adapters/common.md#descriptor: no model, no network, no credential). The registry's entries, each kind's
``pure/<kind>/adapter.py``, are plain values and the descriptor is read from them.

``run`` is held the same way, stage by stage: a refusal loads only what deciding it needs, and the launch path loads
nothing only the running child or the run's end needs (docs/DEVELOPING.md#dependency-direction). Held by the modules
each one imports, never by a timed test (``benchmarks/bench_startup.py`` measures the time)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metaharness.pure.kind import KINDS

HEAVY = ("httpx", "yaml", *(f"metaharness.{side}.{kind}" for side in ("pure", "shell") for kind in KINDS),
         "metaharness.shell.loop", "metaharness.pure.wires", "metaharness.shell.run", "metaharness.shell.mcp_serve")  # fmt: skip


def imported_by(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m metaharness.shell *args``; the modules it imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "metaharness.shell", *args],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    modules = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done, modules


LIGHT = frozenset(f"metaharness.pure.{kind}{part}" for kind in KINDS for part in ("", ".adapter", ".vendor")) | {
    "metaharness.pure.b10x.admissibility"
}
"""Each kind's package, its adapter value (which the descriptor is read from) and the leaves it is built from:
its vendor facts and, on b10x, the frame check."""


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m not in LIGHT and any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("kind", KINDS)
def test_capabilities_imports_no_adapter_http_client_or_yaml(kind: str) -> None:
    done, modules = imported_by("capabilities", kind)
    assert done.returncode == 0 and done.stdout.startswith("{"), done.stderr[-400:]
    assert "metaharness.pure.capabilities" in modules
    assert heavy(modules) == []


def test_the_chosen_verb_imports_its_own_modules() -> None:
    """The measurement above can fail: a verb that needs an adapter does import it."""
    done, modules = imported_by("conformance", "codex", "--contract")
    assert done.returncode == 0
    assert "metaharness.shell.codex.conformance" in modules
    other = [m for m in modules if m.startswith("metaharness.shell.b10x.") and m != "metaharness.shell.b10x.adapter"]
    assert other == []


def test_a_parse_error_imports_no_stage() -> None:
    """``run``'s words are split by the leaf ``pure/command_words.py`` and its converters import what they
    convert with when they run, so a usage refusal needs click and the refusal's struct only."""
    done, modules = imported_by("run", "b10x", "--bogus")
    assert (done.returncode, done.stderr.splitlines()[-1]) == (2, "metaharness: usage: No such option '--bogus'.")
    staged = sorted(m for m in modules if m.split(".")[0] == "returns" or m in {
        "metaharness.pure.options", "metaharness.pure.events", "metaharness.pure.adapters", "metaharness.shell.auditor"})  # fmt: skip
    assert staged == []


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The stderr lines of a run under ``-X importtime`` that are not its import times."""
    return [line for line in done.stderr.splitlines() if not line.startswith("import time:")]


LAUNCH = (*(f"metaharness.shell.{kind}.run" for kind in KINDS), "metaharness.shell.run_engine", "metaharness.shell.wind_up",
          "metaharness.shell.live_engine", "metaharness.shell.loopback")  # fmt: skip
"""A kind's whole run path: its run module, the engine, the wind-up, the live loop, the route proxy."""


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("run", "claude", "-p", "x", "--frame", "/nonexistent", "--credentials", "none"),
         "metaharness: frame-unreadable: frame /nonexistent: could not be read: No such file or directory"),
        (("run", "codex", "-p", "x", "--frame", "/nonexistent", "--credentials", "none"),
         "metaharness: frame-unreadable: frame /nonexistent: could not be read: No such file or directory"),
        (("run", "gemini", "-p", "x", "--frame", "/nonexistent", "--credentials", "none", "--confine", "off"),
         "metaharness: frame-unreadable: frame /nonexistent: could not be read: No such file or directory"),
        (("run", "b10x", "-p", "x", "--model", "m", "--decisions", "observe", "--model-endpoint", "http://127.0.0.1:9",
          "--cwd", "/nonexistent"),
         "metaharness: cwd-unusable: --cwd /nonexistent is missing or not a directory"),
        (("run", "claude", "-p", "x", "--credentials", "none", "--decisions", "observe", "--plugin-dir", "/nonexistent"),
         ("metaharness: plugin-dir-unusable: --plugin-dir /nonexistent is missing or not a directory (an archive is not "
         "unpacked)")),
    ],
)  # fmt: skip
def test_a_refusal_before_the_plan_imports_no_launch_path(args: tuple[str, ...], line: str) -> None:
    """Stages 5–7 are decided ahead of the kind's run module (docs/DEVELOPING.md#the-run-engine): their refusal
    lines and exit are as before, and none of the launch path was imported to reach them."""
    done, modules = imported_by(*args)
    assert (done.returncode, said(done)) == (2, [line])
    assert sorted(m for m in modules if m in LAUNCH) == []
    kind = args[1]
    other_kinds = sorted(m for m in modules if m.startswith("metaharness.shell.") and m.split(".")[2] in KINDS
                         and m.split(".")[2] != kind)  # fmt: skip
    assert other_kinds == []
    assert "metaharness.pure.catalogue" not in modules  # no --catalogue was given


def test_a_refusal_from_the_option_stages_imports_no_later_stage() -> None:
    """Stages 2–4 decide over the options and the auditor's facts alone: their refusal starts no kind's inputs,
    no view (``subprocess`` for bwrap's trial) and, with no endpoint named, no URL parser."""
    done, modules = imported_by("run", "b10x", "-p", "x", "--decisions", "frame")
    assert (done.returncode, said(done)[0].split(":")[:2]) == (2, ["metaharness", " frame-required"])
    later = {"metaharness.shell.run", "metaharness.shell.confinement", "subprocess", "urllib.parse"}
    assert sorted(later & modules) == []


def test_a_refusal_before_the_memory_walk_imports_no_tempfile() -> None:
    """``tempfile`` (and the archive modules ``shutil`` brings) is loaded by stage 7's walk of a scratch run's
    temporary directory, not by a frame refused at stage 6."""
    done, modules = imported_by("run", "claude", "-p", "x", "--frame", "/nonexistent", "--credentials", "none")
    assert (done.returncode, said(done)[0].split(":")[:2]) == (2, ["metaharness", " frame-unreadable"])
    assert "tempfile" not in modules


def test_a_run_past_its_inputs_imports_its_run_module(tmp_path: Path) -> None:
    """The measurement above can fail: a refusal from the plan (stage 8) is decided in the kind's run module."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "metaharness.shell", "run", "claude", "-p", "x", "--credentials",
         "none", "--decisions", "observe", "--confine", "off"],
        capture_output=True, text=True, check=False, timeout=60, env={**os.environ, "PATH": str(tmp_path), "HOME": str(tmp_path)},
    )  # fmt: skip
    modules = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert (done.returncode, [line.split(":")[:2] for line in said(done)]) == (2, [["metaharness", " program-not-found"]])
    assert "metaharness.shell.claude.run" in modules


AFTER_THE_SPAWN = ("h11", "ssl", "httpx", "hmac", "hashlib", "secrets", "metaharness.pure.run_view",
                   "metaharness.pure.projection", "metaharness.pure.replays")  # fmt: skip
"""What only the running child needs (the route's HTTP parser and TLS, on its first connection; ``hmac``, and OpenSSL's
``hashlib`` with it, on its first request's constant-time placeholder check), what only an auditor or ``--retain-dir``
needs (``hashlib``'s digests: the run's own random values are ``os.urandom``'s, so no ``secrets``) or the run's end and a
terminal (the run view, the projection and every kind's record reader it reads)."""


RESULT_ALONE = frozenset(subprocess.run(
    [sys.executable, "-c", "import sys, returns.result; print(*(m for m in sys.modules if m.startswith('returns')))"],
    capture_output=True, text=True, check=True, timeout=60,
).stdout.split())  # fmt: skip
"""The modules of ``returns`` that ``returns.result`` loads: every stage returns a ``Result`` and needs no more."""


@pytest.mark.parametrize("kind", KINDS)
def test_the_launch_path_imports_nothing_only_the_running_child_needs(kind: str, tmp_path: Path) -> None:
    """Each kind's run module, imported whole before its plan's first refusal (``program-not-found``, no program on
    the PATH), loads none of what comes after the spawn and of ``returns`` only what ``returns.result`` loads."""
    needs = ["--model", "m", "--model-endpoint", "http://127.0.0.1:9"] if kind == "b10x" else ["--credentials", "none"]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "metaharness.shell", "run", kind, "-p", "x", *needs, "--decisions",
         "observe", "--confine", "off"],
        capture_output=True, text=True, check=False, timeout=60, env={**os.environ, "PATH": str(tmp_path), "HOME": str(tmp_path)},
    )  # fmt: skip
    modules = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert (done.returncode, [line.split(":")[:2] for line in said(done)]) == (2, [["metaharness", " program-not-found"]])
    assert f"metaharness.shell.{kind}.run" in modules and "metaharness.shell.run_engine" in modules
    assert sorted(m for m in modules if m in AFTER_THE_SPAWN) == []
    assert sorted(m for m in modules if m.split(".")[0] == "returns" and m not in RESULT_ALONE) == []
    assert "metaharness.shell.codex.app_server" not in modules  # a catalogue run's server, and no --catalogue here


def test_the_run_view_loads_no_projection() -> None:
    """A terminal's run view, imported before the spawn when stderr is a terminal, reads how a stream ended from the
    leaf both share and loads neither the projection nor any kind's replay."""
    modules = set(subprocess.run(
        [sys.executable, "-c", "import sys, metaharness.pure.run_view; print(*sys.modules)"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split())  # fmt: skip
    assert "metaharness.pure.stream_ending" in modules
    assert sorted(m for m in modules if m == "metaharness.pure.projection" or m.endswith(".replay")) == []
