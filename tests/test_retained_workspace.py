"""``--retain-dir`` also keeps the run's workspace diff (docs/cli.md#keeping-the-workspace-diff): the
project's loop against the real ``b10x-emulator`` (scenario ``flat-write``, observed, so its write of
``note.md`` happens) in a ``--cwd`` tree that also holds a link to a secret outside it and a FIFO: the
diff shows the new file, and the link and the FIFO are neither read through nor waited on."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from closing_endpoint import CLOSING_ENDPOINT
from governed_b10x import LOOP, METAHARNESS, common, stream, workspace
from helpers.emulator import started_emulator
from stand_in import records_body, stand_in

from metaharness.pure.workspace_diff import FileState, workspace_diff
from metaharness.shell.child_tree import remove_tree
from metaharness.shell.workspace_snapshot import snapshot

SECRET = "the operator's secret\n"


def test_the_workspace_diff_is_kept_beside_the_record(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    work, retain, secret = workspace(tmp_path), tmp_path / "kept", tmp_path / "secret.txt"
    retain.mkdir()
    secret.write_text(SECRET)
    (work / "link.txt").symlink_to(secret)
    os.mkfifo(work / "pipe")
    with started_emulator("flat-write", tmp_path / "emulator.jsonl") as emulator:
        argv = [str(METAHARNESS), "run", "b10x", "--decisions", "observe", "--confine", "off", "--retain-dir", str(retain),
                *common(emulator.base_url, work)]  # fmt: skip
        done = subprocess.run(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert (work / "note.md").exists()
    kept = retain / stream(done)[0]["run"] / "workspace.diff"
    diff = kept.read_text(encoding="utf-8")
    note = (work / "note.md").read_text(encoding="utf-8")
    assert diff.startswith("--- /dev/null\n+++ b/note.md\n@@ ")
    assert "".join(f"+{line}\n" for line in note.splitlines()) in diff
    assert "README.md" not in diff and SECRET not in diff and "pipe" not in diff
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_the_diff_names_changes_removals_and_binaries() -> None:
    def text(data: bytes) -> FileState:
        return FileState(digest=str(hash(data)), data=data)

    before = {"a.txt": text(b"one\ntwo\n"), "gone.txt": text(b"bye\n"), "same.txt": text(b"x\n"), "b.bin": text(b"\xff")}
    after = {"a.txt": text(b"one\n2\n"), "same.txt": text(b"x\n"), "b.bin": text(b"\xfe"), "new.txt": text(b"hi")}
    diff = workspace_diff(before, after).decode()
    assert diff == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
        "Binary files a/b.bin and b/b.bin differ\n"
        "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
        "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n\\ No newline at end of file\n"
    )
    assert workspace_diff(before, before) == b""


def test_the_snapshot_walks_by_descriptor_and_reads_nothing_it_did_not_make_sure_of(tmp_path: Path) -> None:
    """What the child can plant in its tree is skipped, never read through: a link to a folder outside, a hard
    link to a secret, a FIFO; ``.git`` is not walked; a tree deeper than Python's recursion limit still reads."""
    outside, work = tmp_path / "outside", tmp_path / "work"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (work / "src").mkdir(parents=True)
    (work / "src" / "kept.txt").write_text("kept\n")
    (work / "linked").symlink_to(outside, target_is_directory=True)
    os.link(outside / "secret.txt", work / "hard.txt")
    os.mkfifo(work / "pipe")
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text("[core]\n")
    deep = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1200):
        os.mkdir("d", dir_fd=deep)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=deep)
        os.close(deep)
        deep = inner
    os.close(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=deep))
    os.close(deep)
    files = snapshot(str(work))
    assert files["src/kept.txt"].data == b"kept\n"
    assert "d/" * 1200 + "bottom.txt" in files
    assert not [path for path in files if path.startswith(("linked", ".git")) or path in ("hard.txt", "pipe")]
    remove_tree(str(work))


def test_a_file_the_child_extended_to_terabytes_is_digested_over_its_data_only(tmp_path: Path) -> None:
    """Hostile: a file grown to 15 TiB with one ``truncate`` (ext4's largest is 16 TiB; reading its zeros would hold
    the wind-up for about an hour) is digested over its data only, holes never read; the same file reads the same
    twice, and one byte written far past its start changes it."""
    work = tmp_path / "work"
    work.mkdir()
    with (work / "huge.bin").open("wb") as handle:
        handle.write(b"head")
        handle.truncate(15 << 40)
    first, again = snapshot(str(work)), snapshot(str(work))
    assert first["huge.bin"] == again["huge.bin"] and first["huge.bin"].data is None
    with (work / "huge.bin").open("r+b") as handle:
        handle.seek(7 << 40)
        handle.write(b"x")
    assert snapshot(str(work))["huge.bin"].digest != first["huge.bin"].digest


FORGED_NAME = "x\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# readme\n+# rewritten"
"""A path (two folders and a file: no name holds a slash) whose line feeds, written raw into a header, would
forge a second file's header and hunk."""


def test_a_name_the_child_made_cannot_forge_a_header_and_only_line_feeds_end_lines(tmp_path: Path) -> None:
    """A stand-in harness (run as a tool would be, confined) writes a file whose name holds line feeds and
    whose text holds a form feed and a line separator: the kept diff names it git-quoted in one header line
    and keeps its text as the one line it is (docs/cli.md#keeping-the-workspace-diff)."""
    body = (f"import os\nos.makedirs(os.path.dirname({FORGED_NAME!r}))\n"
            f"open({FORGED_NAME!r}, 'w').write('one\\x0ctwo\\u2028three\\n')\n"
            + records_body([b'{"kind":"started","model":"m","workspace":"."}', b'{"kind":"finished","stop":"end_turn","turns":1}']))  # fmt: skip
    stand_in(tmp_path, "b10x-harness", body)
    retain = tmp_path / "kept"
    retain.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "metaharness.shell", "run", "b10x", "-p", "hi", "--model", "m", "--model-endpoint",
         CLOSING_ENDPOINT, "--decisions", "observe", "--retain-dir", str(retain)],
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    kept = retain / stream(done)[0]["run"] / "workspace.diff"
    diff = kept.read_text(encoding="utf-8")
    quoted = FORGED_NAME.replace("\n", "\\n")
    assert diff == f'--- /dev/null\n+++ "b/{quoted}"\n@@ -0,0 +1 @@\n+one\x0ctwo\u2028three\n', diff
