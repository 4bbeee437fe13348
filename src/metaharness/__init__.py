"""metaharness: launch coding agents under governance and write one neutral event stream.

The import package links the top-level folders: ``pure/`` is ``metaharness.pure`` (every decision),
``shell/`` is ``metaharness.shell`` (every effect), ``vectors/`` is ``metaharness.vectors`` (package data).
"""

__version__ = "0.1.0"
"""This distribution's version, stated once: the package metadata is built from it (``pyproject.toml``'s dynamic
version), and the loop's ``--version`` and the own loop's verified version read it here, without importing
``importlib.metadata`` (docs/adapters/b10x.md#program-and-version)."""
