"""What a codex run's scratch ``CODEX_HOME`` held after the session, for rows H1a, H1b, H4 and H5 by effect
(docs/hermetic.md#by-effect).

The child can write ``CODEX_HOME``, so it is read through one directory descriptor opened without following a link;
every name in it is looked at with ``O_NOFOLLOW`` and type checks, and a config file that is not a regular file of at
most the launch's size plus one byte never reads as the launch's.
"""

from __future__ import annotations

import os
import stat

from metaharness.pure.codex.launch import CodexLaunch
from metaharness.pure.hermetic import ConfigHomeEffect

CONFIG = "config.toml"
PLUGINS = "plugins"
CREDENTIAL_NAMES = ("auth.json", ".credentials.json")
"""The files a codex config home holds a login or key in."""
SYSTEM_CONFIG = ("/etc/codex",)
"""Codex's managed configuration, which a confined view's read-only ``/etc`` would hold."""

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _config_bytes(home: int, limit: int) -> bytes | None:
    """The config file's bytes, at most ``limit``; ``None`` when it is absent, a link, not regular or larger."""
    try:
        fd = os.open(CONFIG, _FILE, dir_fd=home)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def _plugin_names(home: int) -> tuple[str, ...]:
    """The entries of ``plugins/`` (a link or another file there counts under its own name)."""
    try:
        fd = os.open(PLUGINS, _DIRECTORY, dir_fd=home)
    except FileNotFoundError:
        return ()
    except OSError:
        return (PLUGINS,)
    try:
        return tuple(sorted(os.listdir(fd)))
    finally:
        os.close(fd)


def config_home_effect(launch: CodexLaunch) -> ConfigHomeEffect:
    """The scratch ``CODEX_HOME`` as it is now, against what the launch wrote into it."""
    written = next((f.data for f in launch.files if f.path == os.path.join(launch.codex_home, CONFIG)), b"")
    wrote = ("auth.json",) if launch.credential_file is not None else ()
    system = tuple(path for path in SYSTEM_CONFIG if os.path.lexists(path))
    try:
        home = os.open(launch.codex_home, _DIRECTORY)
    except OSError:
        return ConfigHomeEffect(False, (), (), wrote, system)
    try:
        names = os.listdir(home)
        intact = _config_bytes(home, len(written)) == written
        plugins = _plugin_names(home)
    finally:
        os.close(home)
    credentials = tuple(sorted(name for name in names if name in CREDENTIAL_NAMES))
    return ConfigHomeEffect(intact, plugins, credentials, wrote, system)
