"""``--retain-dir`` copies as every kind makes them (spec 10 §4.2): files and trees under
``DIR/<run id>/``, FIFOs and absent sources skipped, a failure one ``RETAIN_FAILED`` naming the target."""

from __future__ import annotations

import os
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
    assert retain_copies(str(kept), "run-1", copies) == ()
    names = sorted(str(p.relative_to(kept / "run-1")) for p in (kept / "run-1").rglob("*") if p.is_file())
    assert names == ["codex-home/config.toml", "hook-channel/requests/1.json", "loop.jsonl"]
    assert not (kept / "run-1" / "hook-channel" / "doorbell").exists()


def test_no_retain_dir_copies_nothing_and_a_failed_copy_is_one_warning(tmp_path: Path) -> None:
    assert retain_copies(None, "run-1", [(str(tmp_path), "x")]) == ()
    (tmp_path / "run-1").write_text("a file where the run's directory goes")
    (warning,) = retain_copies(str(tmp_path), "run-1", [(str(tmp_path / "run-1"), "x")])
    assert warning.code == "RETAIN_FAILED" and warning.message.startswith(f"{tmp_path / 'run-1'}: ")
