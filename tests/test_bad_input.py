"""A careful user's bad input gets a named refusal, never a traceback or a silent exit (docs/cli.md): a
stdout closed by the caller or by its reader (docs/cli.md#closed-standard-streams), a closed stdin, an
endpoint URL that names no host and port, a ``--workspace`` that is no directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metaharness.shell.vendor_vectors import vector_file

MODULE = (sys.executable, "-m", "metaharness.shell")
FRAME = (sys.executable, "-c", "from metaharness.shell.frame_cli import main; main()")
VIEW = (sys.executable, "-c", "from metaharness.shell.view import main; main()")
LOOP = (sys.executable, "-c", "from metaharness.shell.loop_cli import main; main()")


def closed_stdout(argv: list[str], how: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``argv`` with stdout closed by the caller (``>&-``) or given to a pipe whose reader already left."""
    if how == "caller":
        return subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *argv], capture_output=False, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, cwd=cwd, check=False, timeout=60)  # fmt: skip
    reading, writing = os.pipe()
    os.close(reading)
    try:
        return subprocess.run(argv, stdout=writing, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd,
                              check=False, timeout=60)  # fmt: skip
    finally:
        os.close(writing)


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "loop.jsonl").write_bytes(vector_file("b10x", "golden/loop.jsonl"))
    (tmp_path / "events.jsonl").write_bytes(vector_file("b10x", "golden/loop.expected.jsonl"))
    (tmp_path / "frame.json").write_bytes(vector_file("claude", "hook/frame-deny.json"))
    return tmp_path


@pytest.mark.parametrize("how", ["caller", "reader"])
@pytest.mark.parametrize(
    ("argv", "line"),
    [
        ([*MODULE, "capabilities", "b10x"], b"metaharness: stdout-closed: stdout's reader closed it"),
        ([*MODULE, "capabilities", "gemini", "--render"], b"metaharness: stdout-closed: stdout's reader closed it"),
        ([*MODULE, "replay", "b10x", "loop.jsonl"], b"metaharness: stdout-closed: the event stream's reader closed"),
        ([*MODULE, "project", "events.jsonl"], b"metaharness: stdout-closed: the document's reader closed"),
        ([*FRAME, "explain", "frame.json"], b"metaharness-frame: stdout-closed: "),
        ([*FRAME, "seal", "frame.json"], b"metaharness-frame: stdout-closed: "),
        ([*VIEW, "events.jsonl"], b"metaharness: view-io-failed: the view could not be written"),
    ],
)
def test_a_closed_stdout_is_one_named_refusal(argv: list[str], line: bytes, how: str, inputs: Path) -> None:
    done = closed_stdout(argv, how, inputs)
    assert done.returncode == 2, done.stderr[-600:]
    assert done.stderr.startswith(line) and done.stderr.count(b"\n") == 1, done.stderr[-600:]


@pytest.mark.parametrize("how", ["caller", "reader"])
def test_the_loops_version_on_a_closed_stdout_is_its_error_line(how: str, tmp_path: Path) -> None:
    done = closed_stdout([*LOOP, "--version"], how, tmp_path)
    assert (done.returncode, done.stderr) == (1, b"error: stdout was closed before the version was written\n")


SCRIPTS = Path(sys.executable).parent
PARSE_CLOSED = b"stdout-closed: stdout's reader closed it before the help or version was written whole\n"


@pytest.mark.parametrize("how", ["caller", "reader"])
@pytest.mark.parametrize(
    ("argv", "line"),
    [
        *(([script, flag], f"{prefix}: ".encode() + PARSE_CLOSED)
          for script, prefix in (("metaharness", "metaharness"), ("metaharness-eval", "metaharness-eval"),
                                 ("metaharness-view", "metaharness"), ("metaharness-frame", "metaharness-frame"))
          for flag in ("--help", "--version")),
        (["b10x-emulator", "--help"], b"b10x-emulator: " + PARSE_CLOSED),
        (["b10x-emulator", "--list-scenarios"],
         b"b10x-emulator: stdout-closed: stdout's reader closed it before the scenario list was written whole\n"),
    ],
)  # fmt: skip
def test_help_and_version_into_a_closed_stdout_are_stdout_closed(argv: list[str], line: bytes, how: str, tmp_path: Path) -> None:
    """click answers ``--help`` and ``--version`` while it parses, before any verb, and exited 1 in silence."""
    done = closed_stdout([str(SCRIPTS / argv[0]), *argv[1:]], how, tmp_path)
    assert (done.returncode, done.stderr) == (2, line)


@pytest.mark.parametrize("how", ["caller", "reader"])
def test_the_loops_help_on_a_closed_stdout_is_its_error_line(how: str, tmp_path: Path) -> None:
    """The loop refuses before start with exit 1 and ``error: …`` (docs/loop.md#loop-exit-codes), as its ``--version``."""
    done = closed_stdout([*LOOP, "--help"], how, tmp_path)
    assert (done.returncode, done.stderr) == (1, b"error: stdout was closed before the help was written\n")


def test_a_closed_stdout_never_receives_a_file_the_verb_opens(inputs: Path) -> None:
    """``project --out`` opens its file after the stand-in took descriptor 1, so the document reaches the file
    and nothing of it is written as stdout."""
    done = closed_stdout([*MODULE, "project", "events.jsonl", "--out", "doc.json"], "caller", inputs)
    assert (done.returncode, done.stderr) == (0, b"")
    assert (inputs / "doc.json").read_bytes().startswith(b'{\n  "format": "trace-ir/1"')


def test_a_closed_stdin_reads_as_empty(inputs: Path) -> None:
    done = subprocess.run(["sh", "-c", 'exec "$@" <&-', "sh", *MODULE, "mcp-serve"], capture_output=True, cwd=inputs,
                          check=False, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


@pytest.mark.parametrize("url", ["http://[::1", "http://h:abc", "http://h:99999", "http://"])
def test_an_endpoint_naming_no_host_and_port_is_malformed_on_run(url: str, inputs: Path) -> None:
    done = subprocess.run([*MODULE, "run", "b10x", "--decisions", "observe", "--credentials", "none", "-p", "x",
                           "--model-endpoint", url], capture_output=True, cwd=inputs, check=False, timeout=60)  # fmt: skip
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.startswith(f"metaharness: model-endpoint-malformed: --model-endpoint {url}: ".encode()), done.stderr


@pytest.mark.parametrize("url", ["notaurl", "http://[::1", "http://h:99999"])
def test_doctor_never_says_ok_for_an_endpoint_it_could_not_try(url: str, own_home: Path) -> None:
    done = subprocess.run([*MODULE, "doctor", "claude", "--credentials", "none", "--model-endpoint", url],
                          capture_output=True, check=False, timeout=60)  # fmt: skip
    assert b"Traceback" not in done.stderr and b"internal-error" not in done.stderr, done.stderr
    assert f"endpoint: model-endpoint-malformed: --model-endpoint {url}: ".encode() in done.stdout, done.stdout
    assert b"endpoint: ok" not in done.stdout
    assert done.returncode in (1, 2)


@pytest.mark.parametrize(
    ("workspace", "why"),
    [("missing", "cannot be resolved: No such file or directory"), ("file", "is not a directory"),
     ("fifo", "is not a directory")],
)  # fmt: skip
def test_a_workspace_that_is_no_directory_is_refused_at_start(workspace: str, why: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    done = subprocess.run([*MODULE, "mcp-serve", "--workspace", workspace], capture_output=True, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, check=False, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == f"metaharness: workspace-unusable: --workspace {workspace} {why}\n".encode()


def test_a_removed_working_directory_is_refused_at_start(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone), *MODULE,
                           "mcp-serve"], capture_output=True, stdin=subprocess.DEVNULL, check=False, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.startswith(b"metaharness: workspace-unusable: --workspace . cannot be resolved: "), done.stderr


@pytest.mark.parametrize(
    ("words", "label"),
    [
        (["loop.jsonl", "--run", b"\xff"], "--run"),
        (["loop.jsonl", "--model", b"\xfe"], "--model"),
        (["loop.jsonl", "--harness-version", b"\xc3"], "--harness-version"),
        (["loop.jsonl", "--transcript-path", b"t\xff"], "--transcript-path"),
        ([b"\xff.jsonl"], "RECORD's path (give --transcript-path)"),
    ],
)
def test_replay_refuses_words_no_event_could_carry(words: list[str | bytes], label: str, inputs: Path) -> None:
    (inputs / os.fsdecode(b"\xff.jsonl")).write_bytes(vector_file("b10x", "golden/loop.jsonl"))
    done = subprocess.run([*MODULE, "replay", "b10x", *words], capture_output=True, cwd=inputs, check=False, timeout=60)
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == f"metaharness: argument-not-utf8: {label} is not UTF-8 text, so no event could carry it\n".encode()


def test_a_record_path_that_is_not_utf8_replays_under_a_transcript_path(inputs: Path) -> None:
    (inputs / os.fsdecode(b"\xff.jsonl")).write_bytes(vector_file("b10x", "golden/loop.jsonl"))
    done = subprocess.run([*MODULE, "replay", "b10x", b"\xff.jsonl", "--transcript-path", "kept.jsonl"],
                          capture_output=True, cwd=inputs, check=False, timeout=60)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, b"")
    assert b'"transcript":{"path":"kept.jsonl"' in done.stdout


@pytest.mark.parametrize("argv", [[*MODULE, "project", "--from", "b10x"], [*VIEW, "--from", "b10x"]])
def test_a_mapped_record_path_that_is_not_utf8_is_refused(argv: list[str], inputs: Path) -> None:
    (inputs / os.fsdecode(b"\xff.jsonl")).write_bytes(vector_file("b10x", "golden/loop.jsonl"))
    done = subprocess.run([*argv, b"\xff.jsonl"], capture_output=True, cwd=inputs, check=False, timeout=60)
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.startswith(b"metaharness: argument-not-utf8: --from b10x's record path is not UTF-8"), done.stderr


@pytest.mark.parametrize("kind", ["b10x", "codex"])
def test_a_plugin_dir_holding_a_fifo_is_refused_before_anything_is_copied(kind: str, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    (plugin / "skills").mkdir(parents=True)
    (plugin / "skills" / "SKILL.md").write_text("x")
    os.mkfifo(plugin / "skills" / "pipe")
    done = subprocess.run([*MODULE, "run", kind, "-p", "x", "--decisions", "observe", "--credentials", "none",
                           "--model-endpoint", "http://127.0.0.1:9", "--confine", "off", "--plugin-dir", str(plugin)],
                          capture_output=True, cwd=tmp_path, stdin=subprocess.DEVNULL, check=False, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == (
        f"metaharness: plugin-dir-unusable: --plugin-dir {plugin} holds {plugin}/skills/pipe, which is no regular "
        "file, directory or link: a FIFO, socket or device is never copied\n"
    ).encode()


def test_the_loops_hooks_file_as_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "hooks.json")
    done = subprocess.run([*LOOP, "run", "--input", "x", "--base-url", "http://127.0.0.1:9", "--model", "m", "--json",
                           "--no-session", "--hooks", "hooks.json"], capture_output=True, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, check=False, timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == b"error: --hooks hooks.json cannot be read: not a regular file\n"
