"""A row is never ok without evidence, and a gap outranks an unk (docs/hermetic.md#terms, #verdicts,
docs/hermetic.md#audit-report)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.events import Hermetic, McpServer, Plugin, RowHow, RowWhy, SessionStarted, Transcript
from metaharness.pure.hermetic import ROWS, DirectoryIdentity, VerdictFacts, control_verdict, row_verdicts

ROW_IDS = [row for row, *_ in ROWS]
STATES = st.sampled_from(["imposed", "declared", "unavailable", None])
WORDS = st.text(alphabet="abcAPIkey:-_ ", max_size=12)


@st.composite
def hermetic_blocks(draw: st.DrawFn) -> Hermetic:
    states = {row: draw(STATES) for row in ROW_IDS}
    return Hermetic(
        mode="strict",
        decisions="frame",
        imposed=tuple(RowHow(row=row, how="h") for row, state in states.items() if state == "imposed"),
        declared=tuple(RowHow(row=row, how="h") for row, state in states.items() if state == "declared"),
        unavailable=tuple(RowWhy(row=row, why="w") for row, state in states.items() if state == "unavailable"),
        ambient_inputs=(),
        installed_plugins=(),
    )


def maybe(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


NAMES = st.lists(st.sampled_from(["a", "b", "kit:x", "metaharness"]), max_size=3).map(tuple)
RECORDS = st.builds(
    SessionStarted,
    adapter=st.just("x"),
    adapter_class=st.just("harness"),
    harness_version=maybe(st.sampled_from(["1.0", "2.0"])),
    session_id=st.none(),
    model=st.none(),
    permission_mode=st.none(),
    credential_source=maybe(WORDS),
    output_style=maybe(st.sampled_from(["default", "", "null", "Explanatory"])),
    cwd=maybe(st.sampled_from(["/w", "/other"])),
    offered_tools=st.none(),
    withheld=st.none(),
    slash_commands=st.none(),
    skills=maybe(NAMES),
    agents=maybe(NAMES),
    plugins=maybe(NAMES.map(lambda names: tuple(Plugin(name=n, source=n, version=None) for n in names))),
    mcp_servers=maybe(NAMES.map(lambda names: tuple(McpServer(name=n, status=None) for n in names))),
    inputs_digest=st.none(),
    transcript=st.just(Transcript(path=None, digest=None, bytes=None)),
    hermetic=hermetic_blocks(),
)
FACTS = st.builds(
    VerdictFacts,
    kind=st.sampled_from(["claude", "codex", "b10x"]),
    declared_plugins=NAMES,
    declared_key=st.booleans(),
    launch_mcp_servers=NAMES,
    planned_cwd=maybe(st.just(DirectoryIdentity(real_path="/w", device=1, inode=2))),
    pins=st.just(("1.0",)),
    canary_versions=st.sampled_from([(), ("1.0",)]),
)


def evidence(record: SessionStarted, facts: VerdictFacts, row: str) -> bool:
    """Whether the facts a row's ok rests on are there at all."""
    attested = {entry.row for entry in (*record.hermetic.imposed, *record.hermetic.declared)}
    record_fields = {
        "H1a": (record.skills is not None or record.agents is not None) if facts.kind == "b10x"
        else record.plugins is not None,
        "H1b": facts.kind == "b10x" or record.output_style is not None,
        "H4": record.credential_source is not None,
        "H5": record.mcp_servers is not None,
        "H7": "H7" in attested and record.cwd is not None and facts.planned_cwd is not None,
        "H9": record.harness_version is not None,
        "H10": True,
    }
    return record_fields.get(row, row in {entry.row for entry in record.hermetic.imposed})


@settings(max_examples=300)
@given(record=RECORDS, facts=FACTS)
def test_never_ok_without_evidence(record: SessionStarted, facts: VerdictFacts) -> None:
    record_cwd = None if record.cwd is None else DirectoryIdentity(real_path=record.cwd)
    facts = VerdictFacts(**{**{f: getattr(facts, f) for f in facts.__struct_fields__}, "record_cwd": record_cwd})
    rows = row_verdicts(record, facts)
    assert [row.row for row in rows] == ROW_IDS
    for row in rows:
        if row.verdict == "ok":
            assert evidence(record, facts, row.row), row
    gating = [row.verdict for row in rows if row.severity == "gating"]
    expected = "gap" if "gap" in gating else "unk" if "unk" in gating else "ok"
    assert control_verdict(rows) == expected


@settings(max_examples=50)
@given(facts=FACTS)
def test_no_opening_record_is_never_ok(facts: VerdictFacts) -> None:
    rows = row_verdicts(None, facts)
    assert all(row.verdict == "unk" for row in rows) and control_verdict(rows) == "unk"
