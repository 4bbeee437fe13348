"""``metaharness mcp-serve``: the owned tool surface or a catalogue over MCP on stdio (docs/hermetic.md#mcp-serve,
docs/hermetic.md#mcp-serve). Startup refusals exit 2 with nothing on stdout; end of file on stdin exits 0."""

from __future__ import annotations

import importlib.metadata
import os

from returns.result import Failure

from metaharness.pure.loop.catalogue import publish
from metaharness.pure.mcp import CatalogueSurface, OwnedSurface, Server
from metaharness.pure.options import check_serve_pairing
from metaharness.pure.refusal import Refusal
from metaharness.shell.catalogue_file import read_catalogue
from metaharness.shell.mcp_server import run_server
from metaharness.shell.refusals import refuse


def serve(*, workspace: str, writable: bool, allow_program: tuple[str, ...], catalogue: str | None) -> int:
    """Check the pairing and the catalogue file (docs/hermetic.md#mcp-serve startup refusals), then serve until
    end of file. The owned surface publishes the loop's entries (writes with ``--writable``, ``run``
    with ``--writable`` and a program); a catalogue server performs its entries through the same
    entries and publishes no ``run``."""
    paired = check_serve_pairing(writable=writable, allow_program=allow_program, catalogue=catalogue)
    if isinstance(paired, Failure):
        return refuse(paired.failure())
    version = importlib.metadata.version("metaharness")
    loaded = None if catalogue is None else read_catalogue(catalogue)
    if isinstance(loaded, Failure):
        return refuse(loaded.failure())
    root = _workspace_root(workspace)
    if isinstance(root, Refusal):
        return refuse(root)
    if loaded is None:
        publication = publish(writable, allow_program)
        return run_server(Server(OwnedSurface(publication), version), root, publication)
    surface = CatalogueSurface(loaded.unwrap(), writable)
    return run_server(Server(surface, version), root, publish(writable, ()))


def _workspace_root(workspace: str) -> str | Refusal:
    """``--workspace`` resolved once, or ``workspace-unusable`` when it is missing, not a directory, or cannot be
    resolved (a working directory that was removed): every tool would otherwise fail call by call."""
    try:
        root = os.path.realpath(workspace, strict=True)
    except OSError as error:
        return Refusal("workspace-unusable", f"--workspace {workspace} cannot be resolved: {error.strerror or error}")
    if not os.path.isdir(root):
        return Refusal("workspace-unusable", f"--workspace {workspace} is not a directory")
    return root
