"""The independent contract validator catches what it must (docs/loop.md#wire-contracts)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from metaharness.shell.contract_check import check_all, check_folder, check_released

VECTORS = Path(__file__).resolve().parent.parent / "vectors" / "provider-wires"
REPO = VECTORS.parent.parent
RESPONSES = VECTORS / "openai-responses" / "2026-11-30"


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "provider-wires" / "openai-responses" / "2026-11-30"
    shutil.copytree(RESPONSES, target)
    return target


def _rewrite_manifest(folder: Path, **changes: object) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(changes)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_shipped_contracts_hold() -> None:
    assert check_all(VECTORS, REPO, lambda wire: None) == []


def test_the_script_exits_zero_on_the_shipped_contracts() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "metaharness.shell.contract_check", str(VECTORS)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "2 contract(s) hold" in result.stdout


def test_a_changed_file_fails_its_digest(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "request.body").write_bytes((folder / "request.body").read_bytes().replace(b"low", b"high"))
    assert check_folder(folder, None) == ["openai-responses/2026-11-30: request.body does not match its sha256"]


def test_a_listed_file_that_is_absent_fails(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "stream-error.sse").unlink()
    problems = check_folder(folder, None)
    assert "openai-responses/2026-11-30: stream-error.sse is listed but absent" in problems


def test_an_unlisted_file_fails(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "stream-extra.sse").write_bytes(b"data: {}\n\n")
    assert check_folder(folder, None) == ["openai-responses/2026-11-30: stream-extra.sse is not listed in the manifest"]


def test_an_inventory_missing_a_used_event_fails(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    _rewrite_manifest(folder, accepted_events=[e for e in manifest["accepted_events"] if e != "response.created"])
    [problem] = check_folder(folder, None)
    assert "response.created" in problem


def test_an_inventory_that_differs_from_the_decoder_fails(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    declared = set(manifest["accepted_events"]) | {"response.queued"}
    [problem] = check_folder(folder, declared)
    assert "response.queued" in problem


def test_a_stream_without_its_events_fails(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    files = {k: v for k, v in manifest["files"].items() if k != "stream-text.events.jsonl"}
    (folder / "stream-text.events.jsonl").unlink()
    _rewrite_manifest(folder, files=files)
    assert check_folder(folder, None) == ["openai-responses/2026-11-30: stream-text.sse has no .events.jsonl"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_a_released_contract_that_changes_fails_even_with_a_fixed_digest(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    folder = repo / "vectors" / "provider-wires" / "openai-responses" / "2026-11-30"
    shutil.copytree(RESPONSES, folder)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "release")
    assert check_released(folder, repo) == []
    body = (folder / "request.body").read_bytes().replace(b"low", b"high")
    (folder / "request.body").write_bytes(body)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["request.body"] = hashlib.sha256(body).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))
    problems = check_released(folder, repo)
    assert any("request.body changed after its release" in p for p in problems)
    assert any("manifest.json changed after its release" in p for p in problems)
