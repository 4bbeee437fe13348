"""The ``b10x-harness`` command line as a real process: banner, flag surface, refusals, credentials, sessions."""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from metaharness.pure.loop.plan import NOT_BUILT

BIN = Path(sys.executable).parent
HARNESS = str(BIN / "b10x-harness")
EMULATOR = str(BIN / "b10x-emulator")
SECRET = "sk-test-SECRET-value-0123456789"
FLAGS = ["--input", "--base-url", "--model", "--wire", "--workspace", "--json", "--quiet", "--execution-path", "--context", "--no-project-instructions", "--approve", "--approve-up-to", "--yes", "--allow-program", "--write-scope", "--scope-announce", "--api-key-file", "--api-key-env", "--api-key-secret", "--oauth-token-file", "--oauth-token-env", "--oauth-token-pointer", "--temperature", "--top-p", "--reasoning-effort", "--max-output-tokens-per-turn", "--max-turns", "--max-output-tokens", "--max-duration-ms", "--prices", "--max-cost-microunits", "--no-session", "--session-dir", "--resume"]


def harness(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS, *args], capture_output=True, text=True, timeout=60, env=env, cwd=cwd, check=False, stdin=subprocess.DEVNULL
    )


def test_version_banner_is_the_installed_distribution() -> None:
    for flag in ("-V", "--version"):
        done = harness(flag)
        assert (done.returncode, done.stdout) == (0, f"b10x-harness {importlib.metadata.version('metaharness')}\n")


def test_run_help_names_every_flag_of_both_lists() -> None:
    done = harness("run", "--help")
    assert done.returncode == 0
    for flag in (*FLAGS, *NOT_BUILT):
        assert flag in done.stdout, flag


def refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1
    [line] = done.stdout.splitlines()
    record = json.loads(line)
    assert list(record) == ["kind", "reason"] and record["kind"] == "refused"
    assert done.stderr.splitlines()[-1] == f"error: {record['reason']}"
    return str(record["reason"])


BASE = ("run", "--json", "--no-session", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")


def test_missing_base_url_is_the_single_refused_line() -> None:
    assert refused(harness("run", "--json", "--model", "m", "--input", "x")) == "--base-url is required"


@pytest.mark.parametrize("flag", [f for f in NOT_BUILT if f != "--substrate-embedded"])
def test_every_not_built_flag_parses_and_refuses_by_name(flag: str) -> None:
    reason = refused(harness(*BASE, flag, "X", "--input", ""))
    assert reason == f"`{flag}` is declared but not built in this implementation"


def test_substrate_embedded_is_a_flag_that_refuses() -> None:
    reason = refused(harness(*BASE, "--substrate-embedded", "--input", ""))
    assert reason == "`--substrate-embedded` is declared but not built in this implementation"


def test_a_parse_error_is_refused_only_under_json() -> None:
    assert refused(harness(*BASE, "--max-turns", "x", "--input", "")).startswith("Invalid value for '--max-turns'")
    plain = harness("run", "--bogus")
    assert plain.returncode == 1 and plain.stdout == "" and plain.stderr.startswith("error: ")


def test_values_may_start_with_a_dash_or_be_empty(tmp_path: Path) -> None:
    reason = refused(harness(*BASE, "--workspace", str(tmp_path / "none"), "--input", "--json"))
    assert reason == f"--workspace {tmp_path / 'none'} is not a directory"


def test_refusals_at_start(tmp_path: Path) -> None:
    plain_caller = harness("run", "--no-session", "--base-url", "http://x", "--model", "m", "--approve", "caller", "--input", "")
    assert plain_caller.returncode == 1 and "--approve caller requires --json" in plain_caller.stderr
    assert refused(harness(*BASE, "--api-key-env", "B10X_UNSET_VARIABLE", "--input", "")) == (
        "--api-key-env B10X_UNSET_VARIABLE names a variable that is not set"
    )
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * (256 * 1024 + 1))
    assert refused(harness(*BASE, "--context", str(big), "--input", "")) == f"--context {big} is over the 262144 byte bound"
    assert refused(harness(*BASE, "--max-cost-microunits", "5", "--input", "")) == "--max-cost-microunits needs --prices"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"source": "t", "as_of": "2026-11-30", "models": {}}))
    assert refused(harness(*BASE, "--prices", str(prices), "--max-cost-microunits", "5", "--input", "")) == (
        f"--max-cost-microunits needs a price for `m` in --prices {prices}"
    )
    empty = tmp_path / "key"
    empty.write_text(" \n")
    assert refused(harness(*BASE, "--api-key-file", str(empty), "--input", "")) == (
        f"the credential at --api-key-file {empty} is empty"
    )


class _EchoCredential(BaseHTTPRequestHandler):
    """Answers 401 with the credential echoed in the body, the worst a provider could do."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = f"bad key {self.headers.get('authorization')} {self.headers.get('x-api-key')}".encode()
        self.send_response(401)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def echo_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoCredential)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


@pytest.mark.parametrize("wire", ["openai-responses", "anthropic-messages"])
def test_a_credential_never_reaches_record_stderr_or_session(wire: str, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    env = {**os.environ, "B10X_TEST_KEY": f"  {SECRET}\n"}
    with echo_server() as base_url:
        done = harness(
            "run", "--json", "--session-dir", str(sessions), "--base-url", base_url, "--model", "m", "--wire", wire,
            "--api-key-env", "B10X_TEST_KEY", "--workspace", str(tmp_path), "--input", "hi", env=env,
        )
    assert done.returncode == 1
    assert json.loads(done.stdout.splitlines()[0])["credential_source"] == "api-key:environment"
    assert "401: bad key" in done.stderr and "[redacted]" in done.stderr
    [session] = list(sessions.iterdir())
    assert SECRET not in done.stdout + done.stderr + session.read_text()


def test_oauth_token_pointer_is_reread_and_sent_as_bearer(tmp_path: Path) -> None:
    token = tmp_path / "auth.json"
    token.write_text(json.dumps({"tokens": {"access_token": SECRET}}))
    record = tmp_path / "record.jsonl"
    emulator = subprocess.Popen([EMULATOR, "--scenario", "text", "--record", str(record)], stdout=subprocess.PIPE, text=True)
    try:
        assert emulator.stdout is not None
        base_url = json.loads(emulator.stdout.readline())["base_url"]
        done = harness(
            "run", "--json", "--no-session", "--base-url", base_url, "--model", "m", "--wire", "anthropic-messages",
            "--oauth-token-file", str(token), "--oauth-token-pointer", "/tokens/access_token",
            "--workspace", str(tmp_path), "--input", "hi",
        )
    finally:
        emulator.send_signal(signal.SIGTERM)
        emulator.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    [request] = [json.loads(line) for line in record.read_text().splitlines()]
    assert request["credential_header"] == "authorization" and request["credential_length"] == len(SECRET)
    assert request["anthropic_beta"] == "oauth-2025-04-20"
    assert json.loads(done.stdout.splitlines()[0])["credential_source"] == "oauth:file"
    assert SECRET not in done.stdout + done.stderr


def test_sessions_are_private_resumable_and_wire_bound(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    emulator = subprocess.Popen([EMULATOR, "--scenario", "text"], stdout=subprocess.PIPE, text=True)
    try:
        assert emulator.stdout is not None
        base_url = json.loads(emulator.stdout.readline())["base_url"]
        common = ("run", "--json", "--session-dir", str(sessions), "--base-url", base_url, "--model", "m")
        first = harness(*common, "--workspace", str(tmp_path), "--input", "one")
        second = harness(*common, "--workspace", str(tmp_path), "--resume", "latest", "--input", "two")
        other = harness(*common, "--wire", "anthropic-messages", "--resume", "latest", "--input", "three")
    finally:
        emulator.send_signal(signal.SIGTERM)
        emulator.wait(timeout=60)
    written = json.loads(first.stdout.splitlines()[-1])
    assert written["kind"] == "session" and json.loads(first.stdout.splitlines()[-2])["kind"] == "finished"
    path = Path(written["path"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(sessions.stat().st_mode) == 0o700
    assert json.loads(second.stdout.splitlines()[-1])["id"] == written["id"]
    stored = json.loads(path.read_text())
    assert list(stored)[:3] == ["version", "id", "wire"] and stored["turns"] == 2
    assert [i["text"] for i in stored["items"] if i["kind"] == "user-text"] == ["one", "two"]
    assert "instruction" not in stored
    assert refused(other) == (
        f"session {written['id']} was recorded on `openai-responses`; pass --wire openai-responses to resume it"
    )


def _refusal_cases(tmp: Path) -> list[tuple[list[str], str]]:
    binary = tmp / "binary.txt"
    binary.write_bytes(b"\xff\xfe")
    bad_prices = tmp / "bad-prices.json"
    bad_prices.write_text("{}")
    return [
        (["--context", str(tmp)], f"--context {tmp} is not a regular file"),
        (["--context", str(binary)], f"--context {binary} is not UTF-8"),
        (["--prices", str(tmp / "none.json")], f"--prices {tmp / 'none.json'} cannot be read: No such file or directory"),
        (["--api-key-file", str(tmp / "none")], f"--api-key-file {tmp / 'none'} cannot be read: No such file or directory"),
        (["--oauth-token-file", str(binary)], f"--oauth-token-file {binary} is not UTF-8"),
        (["--execution-path", "outer"], "--execution-path must be direct or metaharness; got `outer`"),
        (["--scope-announce", "loud"], "--scope-announce must be stated or silent; got `loud`"),
        (["--write-scope", "docs"], "--write-scope expects GLOB=SCOPE with SCOPE one of allowed, partial-only, denied; got `docs`"),
        (["--approve", "maybe"], "--approve must be one of auto, prompt, deny, all, caller; got `maybe`"),
        (["--max-cost-microunits", "-1"], "--max-cost-microunits must not be negative; got -1"),
        (["--reasoning-effort", ""], "--reasoning-effort must not be empty"),
        (["--api-key-file", ""], "--api-key-file must not be empty"),
    ]


def test_every_start_refusal_is_named(tmp_path: Path) -> None:
    for extra, reason in _refusal_cases(tmp_path):
        assert refused(harness(*BASE, *extra, "--input", "")) == reason, extra
    bad_prices = tmp_path / "bad-prices.json"
    assert refused(harness(*BASE, "--prices", str(bad_prices), "--input", "")).startswith(
        f"--prices {bad_prices} is not a prices document: "
    )


def test_session_refusals(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_STATE_HOME")}
    base = ("run", "--json", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert refused(harness(*base, "--input", "", env=env)) == (
        "no session directory: pass --session-dir, set XDG_STATE_HOME or HOME, or pass --no-session"
    )
    assert refused(harness(*base, "--session-dir", str(tmp_path), "--resume", "latest", "--input", "")) == (
        f"--resume latest: no session in {tmp_path}"
    )
    assert refused(harness(*base, "--session-dir", str(tmp_path), "--resume", "abc", "--input", "")) == (
        "--resume abc: cannot be read (No such file or directory)"
    )
