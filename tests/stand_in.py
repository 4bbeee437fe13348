"""Stand-in harnesses: a program installed as ``$HOME/.local/bin/<name>`` that answers the version probe
with the adapter's pin and otherwise runs the test's own Python body, so a test can make a harness write
hostile records, hold its pipes, or fork, with real processes throughout."""

from __future__ import annotations

import os
import sys
from pathlib import Path

VERSIONS = {"b10x-harness": "b10x-harness 0.22.0", "claude": "2.1.332 (Claude Code)", "codex": "codex-cli 0.171.0"}


def stand_in(home: Path, name: str, body: str) -> Path:
    """Install ``body`` (Python, run with the harness's argv) as ``name`` on ``home``'s PATH floor."""
    program = home / ".local" / "bin" / name
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"if '--version' in sys.argv:\n    print({VERSIONS[name]!r})\n    sys.exit(0)\n{body}\n"
    )
    program.chmod(0o755)
    return program


ANSWER = b"<answer>"
"""In ``records_body``'s lines: read one answer line from stdin here (the caller seam's answer)."""


def records_body(lines: list[bytes]) -> str:
    """A body writing ``lines`` (each one record, newline added) to stdout, flushing after each; at
    ``ANSWER`` it waits for one line on stdin instead."""
    return (
        "out = sys.stdout.buffer\n"
        f"for line in {lines!r}:\n"
        f"    if line == {ANSWER!r}:\n"
        "        sys.stdin.buffer.readline()\n"
        "        continue\n"
        "    out.write(line + b'\\n')\n"
        "    out.flush()\n"
    )


def live_processes_naming(word: str) -> list[int]:
    """The host pids of the live (not zombie) processes with ``word`` among their command line's words.
    A pid a stand-in writes is one of its own pid namespace, which under ``--confine on`` is the view's,
    so what a run left behind is found on the host this way."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                words = handle.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if os.fsencode(word) in words and state != "Z":
            found.append(int(entry))
    return found
