"""metaharness: launch coding agents under governance and write one neutral event stream.

The import package links the top-level folders: ``pure/`` is ``metaharness.pure`` (every decision),
``shell/`` is ``metaharness.shell`` (every effect), ``vectors/`` is ``metaharness.vectors`` (package data).
"""
