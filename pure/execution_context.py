"""The ``<execution-context>`` block that opens the user turn on claude and codex
(docs/hermetic.md#execution-context-block, docs/adapters/common.md#vendor-launch-order). It grants nothing; it tells the
model how the run is held."""

from __future__ import annotations

IMPLICATIONS = {
    "frame": "metaharness applies the sealed frame to each mediated call",
    "ask": "metaharness asks the embedder before each mediated call",
    "observe": "metaharness records calls but does not narrow them",
}


def workspace_word(cwd: str | None, scratch_cwd: bool) -> str:
    """The block's ``workspace=`` value: ``metaharness-scratch`` without ``--cwd``,
    ``embedder-scratch-copy`` with ``--cwd --scratch-cwd``, else ``operator-named``
    (docs/hermetic.md#execution-context-block)."""
    if cwd is None:
        return "metaharness-scratch"
    return "embedder-scratch-copy" if scratch_cwd else "operator-named"


def execution_context_block(kind: str, workspace: str, hermetic: str, decisions: str) -> str:
    """The ``<execution-context>`` block of docs/hermetic.md#execution-context-block and
    docs/adapters/common.md#vendor-launch-order; every line ends ``\\n``."""
    lines = (
        "<execution-context>",
        "execution_path=metaharness-driven",
        f"inner_harness={kind}",
        f"workspace={workspace}",
        f"hermetic={hermetic}",
        "confinement=inner-harness",
        "substrate=not-used-by-metaharness",
        f"decision_mode={decisions}",
        f"implication={IMPLICATIONS[decisions]}",
        "</execution-context>",
    )
    return "".join(line + "\n" for line in lines)
