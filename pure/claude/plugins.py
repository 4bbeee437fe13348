"""``--plugin-dir`` on claude: each directory checked, named, digested and planned as a scratch copy;
only the copy is passed (docs/adapters/claude.md#plugins, docs/cli.md#run).

A directory must exist, not be a symlink or an archive, and hold at least one readable regular file,
else ``plugin-dir-unusable`` naming it and why. Its name is ``.claude-plugin/plugin.json``'s ``name``,
else the directory's basename; two with one name are refused (design choice). The tree is digested
over its sorted relative paths and bytes; symlinks inside it are skipped and named as ambient inputs.
"""

from __future__ import annotations

import posixpath

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.events import InstalledPlugin
from metaharness.pure.refusal import Refusal

MANIFEST = ".claude-plugin/plugin.json"


class PluginFile(msgspec.Struct, frozen=True):
    """A regular file in a plugin tree: its path relative to the tree, bytes and permission bits."""

    path: str
    data: bytes
    mode: int


class PluginTree(msgspec.Struct, frozen=True):
    """What the shell found at one ``--plugin-dir``: whether it is a directory or a symlink, its
    readable regular files and the symlinks inside it (relative paths)."""

    source: str
    is_directory: bool
    is_symlink: bool
    files: tuple[PluginFile, ...] = ()
    symlinks: tuple[str, ...] = ()
    special: tuple[str, ...] = ()
    """Entries that are neither a directory, a regular file nor a link (a FIFO, a socket, a device)."""


class PluginCopy(msgspec.Struct, frozen=True):
    """A plugin planned into ``<scratch>/plugins/<name>/``: its name, operator source, tree digest,
    manifest version, the files to copy and the symlinks skipped."""

    name: str
    source: str
    digest: str
    version: str | None
    files: tuple[PluginFile, ...]
    skipped: tuple[str, ...]

    def installed(self) -> InstalledPlugin:
        """The ``installed_plugins`` entry: name, the operator directory with the tree's digest, version."""
        return InstalledPlugin(name=self.name, source=f"{self.source} sha256 {self.digest}", version=self.version)


def tree_digest(files: tuple[PluginFile, ...]) -> str:
    """SHA-256 over the sorted relative paths and bytes: each path, NUL, byte count, NUL, bytes (design choice).
    ``hashlib`` is loaded at the first digest, not with claude's stage 7 (docs/DEVELOPING.md#dependency-direction)."""
    import hashlib

    digest = hashlib.sha256()
    for item in sorted(files, key=lambda f: f.path):
        digest.update(item.path.encode() + b"\0" + str(len(item.data)).encode() + b"\0" + item.data)
    return digest.hexdigest()


def _manifest(files: tuple[PluginFile, ...]) -> dict[str, object]:
    found = next((item.data for item in files if item.path == MANIFEST), None)
    if found is None:
        return {}
    try:
        document = decode_bounded(found)
    except msgspec.DecodeError:
        return {}
    return document if isinstance(document, dict) else {}


def plugin_name(tree: PluginTree) -> str:
    """``plugin.json``'s non-empty ``name`` without a path separator, else the directory's basename."""
    name = _manifest(tree.files).get("name")
    if isinstance(name, str) and name and "/" not in name and name not in (".", ".."):
        return name
    return posixpath.basename(tree.source.rstrip("/")) or "plugin"


def _unusable(source: str, why: str) -> Failure[Refusal]:
    return Failure(Refusal("plugin-dir-unusable", f"--plugin-dir {source} {why}"))


def plan_plugins(trees: tuple[PluginTree, ...]) -> Result[tuple[PluginCopy, ...], Refusal]:
    """The scratch copies of the declared plugin directories, in declaration order, or the first
    ``plugin-dir-unusable`` (docs/hermetic.md#refusal-order stage 7)."""
    copies: list[PluginCopy] = []
    for tree in trees:
        if tree.is_symlink:
            return _unusable(tree.source, "is a symbolic link; name the directory it points to")
        if not tree.is_directory:
            return _unusable(tree.source, "is missing or not a directory (an archive is not unpacked)")
        if tree.special:
            return _unusable(tree.source, f"holds {tree.special[0]}, which is not a regular file, a directory or a link")
        if not tree.files:
            return _unusable(tree.source, "holds no readable regular file")
        name = plugin_name(tree)
        if any(copy.name == name for copy in copies):
            return _unusable(tree.source, f"is named {name}, like an earlier --plugin-dir; two plugins cannot share a name")
        version = _manifest(tree.files).get("version")
        copies.append(
            PluginCopy(
                name=name,
                source=tree.source,
                digest=tree_digest(tree.files),
                version=version if isinstance(version, str) else None,
                files=tree.files,
                skipped=tree.symlinks,
            )
        )
    return Success(tuple(copies))
