"""The tools on a real filesystem (docs/loop.md#confinement, #replies): replies, confinement, symlinks,
atomic writes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metaharness.pure.loop.catalogue import publish
from metaharness.shell.loop.cancel import CancelToken
from metaharness.shell.loop.tools import PathRefused, ToolFailure, Workspace
from metaharness.shell.mcp_server import perform_entry


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    base.mkdir()
    (base / "README.md").write_text("hello harness\n")
    (base / "src").mkdir()
    (base / "src" / "a.py").write_text("one\ntwo hello\nthree\n")
    (base / ".git").mkdir()
    (base / ".git" / "config").write_text("hello git\n")
    return base


@pytest.fixture
def workspace(root: Path) -> Workspace:
    return Workspace(str(root.resolve()), ("B10X_SECRET_NAME",), CancelToken(None, time.monotonic()))


def test_file_read_reply_is_byte_exact(workspace: Workspace) -> None:
    assert workspace.file_read("README.md", "README.md", {}) == (
        b'{"path":"README.md","lines":{"first":1,"last":1,"total":1},"truncated":false,"text":"     1\\thello harness\\n"}'
    )


def test_file_read_window_by_lines_and_bytes(workspace: Workspace) -> None:
    reply = json.loads(workspace.file_read("src/a.py", "src/a.py", {"offset": 2, "limit": 1}))
    assert reply["lines"] == {"first": 2, "last": 2, "total": 3} and reply["truncated"] is True
    assert reply["text"] == "     2\ttwo hello\n"
    reply = json.loads(workspace.file_read("src/a.py", "src/a.py", {"max_bytes": 12}))
    assert reply["text"] == "     1\tone\n" and reply["lines"]["last"] == 1


def test_read_through_a_symlink_outside_is_refused(workspace: Workspace, root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("nope\n")
    (root / "escape").symlink_to(tmp_path / "secret")
    with pytest.raises(PathRefused, match="`escape` is outside the workspace"):
        workspace.file_read("escape", "escape", {})
    (root / "inside").symlink_to(root / "README.md")
    assert b"hello harness" in workspace.file_read("inside", "inside", {})


def test_non_regular_and_non_utf8_reads_fail(workspace: Workspace, root: Path) -> None:
    with pytest.raises(PathRefused, match="`src` is not a regular file"):
        workspace.file_read("src", "src", {})
    os.mknod(root / "socket", stat.S_IFSOCK | 0o600)
    os.mkfifo(root / "fifo")
    for special in ("socket", "fifo", "absent", "README.md/x"):
        with pytest.raises(PathRefused, match=f"`{special}` is not a regular file"):
            workspace.file_read(special, special, {})
    (root / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(ToolFailure, match="`bin` is not UTF-8 text"):
        workspace.file_read("bin", "bin", {})


def test_dir_list(workspace: Workspace, root: Path) -> None:
    (root / "link").symlink_to(root / "src")
    reply = json.loads(workspace.dir_list(".", ".", {}))
    assert reply["entries"] == [
        {"name": ".git", "kind": "directory"},
        {"name": "README.md", "kind": "file", "bytes": 14},
        {"name": "link", "kind": "symlink"},
        {"name": "src", "kind": "directory"},
    ]
    assert list(reply) == ["path", "entries", "truncated"]


def test_search_skips_git_and_honours_glob_and_context(workspace: Workspace) -> None:
    reply = json.loads(workspace.search(".", ".", {"pattern": "hello"}))
    assert [(m["path"], m["line"]) for m in reply["matches"]] == [("README.md", 1), ("src/a.py", 2)]
    reply = json.loads(workspace.search(".", ".", {"pattern": "h.llo", "regex": True, "glob": "*.py", "context": 1}))
    assert reply["matches"] == [
        {"path": "src/a.py", "line": 2, "text": "two hello", "line_truncated": False, "before": ["one"], "after": ["three"]}
    ]
    with pytest.raises(ToolFailure, match="is not a valid regular expression"):
        workspace.search(".", ".", {"pattern": "(", "regex": True})


def test_find_base_names_and_paths(workspace: Workspace) -> None:
    assert json.loads(workspace.find(".", ".", {"glob": "*.py"}))["paths"] == ["src/a.py"]
    assert json.loads(workspace.find(".", ".", {"glob": "src"}))["paths"] == ["src/"]
    assert json.loads(workspace.find(".", ".", {"glob": "src/*"}))["paths"] == ["src/a.py"]


def test_write_creates_parents_and_replaces_atomically(workspace: Workspace, root: Path) -> None:
    assert workspace.file_write("d/e/note.md", "d/e/note.md", {"text": "hi\n"}) == b'{"path":"d/e/note.md","bytes":3}'
    assert (root / "d" / "e" / "note.md").read_text() == "hi\n"
    workspace.file_write("README.md", "README.md", {"text": "new\n"})
    assert (root / "README.md").read_text() == "new\n"
    assert sorted(p.name for p in root.iterdir() if p.name.endswith(".tmp")) == []


def test_writes_refuse_symlink_components(workspace: Workspace, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside)
    with pytest.raises(PathRefused, match="`out/x` passes through a symbolic link"):
        workspace.check_write_target("out/x", "out/x", must_exist=False)
    with pytest.raises(PathRefused, match="passes through a symbolic link"):
        workspace.file_write("out/x", "out/x", {"text": "x"})
    (root / "target.md").symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(PathRefused, match="`target.md` passes through a symbolic link"):
        workspace.file_write("target.md", "target.md", {"text": "x"})
    assert list(outside.iterdir()) == [] and not (tmp_path / "elsewhere.md").exists()


def test_edit_counts_occurrences(workspace: Workspace, root: Path) -> None:
    (root / "twice.md").write_text("a a\n")
    assert workspace.edit_count_problem("twice.md", "twice.md", "a") == "`old` occurs 2 times in `twice.md`; make it unique"
    assert workspace.edit_count_problem("twice.md", "twice.md", "b") == "`old` does not occur in `twice.md`"
    assert workspace.file_edit("README.md", "README.md", {"old": "hello", "new": "goodbye"}) == (
        b'{"path":"README.md","bytes":16}'
    )
    assert (root / "README.md").read_text() == "goodbye harness\n"


def test_run_reports_exit_as_data_and_hides_credential_variables(workspace: Workspace, root: Path) -> None:
    os.environ["B10X_SECRET_NAME"] = "hidden"
    try:
        reply = json.loads(workspace.run(["sh", "-c", "echo ${B10X_SECRET_NAME:-absent}; pwd; exit 3"]))
    finally:
        del os.environ["B10X_SECRET_NAME"]
    assert reply["exit"] == 3 and reply["stdout"] == f"absent\n{root.resolve()}\n"
    assert list(reply) == ["argv", "exit", "stdout", "stderr", "truncated", "timed_out"]
    with pytest.raises(ToolFailure, match="`b10x-no-such-program` was not found on PATH"):
        workspace.run(["b10x-no-such-program"])


def test_run_is_bounded_by_the_deadline(root: Path) -> None:
    bounded = Workspace(str(root.resolve()), (), CancelToken(300, time.monotonic()))
    with pytest.raises(ToolFailure) as failure:
        bounded.run(["sleep", "5"])
    assert json.loads(str(failure.value))["timed_out"] is True


@pytest.mark.parametrize("tool", ["file_read", "dir_list"])
def test_a_link_swapped_under_a_read_never_reads_outside_the_root(tmp_path: Path, tool: str) -> None:
    """A tool running beside the reader keeps swapping a folder inside the root for a link leading out: the read
    (or listing) reaches each folder by descriptor without following, so nothing outside comes back."""
    root, outside = tmp_path / "swap", tmp_path / "outside"
    (root / "held").mkdir(parents=True)
    outside.mkdir()
    (root / "held" / "x.txt").write_text("inside\n")
    (outside / "x.txt").write_text("outside\n")
    (outside / "outside-name").write_text("")
    workspace = Workspace(str(root.resolve()), (), CancelToken(None, time.monotonic()))
    path = "d/x.txt" if tool == "file_read" else "d"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(outside)],
                               stdout=subprocess.PIPE)  # fmt: skip
    assert swapper.stdout is not None and swapper.stdout.readline() == b"swapping\n"
    replies = []
    try:
        for _ in range(20000):
            try:
                replies.append(getattr(workspace, tool)(path, path, {}))
            except (ToolFailure, OSError):  # refused, or gone in the swap: either is no read
                pass
    finally:
        swapper.kill()
        swapper.wait()
    assert replies and not [reply for reply in replies if b"outside" in reply]


SWAPPER = """
import os, sys
root, outside = sys.argv[1], sys.argv[2]
os.symlink(outside, root + "/link")
print("swapping", flush=True)
while True:
    os.rename(root + "/held", root + "/d")
    os.rename(root + "/d", root + "/held")
    os.rename(root + "/link", root + "/d")
    os.rename(root + "/d", root + "/link")
"""


def test_a_sparse_terabyte_is_refused_by_its_size_not_read(workspace: Workspace, root: Path) -> None:
    """A file over the read bound (free to make when sparse) is refused by its size, never read into memory."""
    with open(root / "huge.txt", "wb") as handle:
        handle.truncate(1 << 40)
    bound = "`huge.txt` is larger than the 67108864 byte bound of a read"
    with pytest.raises(ToolFailure, match=bound):
        workspace.file_read("huge.txt", "huge.txt", {})
    with pytest.raises(ToolFailure, match=bound):
        workspace.file_edit("huge.txt", "huge.txt", {"old": "a", "new": "b"})


def _swapped_for_a_link(folder: Path, target: Path) -> None:
    """What a tool beside the walk does: the folder it saw moved away and a link to ``target`` in its place."""
    folder.rename(folder.with_name(folder.name + "-moved"))
    folder.symlink_to(target)


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host folder outside the root: a marker name, a marker line, and folders deeper than the walk's bound."""
    folder = tmp_path / "host"
    deep = folder.joinpath(*[f"d{level}" for level in range(14)])
    deep.mkdir(parents=True)
    (folder / "marker-name-outside").write_text("MARKER-LINE-OUTSIDE\n")
    return folder


def test_a_folder_swapped_for_a_link_after_the_walk_saw_it_is_never_entered(
    workspace: Workspace, root: Path, host: Path
) -> None:
    """Driven by hand: once the walk has yielded `src/`, `src` becomes a link to a host folder; resuming, the walk
    opens `src` relative to the root's descriptor without following, so it skips it and lists nothing of the host."""
    walk = workspace._walk(".", ".", skip=False)
    seen = []
    for entry in walk:
        seen.append(entry[0])
        if entry[0] == "src":
            _swapped_for_a_link(root / "src", host)
            break
    seen += [entry[0] for entry in walk]
    assert "src" in seen and not [path for path in seen if path.startswith("src/")]


def swapping_walks(root: Path, host: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The real walk, with a tool beside it: `README.md` swapped for a link to a host file between its listing
    and its read, `src` for a link to a host folder right after the walk yielded it. The paths it yields."""
    walked = Workspace._walk
    passed: list[str] = []

    def swapping(self: Workspace, path: str, relative: str, skip: bool):  # type: ignore[no-untyped-def]
        for entry in walked(self, path, relative, skip):
            passed.append(entry[0])
            if entry[0] == "README.md":
                (root / "README.md").unlink()
                (root / "README.md").symlink_to(host / "marker-name-outside")
            yield entry
            if entry[0] == "src":
                _swapped_for_a_link(root / "src", host)

    monkeypatch.setattr(Workspace, "_walk", swapping)
    return passed


def test_search_never_reads_or_walks_a_folder_swapped_for_a_link_mid_walk(
    workspace: Workspace, root: Path, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real search over the swapped walk: no line of the host's file comes back, and the host's depth is not
    reported as the root's."""
    passed = swapping_walks(root, host, monkeypatch)
    reply = json.loads(workspace.search(".", ".", {"pattern": "MARKER"}))
    assert reply == {"pattern": "MARKER", "matches": [], "truncated": False, "depth_bound_reached": False}
    assert not [path for path in passed if path.startswith("src/")]


def test_the_servers_entry_finds_nothing_of_a_folder_swapped_mid_walk(
    workspace: Workspace, root: Path, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the entry mcp-serve performs a call with (gates, then the tool): `find` over the swapped walk lists
    no host name. The server process has no seam to pause a walk at, so the swap is made here, in process."""
    swapping_walks(root, host, monkeypatch)
    reply = perform_entry(workspace, publish(True, ()), "find", {"glob": "*"})
    assert isinstance(reply, bytes)
    assert json.loads(reply)["paths"] == [".git/", "README.md", "src/", ".git/config"]


def test_dir_list_and_reads_resolve_links_by_descriptor_inside_the_root_only(
    workspace: Workspace, root: Path, host: Path
) -> None:
    """A link on the path is resolved from its text against the root: inside it (relative, `..`, absolute under
    the root) it is followed as a read does; leading out (by `..`, absolute elsewhere, a link in the chain) it is
    outside the workspace, and a loop is refused, never spun on."""
    (root / "up").symlink_to("..")
    (root / "src" / "back").symlink_to("../src")
    (root / "abs").symlink_to(root.resolve() / "src")
    (root / "src" / "out").symlink_to("../../host")
    (root / "hostlink").symlink_to(host)
    (root / "loop").symlink_to("loop")
    names = {"name": "a.py", "kind": "file", "bytes": 20}
    for path in ("src/back", "abs", "src/back/back"):
        assert names in json.loads(workspace.dir_list(path, path, {}))["entries"]
    assert b"two hello" in workspace.file_read("abs/a.py", "abs/a.py", {})
    for path in ("up", "src/out", "hostlink", "abs/out/marker-name-outside"):
        with pytest.raises(PathRefused, match="is outside the workspace"):
            workspace.dir_list(path, path, {})
        with pytest.raises(PathRefused, match="is outside the workspace"):
            workspace.find(path, path, {"glob": "*"})
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        workspace.file_read("loop", "loop", {})


def _open_descriptors() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


def test_the_tools_leave_no_descriptor_open(workspace: Workspace, root: Path, host: Path) -> None:
    """A walk stopped early, one closed halfway, a refusal and a swapped folder each close what they opened."""
    (root / "hostlink").symlink_to(host)
    for level in range(3):
        (root / "src" / f"sub{level}").mkdir()
        (root / "src" / f"sub{level}" / "x.md").write_text("hello\n")
    before = _open_descriptors()
    workspace.find(".", ".", {"glob": "*", "max_results": 1})
    workspace.search(".", ".", {"pattern": "hello", "max_results": 1})
    workspace.dir_list("src", "src", {})
    workspace.file_read("README.md", "README.md", {})
    for tool in ("file_read", "dir_list", "find"):
        with pytest.raises(PathRefused):
            getattr(workspace, tool)("hostlink/x", "hostlink/x", {"glob": "*"})
    walk = workspace._walk(".", ".", skip=False)
    for entry in walk:
        if entry[0] == "src/sub1":
            _swapped_for_a_link(root / "src" / "sub1", host)
        if entry[0] == "src/sub0/x.md":
            break
    walk.close()
    assert _open_descriptors() == before
