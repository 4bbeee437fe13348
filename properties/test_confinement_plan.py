"""The view planner's laws (docs/confinement.md): no plan binds a custody file or the caller's home root;
every writable bind is one of the four writable kinds; every file metaharness wrote is read-only in
the view; a read that would expose a hidden tree is refused ``confine-read-exposes``; the scratch root
is a read-only tmpfs with governing folders bound whole; the tools' layer holds nothing of the scratch
root but its grant."""

from __future__ import annotations

import posixpath

import msgspec
from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from metaharness.pure.confinement import (
    ConfinementFacts,
    Mount,
    SystemEntry,
    ToolGrant,
    check_confine_reads,
    hidden_trees,
    plan_confinement,
    render_bwrap,
    render_tool_entry,
)

HOME = "/home/op"
CUSTODY = ("/home/op/.claude/.credentials.json", "/home/op/.codex/auth.json")
SEGMENTS = st.sampled_from(["home", "op", ".claude", ".codex", "tmp", "scratch", "work", "usr", "x", ".local"])
PATHS = st.lists(SEGMENTS, min_size=0, max_size=4).map(lambda parts: "/" + "/".join(parts))
SCRATCH = "/tmp/metaharness-abc"
WRITABLE = st.lists(st.sampled_from([f"{SCRATCH}/work", f"{SCRATCH}/claude-home", f"{SCRATCH}/tmp",
                                     f"{SCRATCH}/hook-channel"]), min_size=1, max_size=4, unique=True)  # fmt: skip
GOVERNING = st.lists(
    st.sampled_from(["work/CLAUDE.md", "claude-home/settings.json", "hooks/pretooluse", "tmp/x", "hook-channel/y",
                     "settings.json"]).map(lambda name: f"{SCRATCH}/{name}"),
    max_size=5,
    unique=True,
)  # fmt: skip


def facts(closure: list[str], reads: list[str], writable: list[str], governing: list[str]) -> ConfinementFacts:
    return ConfinementFacts(
        bwrap="/usr/bin/bwrap",
        bwrap_version="0.8.0",
        system=(SystemEntry("/usr"), SystemEntry("/bin", "usr/bin"), SystemEntry("/etc")),
        home=HOME,
        hidden=hidden_trees(CUSTODY),
        closure=tuple(closure),
        reads=tuple(reads),
        writable=tuple(writable),
        governing=tuple(governing),
        init=("/opt/venv/bin/python", "-m", "metaharness.shell.confine_init"),
        scratch=SCRATCH,
        cwd=writable[0],
        command=("/opt/vendor/bin/claude", "-p"),
    )


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def binds(mounts: tuple[Mount, ...]) -> list[Mount]:
    return [mount for mount in mounts if mount.operation in ("bind", "ro-bind")]


@given(st.lists(PATHS, max_size=4), st.lists(PATHS, max_size=3), WRITABLE, GOVERNING)
def test_no_plan_binds_a_custody_file_or_the_home_root(
    closure: list[str], reads: list[str], writable: list[str], governing: list[str]
) -> None:
    planned = plan_confinement(facts(closure, reads, writable, governing))
    if isinstance(planned, Failure):
        assert planned.failure().code == "confine-read-exposes"
        return
    for mount in binds(planned.unwrap().mounts):
        assert not inside(HOME, mount.destination), mount
        for custody in CUSTODY:
            assert not inside(custody, mount.destination) and not inside(mount.destination, posixpath.dirname(custody))


@given(st.lists(PATHS, max_size=4), WRITABLE, GOVERNING)
def test_every_writable_bind_is_one_of_the_four_kinds(closure: list[str], writable: list[str], governing: list[str]) -> None:
    planned = plan_confinement(facts(closure, [], writable, governing))
    if isinstance(planned, Success):
        written = [mount.destination for mount in planned.unwrap().mounts if mount.operation == "bind"]
        assert set(written) <= set(writable)


@given(WRITABLE, GOVERNING)
def test_every_file_metaharness_wrote_is_read_only_in_the_view(writable: list[str], governing: list[str]) -> None:
    mounts = plan_confinement(facts([], [], writable, governing)).unwrap().mounts
    for path in governing:
        covering = [mount for mount in binds(mounts) if inside(path, mount.destination)]
        assert covering and covering[-1].operation == "ro-bind" and covering[-1].destination == path


@given(PATHS)
def test_a_read_is_refused_exactly_when_it_exposes_a_hidden_tree(read: str) -> None:
    checked = check_confine_reads((read,), HOME, hidden_trees(CUSTODY))
    exposing = inside(HOME, read) or any(
        inside(read, tree) or inside(tree, read) for tree in ("/home/op/.claude", "/home/op/.codex")
    )
    assert isinstance(checked, Failure) == exposing
    if exposing:
        assert checked.failure().code == "confine-read-exposes"


@given(WRITABLE)
def test_the_rendered_argv_unshares_everything_and_never_shares_the_network(writable: list[str]) -> None:
    argv = render_bwrap(plan_confinement(facts([], [], writable, [])).unwrap())
    assert "--unshare-all" in argv and "--share-net" not in argv and "--die-with-parent" in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--tmpfs") + 1] == "/tmp"


@given(WRITABLE, GOVERNING)
def test_the_scratch_root_is_an_empty_tmpfs_read_only_after_every_bind(writable: list[str], governing: list[str]) -> None:
    """The renamed-``hooks/`` attack needs a writable directory above a governing file: the scratch
    root is a tmpfs mounted before anything under it, every governing folder outside the writable kinds
    is bound whole, and the scratch root and ``/`` are remounted read-only last."""
    mounts = plan_confinement(facts([], [], writable, governing)).unwrap().mounts
    under = [index for index, mount in enumerate(mounts) if inside(mount.destination, SCRATCH)]
    assert mounts[under[0]] == Mount("tmpfs", SCRATCH)
    assert mounts[-2:] == (Mount("remount-ro", SCRATCH), Mount("remount-ro", "/"))
    for path in governing:
        folder = posixpath.dirname(path)
        if folder != SCRATCH and not any(inside(folder, directory) for directory in writable):
            assert Mount("ro-bind", folder, folder) in mounts


@given(st.lists(PATHS, max_size=3), WRITABLE, GOVERNING, st.sampled_from(["shell-line", "argv"]))
def test_the_tools_layer_holds_nothing_of_the_scratch_root_but_its_grant(
    closure: list[str], writable: list[str], governing: list[str], form: str
) -> None:
    grant = ToolGrant(writable=(writable[0], f"{SCRATCH}/tmp"), reads=(f"{SCRATCH}/catalogue.json",), form=form)  # type: ignore[arg-type]
    planned = plan_confinement(msgspec.structs.replace(facts(closure, [], writable, governing), tools=grant))
    assume(not isinstance(planned, Failure))
    layer = planned.unwrap().tools
    assert layer is not None and layer.mounts[-1] == Mount("remount-ro", "/")
    allowed = {*grant.writable, *grant.reads}
    for mount in binds(layer.mounts):
        assert not inside(mount.destination, SCRATCH) or mount.destination in allowed, mount
    assert [mount.destination for mount in layer.mounts if mount.operation == "bind"] == list(dict.fromkeys(grant.writable))
    assert not any(mount.operation == "proc" for mount in layer.mounts)
    script = render_tool_entry(layer).decode()
    assert "--share-net" not in script and "--unshare-all" in script and "route.sock" not in script
