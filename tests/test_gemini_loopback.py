"""``--credentials loopback`` on gemini (docs/adapters/gemini.md#credentials): the key stays in the custody
``~/.gemini/.env``; the child holds a per-run placeholder in ``GEMINI_API_KEY``; the route proxy admits only the
run's model's methods carrying that placeholder and attaches the real key as ``x-goog-api-key``, confined or not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codex_process import of
from gemini_process import GEMINI, PINNED, finish, start_run

from metaharness.pure.gemini.adapter import custody_token
from metaharness.pure.loopback import RequestHead, carries_placeholder, forward_headers

pytestmark = pytest.mark.skipif(GEMINI is None, reason=f"the pinned Gemini CLI {PINNED} is not on the child's PATH")

TOKEN = "AIza-test-custody-key-0123456789abcdef"


@pytest.mark.parametrize("confine", ["on", "off"])
@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_the_custody_key_is_attached_upstream_and_the_child_never_holds_it(
    emulator: str, confine: str, tmp_path: Path, own_home: Path
) -> None:
    (own_home / ".gemini").mkdir()
    (own_home / ".gemini" / ".env").write_text(f'# the key\nexport GEMINI_API_KEY="{TOKEN}"\n')
    work = tmp_path / "work"
    work.mkdir()
    retained = tmp_path / "retained"
    retained.mkdir()
    options = {"prompt": "do the task", "decisions": "observe", "credentials": "loopback", "model_endpoint": emulator,
               "cwd": str(work), "confine": confine, "retain_dir": str(retained)}  # fmt: skip
    events, code, stderr = finish(start_run(options))
    assert code == 0 and events[-1]["reason"] == "completed", stderr
    assert (work / "note.md").exists()
    requests = [json.loads(line) for line in (tmp_path / "emulator.jsonl").read_text().splitlines()]
    assert requests and {(r["credential_header"], r["credential_length"]) for r in requests} == {
        ("x-goog-api-key", len(TOKEN))}
    assert all(r["path"] == "/v1beta/models/gemini-2.5-pro:streamGenerateContent" for r in requests)
    started = of(events, "session.started")[0]
    (h6,) = [row for row in started["hermetic"]["imposed"] if row["row"] == "H6"]
    assert h6["how"].startswith("the child held a per-run placeholder") and ".gemini/.env" in h6["how"]
    assert TOKEN not in json.dumps(events)
    for path in retained.rglob("*"):
        assert not path.is_file() or TOKEN.encode() not in path.read_bytes(), path


def test_the_custody_file_is_read_as_gemini_reads_its_env() -> None:
    assert custody_token(b"GEMINI_API_KEY=one\nGEMINI_API_KEY='two'\n").unwrap() == "two"
    assert custody_token(b"export GEMINI_API_KEY = \"k\"\n").unwrap() == "k"
    for unreadable in (b"", b"# GEMINI_API_KEY=commented\n", b"GOOGLE_API_KEY=other\n", b"GEMINI_API_KEY=\n", b"\xff"):
        assert custody_token(unreadable).failure().code == "loopback-custody-unreadable"


def test_the_key_travels_in_the_header_the_placeholder_came_in() -> None:
    head = RequestHead("POST", "/v1beta/models/m:streamGenerateContent?alt=sse",
                       (("Host", "127.0.0.1"), ("x-goog-api-key", "mh-run-x"), ("Content-Type", "application/json")))
    assert carries_placeholder(head, "mh-run-x") and not carries_placeholder(head, "mh-run-y")
    headers = forward_headers(head, "https://generativelanguage.googleapis.com", "AIza-real", 7)
    names = [name.lower() for name, _ in headers]
    assert ("x-goog-api-key", "AIza-real") in headers and "authorization" not in names
    assert names.count("x-goog-api-key") == 1 and "mh-run-x" not in json.dumps(headers)
    bearer = RequestHead("POST", "/v1/messages", (("Authorization", "Bearer mh-run-x"),))
    assert ("Authorization", "Bearer AIza-real") in forward_headers(bearer, "https://api.anthropic.com", "AIza-real", 0)


@pytest.mark.parametrize("emulator", ["gemini-shell-steps"], indirect=True)
def test_the_custody_file_is_not_in_the_view_and_its_key_never_reaches_the_model(
    emulator: str, tmp_path: Path, own_home: Path
) -> None:
    (own_home / ".gemini").mkdir()
    custody = own_home / ".gemini" / ".env"
    custody.write_text(f"GEMINI_API_KEY={TOKEN}\n")
    work = tmp_path / "work"
    work.mkdir()
    options = {"prompt": f"do the steps\n$ cat {custody}; echo key=$GEMINI_API_KEY\n", "decisions": "observe",
               "credentials": "loopback", "model_endpoint": emulator, "cwd": str(work)}  # fmt: skip
    events, code, stderr = finish(start_run(options))
    assert code == 0, stderr
    (result,) = of(events, "tool.result")
    output = json.dumps(result["content"])
    assert "No such file" in output and "key=mh-run-" in output and TOKEN not in output
    assert TOKEN not in (tmp_path / "emulator.jsonl").read_text().replace('"credential_length"', "")
    (h6,) = [row for row in of(events, "session.started")[0]["hermetic"]["imposed"] if row["row"] == "H6"]
    assert h6["how"].endswith("; the custody file is outside the child's view")
