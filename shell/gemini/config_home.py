"""What a gemini run's scratch ``GEMINI_CLI_HOME`` held after the session, for rows H1a, H4 and H5 by effect
(docs/hermetic.md#by-effect, docs/adapters/gemini.md#by-effect).

The child can write ``GEMINI_CLI_HOME/.gemini``, so it is reached from the scratch root one name at a time
through directory descriptors (``metaharness.shell.child_tree``: ``O_NOFOLLOW``, type checks): a settings file
that is a link, not one regular file, or larger than the launch's never reads as the launch's (nor a home
holding a ``GEMINI.md`` memory file the launch never wrote), and an ``extensions`` entry of any type counts under its own name. The system settings paths name absent files under
``<scratch>/gemini-system``; anything found there is system configuration the run did not write.
"""

from __future__ import annotations

import os

from returns.result import Success

from metaharness.pure.gemini.launch import GeminiLaunch
from metaharness.pure.hermetic import ConfigHomeEffect
from metaharness.shell.child_tree import ChildDir

SETTINGS = "settings.json"
EXTENSIONS = "extensions"
CREDENTIAL_NAMES = ("oauth_creds.json", "google_accounts.json", "mcp-oauth-tokens.json", "mcp-oauth-tokens-v2.json",
                    "gemini-credentials.json", ".env")  # fmt: skip
"""The files a Gemini CLI home keeps a login, a token or a key in (``.env`` may hold ``GEMINI_API_KEY``)."""
MEMORY = "GEMINI.md"
"""Gemini CLI's global memory file, read from the home; the launch writes none."""
SYSTEM = "gemini-system"


def _extensions(gemini: ChildDir) -> tuple[str, ...]:
    """The entries of ``extensions/`` (a link or a file in its place counts as ``extensions`` itself)."""
    if gemini.status(EXTENSIONS) is None:
        return ()
    opened = gemini.sub(EXTENSIONS)
    if not isinstance(opened, Success):
        return (EXTENSIONS,)
    folder: ChildDir = opened.unwrap()
    try:
        return folder.names()
    finally:
        folder.close()


def _read(launch: GeminiLaunch, scratch: ChildDir) -> ConfigHomeEffect:
    written = next((f.data for f in launch.files if f.path.endswith(f"/.gemini/{SETTINGS}")), b"")
    system = (os.path.join(launch.scratch, SYSTEM),) if scratch.status(SYSTEM) is not None else ()
    reached = scratch.reach(f"{os.path.basename(launch.gemini_home)}/.gemini")
    if not isinstance(reached, Success):
        return ConfigHomeEffect(False, (), (), (), system)
    gemini = reached.unwrap()
    try:
        settings = gemini.read(SETTINGS, len(written) + 1)
        intact = isinstance(settings, Success) and settings.unwrap() == written and gemini.status(MEMORY) is None
        credentials = tuple(name for name in gemini.names() if name in CREDENTIAL_NAMES)
        return ConfigHomeEffect(intact, _extensions(gemini), credentials, (), system)
    finally:
        gemini.close()


def config_home_effect(launch: GeminiLaunch) -> ConfigHomeEffect:
    """The scratch ``GEMINI_CLI_HOME`` as it is now, against what the launch wrote into it (no credential file:
    the key, when there is one, travels in the environment or the route)."""
    try:
        scratch = ChildDir.open(launch.scratch)
    except OSError:
        return ConfigHomeEffect(False, (), (), (), ())
    try:
        return _read(launch, scratch)
    finally:
        scratch.close()
