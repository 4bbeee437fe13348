"""codex's rollout tailer never follows a name the child can write (docs/adapters/common.md#child-trees):
rollout-named links, a linked date folder and a hard link to the caller's ``auth.json`` are never read,
so no credential reaches the rollout copies ``--retain-dir`` keeps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metaharness.shell.child_tree import ChildDir
from metaharness.shell.codex.rollout import RolloutTail, SubAgentRollouts, rollout_files

KEY = "sk-caller-key-never-retained-0123456789"


def planted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """codex's home with one real rollout and every planted shape beside it; the scratch root; the day folder."""
    caller = tmp_path / "caller" / ".codex"
    (caller / "sessions" / "01" / "01").mkdir(parents=True)
    (caller / "auth.json").write_text(f'{{"OPENAI_API_KEY":"{KEY}"}}\n')
    (caller / "sessions" / "01" / "01" / "rollout-b.jsonl").write_text(f'{{"key":"{KEY}"}}\n')
    scratch = tmp_path / "scratch"
    day = scratch / "codex-home" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    (day / "rollout-2026-12-01T00-00-00-real.jsonl").write_text('{"type":"session_meta"}\n')
    (day / "rollout-2099-01-01T00-00-00-link.jsonl").symlink_to(caller / "auth.json")
    os.link(caller / "auth.json", day / "rollout-2099-01-01T00-00-01-hard.jsonl")
    (day / "rollout-2099-01-01T00-00-02-dir.jsonl").mkdir()
    os.mkfifo(day / "rollout-2099-01-01T00-00-03-fifo.jsonl")
    (scratch / "codex-home" / "sessions" / "2099").symlink_to(caller / "sessions")
    (scratch / "codex-home" / "sessions" / "2026" / "11").symlink_to(caller / "sessions" / "01")
    return scratch / "codex-home", scratch, day


def test_only_the_regular_rollout_with_one_name_is_found_and_tailed(tmp_path: Path) -> None:
    home_path, scratch_path, _day = planted(tmp_path)
    home, scratch = ChildDir.open(str(home_path)), ChildDir.open(str(scratch_path))
    try:
        assert list(rollout_files(home)) == ["2026/12/01/rollout-2026-12-01T00-00-00-real.jsonl"]
        tail = RolloutTail.made(home, scratch, "rollout.jsonl")
        assert tail.poll() == ((1, b'{"type":"session_meta"}'),)
        assert tail.path is not None and tail.path.endswith("real.jsonl")
        subs = SubAgentRollouts(home, scratch, "sub-agents")
        assert subs.poll(tail.path, frozenset()) == ()
        tail.close()
        subs.close()
    finally:
        home.close()
        scratch.close()
    kept = b"".join(
        path.read_bytes() for path in scratch_path.rglob("*") if path.is_file() and "codex-home" not in str(path)
    )
    assert KEY.encode() not in kept
    assert (scratch_path / "rollout.jsonl").read_bytes() == b'{"type":"session_meta"}\n'


def test_the_rollout_held_open_is_read_on_after_its_name_is_swapped_for_a_link(tmp_path: Path) -> None:
    home_path, scratch_path, day = planted(tmp_path)
    real = day / "rollout-2026-12-01T00-00-00-real.jsonl"
    home, scratch = ChildDir.open(str(home_path)), ChildDir.open(str(scratch_path))
    try:
        tail = RolloutTail.made(home, scratch, "rollout.jsonl")
        assert len(tail.poll()) == 1
        with real.open("ab") as rollout:
            rollout.write(b'{"type":"turn_context"}\n')
            real.rename(day / "moved.jsonl")
            real.symlink_to(tmp_path / "caller" / ".codex" / "auth.json")
            rollout.write(b'{"type":"event_msg"}\n')
        assert [raw for _n, raw in tail.poll()] == [b'{"type":"turn_context"}', b'{"type":"event_msg"}']
        tail.close()
    finally:
        home.close()
        scratch.close()
    assert KEY.encode() not in (scratch_path / "rollout.jsonl").read_bytes()


def test_a_planted_rollout_copy_fails_the_tail_before_the_spawn(tmp_path: Path) -> None:
    home_path, scratch_path, _day = planted(tmp_path)
    (scratch_path / "rollout.jsonl").symlink_to(tmp_path / "caller" / ".codex" / "auth.json")
    home, scratch = ChildDir.open(str(home_path)), ChildDir.open(str(scratch_path))
    try:
        with pytest.raises(OSError, match=r"rollout.jsonl is already there \(a symbolic link\)"):
            RolloutTail.made(home, scratch, "rollout.jsonl")
    finally:
        home.close()
        scratch.close()
    assert (tmp_path / "caller" / ".codex" / "auth.json").read_text() == f'{{"OPENAI_API_KEY":"{KEY}"}}\n'


THREAD = "01a2342b-b20d-7f01-b238-f6554cb94b8a"
OTHER = "01a2342b-b20d-7f01-b238-f6554cb94b8b"


def test_only_the_one_rollout_of_a_thread_the_record_named_is_read_as_a_sub_agents(tmp_path: Path) -> None:
    """A rollout-named file no record names is never tailed, nor are two that name the same thread."""
    home_path, scratch_path, day = planted(tmp_path)
    (day / f"rollout-2026-12-01T00-00-01-{THREAD}.jsonl").write_text('{"sub":"named"}\n')
    (day / f"rollout-2026-12-01T00-00-02-{OTHER}.jsonl").write_text('{"sub":"unnamed"}\n')
    twice = "01a2342b-b20d-7f01-b238-f6554cb94b8c"
    (day / f"rollout-2026-12-01T00-00-03-{twice}.jsonl").write_text('{"sub":"one"}\n')
    (day.parent / "02").mkdir()
    (day.parent / "02" / f"rollout-2026-12-02T00-00-03-{twice}.jsonl").write_text('{"sub":"two"}\n')
    later = os.stat(day.parent / "02").st_mtime + 60
    os.utime(day / "rollout-2026-12-01T00-00-00-real.jsonl", (later, later))
    home, scratch = ChildDir.open(str(home_path)), ChildDir.open(str(scratch_path))
    try:
        tail = RolloutTail.made(home, scratch, "rollout.jsonl")
        tail.poll()
        assert tail.path is not None and tail.path.endswith("real.jsonl")
        subs = SubAgentRollouts(home, scratch, "sub-agents")
        assert subs.poll(tail.path, frozenset()) == ()
        lines = subs.poll(tail.path, frozenset({THREAD, twice}))
        assert [line for _, _, line in lines] == [b'{"sub":"named"}']
        assert subs.poll(tail.path, frozenset({THREAD, twice})) == ()
        tail.close()
        subs.close()
    finally:
        home.close()
        scratch.close()
    assert sorted(p.name for p in (scratch_path / "sub-agents").iterdir()) == [f"rollout-2026-12-01T00-00-01-{THREAD}.jsonl"]
