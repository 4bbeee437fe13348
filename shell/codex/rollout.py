"""Tailing the codex rollout file (docs/adapters/codex.md#rollout-mapping).

The newest ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`` is looked for on every
poll until one exists; from then on only complete lines are read, and each is appended to the
retained copy before it is handed on to be parsed.
"""

from __future__ import annotations

import glob
import os

from metaharness.pure.bounds import RECORD_LINE_LIMIT
from metaharness.shell.bounded_reads import LineCutter, open_regular

POLL_INTERVAL_S = 0.025
"""How often the rollout is polled: every 25 ms (docs/adapters/codex.md)."""

QUIET_POLLS_AFTER_EXIT = 2
"""``codex app-server``'s rollout: reading stops two quiet polls after the server exits; ``codex exec``'s
is read to its end at once, its group killed (docs/adapters/codex.md#rollout-mapping)."""

READ_CHUNK = 1024 * 1024
"""Bytes read from the rollout at a time, each cut into lines before the next is read."""


def rollout_files(sessions_dir: str) -> list[str]:
    """Every ``rollout-*.jsonl`` under ``sessions_dir/YYYY/MM/DD``."""
    return glob.glob(os.path.join(sessions_dir, "[0-9]*", "[0-9]*", "[0-9]*", "rollout-*.jsonl"))


class RolloutTail:
    """The rollout of one run: found under ``sessions_dir`` (or the given ``path``), read line by line,
    copied to ``copy_path``."""

    def __init__(self, sessions_dir: str, copy_path: str, path: str | None = None) -> None:
        self.sessions_dir = sessions_dir
        self.copy_path = copy_path
        self.path = path
        self._offset = 0
        self._cutter = LineCutter(RECORD_LINE_LIMIT)
        self._lines = 0
        self._copy = open(copy_path, "ab")  # noqa: SIM115 - held for the run, closed by close()

    def _find(self) -> str | None:
        found = rollout_files(self.sessions_dir)
        return max(found, key=lambda p: (os.path.getmtime(p), p)) if found else None

    def poll(self) -> tuple[tuple[int, bytes], ...]:
        """The complete lines written since the last poll, each with its 1-based line number,
        terminators removed; each is in the retained copy before this returns."""
        if self.path is None:
            self.path = self._find()
            if self.path is None:
                return ()
        lines: list[tuple[int, bytes]] = []
        try:
            with open_regular(self.path) as handle:
                handle.seek(self._offset)
                for chunk in iter(lambda: handle.read(READ_CHUNK), b""):
                    self._offset += len(chunk)
                    for line in self._cutter.feed(chunk):
                        raw = line.removesuffix(b"\n")
                        self._copy.write(raw + b"\n")
                        self._lines += 1
                        lines.append((self._lines, raw.removesuffix(b"\r")))
        except OSError:
            pass
        self._copy.flush()
        return tuple(lines)

    def close(self) -> None:
        """Close the retained copy."""
        self._copy.close()


class SubAgentRollouts:
    """The rollouts a run's sub-agents write beside the main one (Codex 0.171.0 gives each spawned
    agent its own thread and file): each one found once the main rollout is known is tailed like it
    and copied to ``copy_dir/<its name>``."""

    def __init__(self, sessions_dir: str, copy_dir: str) -> None:
        self.sessions_dir = sessions_dir
        self.copy_dir = copy_dir
        self.tails: dict[str, RolloutTail] = {}

    def poll(self, main: str | None) -> tuple[tuple[str, int, bytes], ...]:
        """Each sub-agent rollout's new complete lines as (its path, line number, line)."""
        if main is None:
            return ()
        for path in sorted(set(rollout_files(self.sessions_dir)) - {main} - set(self.tails)):
            os.makedirs(self.copy_dir, mode=0o700, exist_ok=True)
            self.tails[path] = RolloutTail(self.sessions_dir, os.path.join(self.copy_dir, os.path.basename(path)), path)
        return tuple((path, number, raw) for path, tail in self.tails.items() for number, raw in tail.poll())

    def close(self) -> None:
        """Close every retained copy."""
        for tail in self.tails.values():
            tail.close()
