"""The eval's pure stages on examples: the plan as ``run`` words, YAML words that stay words, the
checks' reasons, the result's state, the batch exit, the table and the report page."""

from __future__ import annotations

import msgspec

from metaharness.pure.eval.checks import (
    CensusCheck,
    DecidedCheck,
    FileCheck,
    RunFacts,
    VerdictCheck,
    score_check,
)
from metaharness.pure.eval.plan import OptionShape, chosen_plan, plan_runs, read_plan, run_words
from metaharness.pure.eval.report import report_page
from metaharness.pure.eval.results import (
    RunResult,
    batch_exit,
    lost_result,
    read_result,
    report_verdicts,
    result_document,
    result_table,
    run_state,
)

OPTIONS = {
    "model": OptionShape(flag=False, multiple=False),
    "hermetic": OptionShape(flag=False, multiple=False),
    "audit": OptionShape(flag=True, multiple=False),
    "allow-program": OptionShape(flag=False, multiple=True),
    "max-turns": OptionShape(flag=False, multiple=False),
}
PLAN = b"""
format: metaharness.eval/1
arms:
  a: {kind: b10x, model: m, hermetic: on, audit: true, allow-program: [git, ls], max-turns: 3}
  b: {kind: codex, audit: false}
tasks:
  - {id: t1, prompt: p, workspace: {git: repo, ref: main}}
  - {id: t2, prompt: q, workspace: {git: repo, ref: main}, timeout: 5}
repeat: 2
"""


def test_arms_become_run_words_in_plan_order() -> None:
    plan = read_plan(PLAN, OPTIONS).unwrap()
    a, b = plan.arms
    assert a.option("hermetic") == "on", "YAML's on stays the word run expects"
    assert run_words(a, {}) == (
        "--model", "m", "--hermetic", "on", "--audit", "--allow-program", "git", "--allow-program", "ls", "--max-turns", "3",
    )
    assert run_words(b, {}) == ()
    assert run_words(a, {"allow-program": ("/x/git",)})[5:8] == ("--allow-program", "/x/git", "--max-turns")
    assert [(t.id, arm.id, n) for t, arm, n in plan_runs(plan)] == [
        ("t1", "a", 1), ("t1", "a", 2), ("t1", "b", 1), ("t1", "b", 2),
        ("t2", "a", 1), ("t2", "a", 2), ("t2", "b", 1), ("t2", "b", 2),
    ]
    assert plan.tasks[0].timeout == 1800.0 and plan.tasks[1].timeout == 5.0
    narrowed = chosen_plan(plan, ("b", "t2")).unwrap()
    assert [arm.id for arm in narrowed.arms] == ["b"] and [task.id for task in narrowed.tasks] == ["t2"]


def test_a_flag_takes_a_bool_and_a_value_takes_a_word() -> None:
    flag = read_plan(PLAN.replace(b"audit: true", b"audit: yes"), OPTIONS).failure()
    assert (flag.code, flag.message) == ("plan-malformed", "arms.a.audit: a flag takes true or false")
    value = read_plan(PLAN.replace(b"model: m", b"model: [m, n]"), OPTIONS).failure()
    assert value.message == "arms.a.model: takes one word"


EVENTS = (
    {"event": "tool.requested", "call_id": "c1", "name": "file_write"},
    {"event": "tool.decided", "call_id": "c1", "decision": {"decision": "deny", "reason": "r"}, "decided_by": "frame"},
    {"event": "session.ended", "census": {"allowed": 0, "denied": 1, "replaced": 0, "abstained": 0}},
)
FACTS = RunFacts(events=EVENTS, exit=1, control="gap", audit=None, files={"note.md": b"hello", "gone.md": None})


def test_each_check_kind_says_why() -> None:
    outcomes = [
        score_check(check, FACTS)
        for check in (
            CensusCheck(id="c", counts=(("denied", 1),)),
            CensusCheck(id="c", counts=(("bypassed", 0),)),
            CensusCheck(id="c", counts=(("bypassed", 1),)),
            DecidedCheck(id="d", name="file_write", decision="deny", by="frame"),
            DecidedCheck(id="d", name="file_write", decision="allow", by=None),
            VerdictCheck(id="v", control="ok", audit=None),
            VerdictCheck(id="v", control=None, audit="ok"),
            FileCheck(id="f", path="note.md", exists=None, contains="hell"),
            FileCheck(id="f", path="gone.md", exists=False, contains=None),
            FileCheck(id="f", path="note.md", exists=False, contains=None),
        )
    ]
    assert [(outcome.passed, outcome.reason) for outcome in outcomes] == [
        (True, "the census counts denied 1"),
        (True, "the census counts bypassed 0"),
        (False, "the census counts bypassed 0, wanted 1"),
        (True, "a call of file_write decided deny by frame"),
        (False, "no call of file_write decided allow among 1 decided file_write calls"),
        (False, "control verdict gap, wanted ok"),
        (False, "the run printed no audit verdict"),
        (True, 'note.md contains "hell"'),
        (True, "gone.md does not exist"),
        (False, "note.md exists"),
    ]


def test_states_and_the_batch_exit() -> None:
    assert run_state(2, False, ()) == "failed-to-start"
    assert run_state(2, False, ({"event": "session.started"},)) == "finished"
    assert run_state(None, False, ()) == "failed-to-start" and run_state(143, True, ()) == "timed-out"
    assert report_verdicts(b"x\ncontrol verdict: gap\naudit verdict: ok (exit 0)\n") == ("gap", "ok")
    passed = RunResult(task="t", arm="a", repeat=1, state="finished", exit=0, census=None, control=None, audit=None,
                       checks=(score_check(CensusCheck(id="c", counts=(("denied", 1),)), FACTS),), duration_ms=5, attempts=1)
    failed = RunResult(**{**{f: getattr(passed, f) for f in passed.__struct_fields__}, "arm": "b",
                          "checks": (score_check(CensusCheck(id="c", counts=(("denied", 0),)), FACTS),)})
    lost = lost_result(("t", "c", 1), 2)
    assert batch_exit([passed]) == 0 and batch_exit([passed, failed]) == 1 and batch_exit([failed, lost]) == 3
    assert read_result(result_document(passed)) == passed
    assert read_result(result_document(lost)) is None and read_result(b'{"task":"t"}') is None
    assert result_table([passed, failed, lost], ["t"], ["a", "b", "c"]) == (
        "task  a    b    c\nt     1/1  0/1  0/0 lost\n\na: 1 pass / 0 fail\nb: 0 pass / 1 fail\nc: 0 pass / 0 fail\n"
    )
    page = report_page([passed, failed, lost], ["t"], ["a", "b", "c"], {("t", "a", 1)})
    assert page == report_page([passed, failed, lost], ["t"], ["a", "b", "c"], {("t", "a", 1)})
    assert '<a href="runs/t/a/1/page.html">#1 finished, 1/1</a>' in page and "runs/t/b/1/page.html" not in page
    assert '<td class="unfinished">' in page and "<script" not in page and "http" not in page


def test_a_bypass_named_after_session_ended_is_in_the_census_a_check_reads() -> None:
    """The deny that shows a bypass came after the terminal record (docs/events.md#census): the census check
    counts the later ``DECISION_BYPASSED`` as the audit does, and a later warning of another code is no bypass."""
    late = (*EVENTS, {"event": "warning", "code": "DECISION_BYPASSED", "message": "m"}, {"event": "warning", "code": "X"})
    facts = msgspec.structs.replace(FACTS, events=late)
    assert score_check(CensusCheck(id="c", counts=(("bypassed", 1), ("denied", 1))), facts).passed
    assert not score_check(CensusCheck(id="c", counts=(("bypassed", 0),)), facts).passed
    earlier = ({"event": "warning", "code": "DECISION_BYPASSED", "message": "m"}, *EVENTS)
    assert score_check(CensusCheck(id="c", counts=(("bypassed", 0),)), msgspec.structs.replace(FACTS, events=earlier)).passed
