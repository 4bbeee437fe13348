"""A hostile child against ``metaharness-eval``'s driver, with real git (docs/eval.md#the-copy-is-the-childs):
whatever it writes into its workspace copy's ``.git`` (``core.fsmonitor``, a clean filter, a textconv,
hooks, a hooks path, attributes, a nested repository's config) never runs on the host, the diff still
shows what it wrote, and a checked file that is a link to a host file (or reached through a linked
directory) fails its check naming the link; a FIFO is no file and is never opened for a read that waits."""

from __future__ import annotations

import io
import sys
import tarfile
import tempfile
import threading
from pathlib import Path

import pytest

from metaharness.pure.eval.checks import FileCheck
from metaharness.shell.eval.governed_run import govern_run
from metaharness.shell.eval.packing import RunInputs
from metaharness.shell.eval.workspace import baseline_repository

PLANTER = """
import os, stat, sys
os.chdir(sys.argv[sys.argv.index("--cwd") + 1])
marker = {marker!r}
program = os.path.join(os.getcwd(), "planted.sh")
with open(program, "w") as handle:
    handle.write("#!/bin/sh\\necho ran >> " + marker + "\\ncat\\n")
os.chmod(program, 0o755)
with open(".git/config", "a") as config:
    config.write(
        "[core]\\n\\tfsmonitor = " + program + "\\n\\thooksPath = " + os.getcwd() + "/.git/hooks\\n"
        "[filter \\"x\\"]\\n\\tclean = " + program + "\\n\\tsmudge = " + program + "\\n\\trequired = true\\n"
        "[diff \\"x\\"]\\n\\ttextconv = " + program + "\\n\\tcommand = " + program + "\\n"
        "[diff]\\n\\texternal = " + program + "\\n"
    )
os.makedirs(".git/hooks", exist_ok=True)
for hook in ("post-index-change", "pre-commit", "post-commit", "reference-transaction", "fsmonitor-watchman"):
    os.symlink(program, ".git/hooks/" + hook)
with open(".gitattributes", "w") as handle:
    handle.write("* filter=x diff=x\\n")
os.makedirs("nested/.git/refs/heads")
with open("nested/.git/HEAD", "w") as handle:
    handle.write("ref: refs/heads/main\\n")
with open("nested/.git/config", "w") as handle:
    handle.write("[core]\\n\\tfsmonitor = " + program + "\\n")
with open("note.md", "w") as handle:
    handle.write("written by the child\\n")
"""

SWAPPER = """
import os, sys
root = os.path.dirname(sys.argv[sys.argv.index("--cwd") + 1])
print("the run's own line", flush=True)
os.remove(os.path.join(root, "events.jsonl"))
os.symlink({secret!r}, os.path.join(root, "events.jsonl"))
os.remove(os.path.join(root, "stderr.txt"))
os.mkfifo(os.path.join(root, "stderr.txt"))
"""

LINKER = """
import os, sys
os.chdir(sys.argv[sys.argv.index("--cwd") + 1])
os.remove("README.md")
os.symlink({secret!r}, "README.md")
os.symlink({host_dir!r}, "docs")
os.mkfifo("pipe")
"""


def archive(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def inputs(*checks: FileCheck) -> RunInputs:
    tree = archive({"README.md": b"hi\n"})
    return RunInputs(
        task="t", arm="a", repeat=1, kind="b10x", options=(("model", "m"),), prompt="p", context=(), timeout=30.0,
        checks=checks, commit="0" * 40, workspace=tree, repository=baseline_repository(tree, "0" * 40), shipped=(),
    )


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A host folder outside every run directory (the runs go under ``runs/``)."""
    (tmp_path / "runs").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "runs"))
    (tmp_path / "host").mkdir()
    return tmp_path / "host"


def test_config_hooks_and_attributes_the_child_wrote_in_its_copy_never_run_on_the_host(host: Path) -> None:
    marker = host / "ran"
    output = govern_run(inputs(), program=(sys.executable, "-c", PLANTER.format(marker=str(marker))))
    assert not marker.exists()
    assert b"diff --git a/note.md b/note.md\nnew file mode 100644" in output.diff
    assert b"+written by the child" in output.diff
    assert b"diff --git a/.gitattributes b/.gitattributes" in output.diff
    assert b".git/config" not in output.diff
    assert not list((host.parent / "runs").iterdir())


def test_a_checked_link_to_a_host_file_fails_its_check_naming_the_link(host: Path) -> None:
    secret = host / "secret.txt"
    secret.write_text("hello from the host\n")
    (host / "dir").mkdir()
    (host / "dir" / "brief.md").write_text("hello from the host\n")
    checks = (
        FileCheck(id="readme", path="README.md", exists=True, contains="hello"),
        FileCheck(id="gone", path="README.md", exists=False, contains=None),
        FileCheck(id="brief", path="docs/brief.md", exists=True, contains="hello"),
        FileCheck(id="pipe", path="pipe", exists=True, contains=None),
    )
    program = LINKER.format(secret=str(secret), host_dir=str(host / "dir"))
    result = govern_run(inputs(*checks), program=(sys.executable, "-c", program)).result.decode()
    assert (
        '{"id":"readme","passed":false,"reason":"README.md is a symbolic link, and metaharness-eval follows none"}'
        in result
    )
    assert '{"id":"gone","passed":false,"reason":"README.md is a symbolic link, and metaharness-eval follows none"}' in result
    assert (
        '{"id":"brief","passed":false,"reason":"docs/brief.md is reached through the symbolic link docs, '
        'and metaharness-eval follows none"}' in result
    )
    assert '{"id":"pipe","passed":false,"reason":"pipe does not exist"}' in result
    assert secret.read_text() == "hello from the host\n"


GITMODULES = """
import os, subprocess, sys
os.chdir(sys.argv[sys.argv.index("--cwd") + 1])
git = ["git", "-C", "x", "-c", "user.name=c", "-c", "user.email=c@c", "-c", "init.defaultBranch=main"]
subprocess.run(["git", "init", "-q", "x"], check=True)
subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "m"], check=True)
with open("README.md", "w") as handle:
    handle.write("rewritten by the child\\n")
with open(".gitmodules", "w") as handle:
    handle.write({text!r})
"""


@pytest.mark.parametrize("text", [
    '[submodule "x"\n',
    '[submodule "x"]\n\tpath = x\n\tupdate = !true\n',
    '[submodule "x"]\n\tpath = x\n\tignore = all\n',
])  # fmt: skip
def test_a_gitmodules_the_child_wrote_cannot_hide_its_changes_from_the_diff(host: Path, text: str) -> None:
    """The diff reads no ``.gitmodules`` the child wrote (a malformed one, or one giving the nested repository it
    made an ``update`` command, made the host git's diff fail, so ``diff.patch`` came out empty)."""
    output = govern_run(inputs(), program=(sys.executable, "-c", GITMODULES.format(text=text)))
    assert b"diff --git a/README.md b/README.md" in output.diff
    assert b"+rewritten by the child" in output.diff
    assert b"diff --git a/.gitmodules b/.gitmodules\nnew file mode 100644" in output.diff


NESTER = """
import os, subprocess, sys
os.chdir(sys.argv[sys.argv.index("--cwd") + 1])
os.makedirs("waits/.git/refs/heads")
os.makedirs("waits/.git/objects")
os.mkfifo("waits/.git/HEAD")
os.makedirs("points")
with open("points/.git", "w") as handle:
    handle.write("gitdir: " + {host_repository!r} + "\\n")
os.makedirs("hides")
with open("hides/secret.txt", "w") as handle:
    handle.write("hidden behind a commit\\n")
git = ["git", "-C", "hides", "-c", "user.name=c", "-c", "user.email=c@c"]
subprocess.run(["git", "init", "-q", "hides"], check=True)
subprocess.run([*git, "add", "secret.txt"], check=True)
subprocess.run([*git, "commit", "-q", "-m", "m"], check=True)
"""


def test_a_nested_git_the_child_made_is_set_aside_before_the_diff_is_staged(host: Path) -> None:
    """A FIFO as a nested repository's ``HEAD`` made the host's ``git add`` wait forever, a ``gitdir:`` file sent it
    to read a host repository's refs, and a nested repository's commit hid the files under it from the diff:
    every ``.git`` below the copy's top is set aside first, so its folder's files are staged as files."""
    host_repository = host / "repository.git"
    program = NESTER.format(host_repository=str(host_repository))
    output = govern_run(inputs(), program=(sys.executable, "-c", program))
    assert b"diff --git a/hides/secret.txt b/hides/secret.txt\nnew file mode 100644" in output.diff
    assert b"+hidden behind a commit" in output.diff
    assert b"160000" not in output.diff and b".git/" not in output.diff
    assert not list((host.parent / "runs").iterdir())


SPARSE = """
import os, sys
os.chdir(sys.argv[sys.argv.index("--cwd") + 1])
with open("README.md", "r+b") as handle:
    handle.truncate(1 << 40)
with open("small.txt", "w") as handle:
    handle.write("small\\n")
"""


def test_a_sparse_terabyte_the_child_made_is_named_and_left_out_of_the_diff(host: Path) -> None:
    """A file over 64 MiB costs the child nothing when sparse and git hours to hash: it is set aside before
    staging and a line before the patch names it; the rest of the diff is whole."""
    output = govern_run(inputs(), program=(sys.executable, "-c", SPARSE))
    assert output.diff.startswith(b"metaharness-eval: README.md is larger than 64 MiB and is not in this diff\n")
    assert b"diff --git a/small.txt b/small.txt\nnew file mode 100644" in output.diff
    assert not list((host.parent / "runs").iterdir())


FORGER = """
import os, sys
os.chdir(sys.argv[sys.argv.index("--cwd") + 1])
name = "x\\ndiff --git a/README.md b/README.md\\n--- a/README.md\\n+++ b/README.md\\n@@ -1 +1 @@\\n-x\\n+y"
os.makedirs(os.path.dirname(name))
with open(name, "wb") as handle:
    handle.truncate(1 << 30)
"""


def test_an_oversized_files_path_is_named_quoted_and_forges_no_patch(host: Path) -> None:
    """The line naming a file left out for its size names the child's path git-quoted
    (docs/eval.md): a path with line feeds (folders and a file, no name holding a slash) cannot put a
    ``diff --git`` header and a hunk for README.md into ``diff.patch``."""
    output = govern_run(inputs(), program=(sys.executable, "-c", FORGER))
    first, *_ = output.diff.split(b"\n", 1)
    assert first == (b'metaharness-eval: "x\\ndiff --git a/README.md b/README.md\\n--- a/README.md\\n+++ b/README.md\\n'
                     b'@@ -1 +1 @@\\n-x\\n+y" is larger than 64 MiB and is not in this diff')
    assert b"\ndiff --git a/README.md" not in output.diff and not output.diff.startswith(b"diff --git a/README.md")


def test_a_run_file_the_child_swapped_for_a_link_or_a_fifo_is_read_back_as_the_run_wrote_it(host: Path) -> None:
    """The run's stdout and stderr are read back through the descriptors the driver held: before, a FIFO at
    ``stderr.txt`` made the driver wait forever and a link at ``events.jsonl`` put a host file in the results."""
    secret = host / "secret.txt"
    secret.write_text("the user's secret\n")
    done: list[bytes] = []
    program = (sys.executable, "-c", SWAPPER.format(secret=str(secret)))
    worker = threading.Thread(target=lambda: done.append(govern_run(inputs(), program=program).events), daemon=True)
    worker.start()
    worker.join(60)
    assert done == [b"the run's own line\n"]
