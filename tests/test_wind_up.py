"""``--retain-dir`` copies as every kind makes them (docs/cli.md#run): files and trees under
``DIR/<run id>/``, FIFOs, links and absent sources skipped, a failure one ``RETAIN_FAILED`` naming the target;
an existing ``DIR/<run id>`` (an earlier run under the same id, a planted link) is never written into."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from metaharness.shell.wind_up import retain_copies


def test_files_and_trees_are_kept_at_their_places_and_fifos_and_absent_sources_skipped(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    (scratch / "hook-channel" / "requests").mkdir(parents=True)
    (scratch / "hook-channel" / "requests" / "1.json").write_text("{}")
    os.mkfifo(scratch / "hook-channel" / "doorbell")
    (scratch / "record.jsonl").write_text("line\n")
    kept = tmp_path / "kept"
    kept.mkdir()
    copies = [
        (str(scratch / "record.jsonl"), "loop.jsonl"),
        (str(scratch / "hook-channel"), "hook-channel"),
        (str(scratch / "loopback.json"), "loopback.json"),
        (str(scratch / "record.jsonl"), "codex-home/config.toml"),
    ]
    assert retain_copies(str(kept), "run-1", str(scratch), copies) == ()
    names = sorted(str(p.relative_to(kept / "run-1")) for p in (kept / "run-1").rglob("*") if p.is_file())
    assert names == ["codex-home/config.toml", "hook-channel/requests/1.json", "loop.jsonl"]
    assert not (kept / "run-1" / "hook-channel" / "doorbell").exists()


def test_no_retain_dir_copies_nothing_and_a_failed_copy_is_one_warning(tmp_path: Path) -> None:
    assert retain_copies(None, "run-1", str(tmp_path), [(str(tmp_path), "x")]) == ()
    (tmp_path / "run-1").write_text("a file where the run's directory goes")
    (warning,) = retain_copies(str(tmp_path), "run-1", str(tmp_path), [(str(tmp_path / "run-1"), "x")])
    assert warning.code == "RETAIN_FAILED" and warning.message.startswith(f"{tmp_path / 'run-1'}: ")


def test_no_link_is_followed_no_earlier_run_is_overwritten_and_copies_are_private(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    (scratch / "tree").mkdir(parents=True)
    (scratch / "record.jsonl").write_text("line\n")
    (scratch / "record.jsonl").chmod(0o644)
    secret = tmp_path / "secret"
    secret.write_text("not the run's\n")
    (scratch / "planted.jsonl").symlink_to(secret)
    (scratch / "tree" / "inner").symlink_to(secret)
    kept = tmp_path / "kept"
    kept.mkdir()
    copies = [
        (str(scratch / "record.jsonl"), "loop.jsonl"),
        (str(scratch / "planted.jsonl"), "planted.jsonl"),
        (str(scratch / "tree"), "tree"),
    ]
    assert retain_copies(str(kept), "run-1", str(scratch), copies) == ()
    run = kept / "run-1"
    assert sorted(str(p.relative_to(run)) for p in run.rglob("*")) == ["loop.jsonl"]
    assert stat.S_IMODE(run.stat().st_mode) == 0o700 and stat.S_IMODE((run / "loop.jsonl").stat().st_mode) == 0o600

    (warning,) = retain_copies(str(kept), "run-1", str(scratch), [(str(secret), "loop.jsonl")])
    assert warning.code == "RETAIN_FAILED" and warning.message == f"{run}: File exists"
    assert (run / "loop.jsonl").read_text() == "line\n"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (kept / "run-2").symlink_to(elsewhere)
    (warning,) = retain_copies(str(kept), "run-2", str(scratch), [(str(scratch / "record.jsonl"), "loop.jsonl")])
    assert warning.code == "RETAIN_FAILED" and not os.listdir(elsewhere)


def test_a_link_on_the_way_a_hard_link_and_a_swapped_folder_are_never_copied(tmp_path: Path) -> None:
    """The sources are reached from the scratch root one name at a time: a folder swapped for a link to
    the caller's ``~/.codex``, a hard link to a credential and a rollout-named link keep nothing."""
    scratch, home = tmp_path / "scratch", tmp_path / "home" / ".codex"
    (scratch / "sub-agents").mkdir(parents=True)
    home.mkdir(parents=True)
    (home / "auth.json").write_text('{"OPENAI_API_KEY":"sk-caller"}')
    (home / "config.toml").write_text("model = 'caller'\n")
    (scratch / "codex-home").symlink_to(home)
    os.link(home / "auth.json", scratch / "rollout.jsonl")
    (scratch / "sub-agents" / "rollout-x.jsonl").symlink_to(home / "auth.json")
    (scratch / "sub-agents" / "rollout-y.jsonl").write_text("{}\n")
    kept = tmp_path / "kept"
    kept.mkdir()
    copies = [
        (str(scratch / "rollout.jsonl"), "rollout.jsonl"),
        (str(scratch / "sub-agents"), "sub-agents"),
        (str(scratch / "codex-home" / "config.toml"), "codex-home/config.toml"),
    ]
    assert retain_copies(str(kept), "run-1", str(scratch), copies) == ()
    run = kept / "run-1"
    assert sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file()) == ["sub-agents/rollout-y.jsonl"]
