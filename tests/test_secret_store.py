"""``--api-key-secret NAME`` against a real freedesktop Secret Service (docs/loop.md#credentials,
docs/hermetic.md#credentials, docs/adapters/b10x.md#environment).

Each fixture starts a private session bus (``dbus-daemon``) and ``gnome-keyring-daemon`` on it with its login
collection unlocked from a password on stdin; items are stored with libsecret's ``secret-tool`` and locked with
``dbus-send``, so the loop's own client is checked against other clients' view of the store. The loop runs as a
real process against the real emulator; ``metaharness run b10x`` runs the loop through a PATH wrapper that keeps
the child's environment and a copy of its scratch tree.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from closing_endpoint import CLOSING_ENDPOINT
from helpers.emulator import running_emulator
from returns.result import Failure, Success

from metaharness.pure.loop.credential import choose_secret_item, session_bus_address
from metaharness.pure.loop.plan import CredentialChoice
from metaharness.shell.loop.credentials import CredentialSource

BIN = Path(sys.executable).parent
HARNESS = str(BIN / "b10x-harness")
METAHARNESS = str(BIN / "metaharness")
KEY = "sk-store-KEY-7f3a9c0d5e1b2468"
DECOY = "sk-decoy-environment-key-should-never-travel"
PROGRAMS = ("dbus-daemon", "gnome-keyring-daemon", "secret-tool", "dbus-send")
MISSING = [name for name in PROGRAMS if shutil.which(name) is None]
needs_service = pytest.mark.skipif(
    bool(MISSING), reason=f"no Secret Service here: {', '.join(MISSING)} not installed (Debian dbus, gnome-keyring, libsecret-tools)"
)
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>{deny}</policy>
</busconfig>
"""
DENY_SEARCH = (
    '<deny send_destination="org.freedesktop.secrets" send_interface="org.freedesktop.Secret.Service"'
    ' send_member="SearchItems"/>'
)


class SecretService:
    """A private session bus (no service activation) with gnome-keyring's Secret Service on it unless
    ``with_keyring`` is false; ``deny`` is a bus policy rule added for the session; ``stop`` reaps both."""

    def __init__(self, root: Path, with_keyring: bool = True, deny: str = "") -> None:
        self.runtime = root / "run"
        self.runtime.mkdir(mode=0o700, parents=True)
        home = root / "keyring-home"
        home.mkdir()
        socket = self.runtime / "bus"
        config = root / "bus.conf"
        config.write_text(BUS_CONFIG.format(socket=socket, deny=deny))
        self.bus = subprocess.Popen(
            ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        assert self.bus.stdout is not None
        self.address = self.bus.stdout.readline().decode().strip()
        assert self.address, f"dbus-daemon did not start with {config}"
        self.env = {"PATH": os.environ["PATH"], "DBUS_SESSION_BUS_ADDRESS": self.address, "XDG_RUNTIME_DIR": str(self.runtime)}
        self.keyring: subprocess.Popen[bytes] | None = None
        if with_keyring:
            self.keyring = subprocess.Popen(
                ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={**self.env, "HOME": str(home), "XDG_DATA_HOME": str(home / "data")},
            )
            assert self.keyring.stdin is not None
            self.keyring.stdin.write(b"test-collection-password")
            self.keyring.stdin.close()
            try:
                self._await_service()
            except AssertionError:
                self.stop()
                raise

    def _await_service(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            answer = subprocess.run(
                ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                 "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"],
                env=self.env, capture_output=True, text=True, check=False,
            )
            if "boolean true" in answer.stdout:
                return
            time.sleep(0.05)
        raise AssertionError("gnome-keyring-daemon did not take org.freedesktop.secrets within 60 s")

    def store(self, value: str | bytes, **attributes: str) -> None:
        pairs = [part for pair in attributes.items() for part in pair]
        raw = value.encode() if isinstance(value, str) else value
        subprocess.run(["secret-tool", "store", "--label=b10x test", *pairs], input=raw, env=self.env, check=True, timeout=30)

    def lock_default_collection(self) -> None:
        subprocess.run(
            ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
             "org.freedesktop.Secret.Service.Lock", "array:objpath:/org/freedesktop/secrets/aliases/default"],
            env=self.env, capture_output=True, check=True, timeout=30,
        )

    def stop(self) -> None:
        for process in (self.keyring, self.bus):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=10)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecretService]:
    service = SecretService(tmp_path_factory.mktemp("secret-service"))
    try:
        service.store(f"  {KEY}\n", service="b10x-harness", name="openai")
        service.store("first", service="b10x-harness", name="twice", copy="1")
        service.store("second", service="b10x-harness", name="twice", copy="2")
        service.store(" \n", service="b10x-harness", name="blank")
        service.store(b"sk-\xff\xfe", service="b10x-harness", name="latin")
        service.store(KEY, service="another-program", name="elsewhere")
        yield service
    finally:
        service.stop()


def loop(env: dict[str, str], workspace: Path, *args: str, base_url: str = CLOSING_ENDPOINT + "/v1") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS, "run", "--json", "--no-session", "--base-url", base_url, "--model", "b10x-emulated",
         "--workspace", str(workspace), *args, "--input", "hi"],
        env=env, capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The reason of the single ``refused`` line; exit 1, the same reason on stderr, no traceback."""
    assert done.returncode == 1, done.stderr
    [line] = done.stdout.splitlines()
    record = json.loads(line)
    assert list(record) == ["kind", "reason"] and record["kind"] == "refused"
    assert done.stderr == f"error: {record['reason']}\n"
    return str(record["reason"])


# The pure decisions.

def test_the_bus_is_the_address_variable_else_the_runtime_socket_else_refused() -> None:
    both = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/a/bus", "XDG_RUNTIME_DIR": "/r"}
    assert session_bus_address(both, True, "w") == Success("unix:path=/a/bus")
    assert session_bus_address({"XDG_RUNTIME_DIR": "/r/"}, True, "w") == Success("unix:path=/r/bus")
    assert session_bus_address({"DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": "/r"}, False, "w") == Failure(
        "w: no session bus to reach the Secret Service (DBUS_SESSION_BUS_ADDRESS is unset and /r/bus is not a socket)"
    )
    assert session_bus_address({}, False, "w") == Failure(
        "w: no session bus to reach the Secret Service (DBUS_SESSION_BUS_ADDRESS is unset and XDG_RUNTIME_DIR is unset)"
    )


def test_exactly_one_unlocked_item_is_chosen() -> None:
    where = "--api-key-secret k"
    assert choose_secret_item([("/i/1", False)], "k", where) == Success("/i/1")
    assert choose_secret_item([], "k", where) == Failure(
        "--api-key-secret k: no Secret Service item has the attributes service=b10x-harness, name=k"
    )
    assert choose_secret_item([("/i/1", False), ("/i/2", True)], "k", where) == Failure(
        "--api-key-secret k: 2 Secret Service items have the attributes service=b10x-harness, name=k; exactly one must"
    )
    assert choose_secret_item([("/i/1", True)], "k", where) == Failure(
        "--api-key-secret k: the Secret Service item is in a locked collection; unlock it first (b10x-harness never prompts)"
    )


def test_a_run_child_is_not_handed_the_way_to_the_bus() -> None:
    source = CredentialSource(CredentialChoice("api-key", "secret-store", "openai", None), "value")
    assert source.hidden_variables() == ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")
    assert source.choice is not None and source.choice.record_name == "api-key:secret-store"


# The loop against the real store and the real emulator.

@needs_service
@pytest.mark.parametrize(("wire", "header"), [("openai-responses", "authorization"), ("anthropic-messages", "x-api-key")])
def test_the_loop_reads_the_key_from_the_store_and_sends_it(
    store: SecretService, tmp_path: Path, wire: str, header: str
) -> None:
    record = tmp_path / "record.jsonl"
    with running_emulator("--scenario", "text", "--record", str(record)) as (base_url, _):
        done = loop(store.env, tmp_path, "--wire", wire, "--api-key-secret", "openai", base_url=base_url)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["credential_source"] == "api-key:secret-store"
    assert lines[-1] == {"kind": "finished", "stop": {"kind": "completed"}, "turns": 1}
    [request] = [json.loads(line) for line in record.read_text().splitlines()]
    assert (request["credential_header"], request["credential_length"]) == (header, len(KEY))
    assert KEY not in done.stdout + done.stderr + record.read_text()


@needs_service
def test_the_runtime_directory_alone_finds_the_bus(store: SecretService, tmp_path: Path) -> None:
    env = {key: value for key, value in store.env.items() if key != "DBUS_SESSION_BUS_ADDRESS"}
    record = tmp_path / "record.jsonl"
    with running_emulator("--scenario", "text", "--record", str(record)) as (base_url, _):
        done = loop(env, tmp_path, "--api-key-secret", "openai", base_url=base_url)
    assert done.returncode == 0, done.stderr
    [request] = [json.loads(line) for line in record.read_text().splitlines()]
    assert request["credential_length"] == len(KEY)


@needs_service
def test_a_run_child_sees_neither_bus_variable_nor_the_key(store: SecretService, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    with running_emulator("--scenario", "flat-run", "--record", str(record), "--record-bodies") as (base_url, _):
        done = loop(store.env, tmp_path, "--api-key-secret", "openai", "--allow-program", "env", "--yes", base_url=base_url)
    assert done.returncode == 0, done.stderr
    first, second = [json.loads(line) for line in record.read_text().splitlines()]
    assert first["answer"] == "call:run" and second["tool_results"] == 1
    replayed = json.dumps(second["body"])
    assert f"PATH={os.environ['PATH']}" in replayed
    assert "DBUS_SESSION_BUS_ADDRESS" not in replayed and "XDG_RUNTIME_DIR" not in replayed and KEY not in replayed


@needs_service
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("absent", "--api-key-secret absent: no Secret Service item has the attributes service=b10x-harness, name=absent"),
        ("elsewhere", "--api-key-secret elsewhere: no Secret Service item has the attributes service=b10x-harness, name=elsewhere"),
        ("twice", "--api-key-secret twice: 2 Secret Service items have the attributes service=b10x-harness, name=twice; exactly one must"),
        ("blank", "the credential at --api-key-secret blank is empty"),
        ("latin", "--api-key-secret latin is not UTF-8"),
    ],
)
def test_item_refusals(store: SecretService, tmp_path: Path, name: str, reason: str) -> None:
    assert refused(loop(store.env, tmp_path, "--api-key-secret", name)) == reason


@needs_service
def test_a_locked_collection_is_refused_and_never_unlocked(tmp_path: Path) -> None:
    service = SecretService(tmp_path / "locked")
    try:
        service.store(KEY, service="b10x-harness", name="openai")
        service.lock_default_collection()
        reason = refused(loop(service.env, tmp_path, "--api-key-secret", "openai"))
        assert reason == (
            "--api-key-secret openai: the Secret Service item is in a locked collection; unlock it first"
            " (b10x-harness never prompts)"
        )
        again = refused(loop(service.env, tmp_path, "--api-key-secret", "openai"))
        assert again == reason
    finally:
        service.stop()


@needs_service
def test_a_bus_without_a_secret_service_is_refused(tmp_path: Path) -> None:
    bare = SecretService(tmp_path / "bare", with_keyring=False)
    try:
        reason = refused(loop(bare.env, tmp_path, "--api-key-secret", "openai"))
    finally:
        bare.stop()
    assert reason.startswith("--api-key-secret openai: no Secret Service answers on the session bus: ")
    assert "org.freedesktop.secrets" in reason


@needs_service
def test_an_error_answer_is_refused_by_its_name(tmp_path: Path) -> None:
    guarded = SecretService(tmp_path / "guarded", deny=DENY_SEARCH)
    try:
        guarded.store(KEY, service="b10x-harness", name="openai")
        reason = refused(loop(guarded.env, tmp_path, "--api-key-secret", "openai"))
    finally:
        guarded.stop()
    assert reason == "--api-key-secret openai: the Secret Service refused the read: org.freedesktop.DBus.Error.AccessDenied"


def test_no_bus_and_an_unreachable_bus_are_refused(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    assert refused(loop(env, tmp_path, "--api-key-secret", "openai")) == (
        "--api-key-secret openai: no session bus to reach the Secret Service"
        " (DBUS_SESSION_BUS_ADDRESS is unset and XDG_RUNTIME_DIR is unset)"
    )
    gone = tmp_path / "gone"
    env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={gone}"
    assert refused(loop(env, tmp_path, "--api-key-secret", "openai")) == (
        f"--api-key-secret openai: the session bus at unix:path={gone} cannot be reached: No such file or directory"
    )


def test_a_missing_client_is_refused_by_name(tmp_path: Path) -> None:
    blocked = "import sys; sys.modules['secretstorage'] = None; from metaharness.shell.loop_cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", blocked, "run", "--json", "--no-session", "--base-url", "http://127.0.0.1:9/v1",
         "--model", "m", "--workspace", str(tmp_path), "--api-key-secret", "openai", "--input", "hi"],
        env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=60, check=False,
    )
    assert refused(done) == "--api-key-secret openai needs the Secret Service client `secretstorage`, which is not installed"


# metaharness run b10x: the loop reads the key itself; no key variable reaches the child.

WRAPPER = """#!/bin/sh
if [ "$1" = run ]; then
    cat /proc/$$/environ > {dump}/child-environ
    {loop} "$@"
    status=$?
    for attempt in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        [ $status -ne 0 ] || grep -q '"kind":"finished"' "$(dirname "$XDG_CONFIG_HOME")/loop.jsonl" && break
        sleep 0.25
    done
    cp -R "$(dirname "$XDG_CONFIG_HOME")" {dump}/scratch
    exit $status
fi
exec {loop} "$@"
"""


@pytest.fixture
def wrapped_home(tmp_path: Path) -> tuple[Path, Path]:
    home, dump = tmp_path / "home", tmp_path / "dump"
    (home / ".local" / "bin").mkdir(parents=True)
    dump.mkdir()
    wrapper = home / ".local" / "bin" / "b10x-harness"
    wrapper.write_text(WRAPPER.format(dump=dump, loop=HARNESS))
    wrapper.chmod(0o755)
    return home, dump


def metaharness(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [METAHARNESS, "run", "b10x", "--decisions", "observe", *args, "-p", "write the note", "--model", "b10x-emulated"],
        env={**env, "HOME": str(home), "OPENAI_API_KEY": DECOY},
        capture_output=True, timeout=90, check=False, stdin=subprocess.DEVNULL,
    )


def every_byte(root: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file())


@needs_service
def test_metaharness_run_forwards_only_the_bus_variables_and_the_loop_reads_the_key(
    store: SecretService, wrapped_home: tuple[Path, Path], tmp_path: Path
) -> None:
    home, dump = wrapped_home
    record = tmp_path / "record.jsonl"
    with running_emulator("--scenario", "flat-write", "--record", str(record)) as (base_url, _):
        done = metaharness(
            home, store.env, "--credentials", "api-key", "--api-key-secret", "openai",
            "--model-endpoint", base_url, "--confine", "off",
        )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [started] = [e for e in events if e["event"] == "session.started"]
    assert started["credential_source"] == "api-key:secret-store"
    imposed = {row["row"]: row["how"] for row in started["hermetic"]["imposed"]}
    assert imposed["H3"] == "environment constructed: DBUS_SESSION_BUS_ADDRESS, PATH, XDG_CONFIG_HOME, XDG_RUNTIME_DIR"
    assert imposed["H6"] == "the loop reads key openai from the secret store; no key variable is in the child's environment"
    [ended] = [e for e in events if e["event"] == "session.ended"]
    assert (ended["terminal_reason"], ended["is_error"]) == ("completed", False)
    environ = dict(entry.split("=", 1) for entry in (dump / "child-environ").read_text().split("\0") if entry)
    assert set(environ) == {"PATH", "XDG_CONFIG_HOME", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"}
    assert (environ["DBUS_SESSION_BUS_ADDRESS"], environ["XDG_RUNTIME_DIR"]) == (store.address, str(store.runtime))
    requests = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r["credential_length"] for r in requests] == [len(KEY), len(KEY)]
    assert (dump / "scratch" / "work" / "note.md").read_text() == "written by the harness\n"
    transcript = [json.loads(line) for line in (dump / "scratch" / "loop.jsonl").read_text().splitlines()]
    assert transcript[0]["credential_source"] == "api-key:secret-store" and transcript[-1]["kind"] == "finished"
    for secret in (KEY.encode(), DECOY.encode()):
        for place in (done.stdout, done.stderr, every_byte(dump), record.read_bytes()):
            assert secret not in place


@needs_service
def test_a_confined_loop_reads_its_key_over_the_session_bus_bound_into_its_view(
    store: SecretService, tmp_path: Path
) -> None:
    """The wrapper above dumps outside the view, so that test runs unconfined; confined, the loop itself
    reaches the store through the bus socket bound into the view and the key reaches the provider."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(HARNESS)
    record = tmp_path / "record.jsonl"
    with running_emulator("--scenario", "flat-write", "--record", str(record)) as (base_url, _):
        done = metaharness(
            home, store.env, "--credentials", "api-key", "--api-key-secret", "openai", "--model-endpoint", base_url,
            "--hermetic", "on",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    requests = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r["credential_length"] for r in requests] == [len(KEY), len(KEY)]
    report = done.stderr.decode()
    assert "  H12  ok  gating   effect" in report and "  H13  ok  gating   effect" in report


@needs_service
def test_metaharness_run_with_a_missing_item_reports_the_loops_refusal(
    store: SecretService, wrapped_home: tuple[Path, Path]
) -> None:
    home, _ = wrapped_home
    done = metaharness(home, store.env, "--credentials", "api-key", "--api-key-secret", "absent", "--model-endpoint",
                       CLOSING_ENDPOINT + "/v1")
    assert done.returncode == 3
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert (events[-1]["reason"], events[-1]["process"]) == ("error", {"kind": "exited", "code": 1})
    refusals = [e for e in events if e.get("code") == "loop-refused"]
    assert [e["message"] for e in refusals] == [
        "--api-key-secret absent: no Secret Service item has the attributes service=b10x-harness, name=absent"
    ]
    assert DECOY.encode() not in done.stdout + done.stderr
