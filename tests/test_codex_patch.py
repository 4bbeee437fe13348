"""Codex ``apply_patch`` read as the pinned parser reads it (its differential test against the binary is
``test_codex_patch_differential``): indented headers at a hunk boundary are headers, an indented line
inside an update is context, and a patch Codex would refuse is denied by ``adapter`` in every mode."""

from __future__ import annotations

import pytest
from returns.result import Failure, Success

from metaharness.pure.codex.patch import PatchHunk, parse_patch
from metaharness.pure.codex.seam import presented_call
from metaharness.pure.decisions import Emit, open_desk, present
from metaharness.pure.events import Deny, ToolDecided, ToolRequested
from metaharness.pure.hook_channel import HookCall
from metaharness.pure.subjects import TreeFacts


def test_indented_headers_at_a_hunk_boundary_are_headers() -> None:
    patch = "*** Begin Patch\n*** Add File: src/ok.md\n+x\n *** Add File: note.md\n+y\n\t*** Delete File: README.md\n*** End Patch"
    assert parse_patch(patch) == Success(
        (PatchHunk("add", "src/ok.md"), PatchHunk("add", "note.md"), PatchHunk("delete", "README.md"))
    )


def test_an_indented_line_inside_an_update_is_context_and_a_move_is_read_untrimmed() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py \n@@\n *** Add File: hidden\n-x\n+y\n*** End Patch\n"
    assert parse_patch(patch) == Success((PatchHunk("update", "a.py", "b.py "),))


def test_the_heredoc_wrapper_and_padded_markers_are_accepted() -> None:
    patch = "<<'EOF'\n  *** Begin Patch\n*** Delete File: gone.md\n*** End Patch  \nEOF\n"
    assert parse_patch(patch) == Success((PatchHunk("delete", "gone.md"),))


@pytest.mark.parametrize(
    "patch",
    [
        "*** Add File: x\n+y\n*** End Patch",
        "*** Begin Patch\n*** Add File: x\n+y",
        "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.py\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\nplain\n*** End Patch",
        "*** Begin Patch\n*** Add File: \n+x\n*** End Patch",
    ],
)
def test_a_patch_codex_would_refuse_is_unparseable(patch: str) -> None:
    assert isinstance(parse_patch(patch), Failure)


@pytest.mark.parametrize("mode", ["frame", "ask", "observe"])
def test_an_unreadable_patch_is_denied_by_adapter_in_every_mode(mode: str) -> None:
    call = HookCall("k1", "call_1", "apply_patch", {"command": "*** Begin Patch\n*** Bogus: x\n*** End Patch"}, True)
    _, effects = present(open_desk(mode), presented_call(call, TreeFacts("/w", {})))  # type: ignore[arg-type]
    events = [effect.event for effect in effects if isinstance(effect, Emit)]
    assert [type(e) for e in events] == [ToolRequested, ToolDecided]
    decided = next(e for e in events if isinstance(e, ToolDecided))
    assert decided.decided_by == "adapter" and isinstance(decided.decision, Deny)
    assert decided.decision.reason.startswith("this patch cannot be read the way Codex reads it (line 2: ")
