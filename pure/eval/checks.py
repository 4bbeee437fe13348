"""A plan's checks and how each scores one run (docs/eval.md "Checks").

A check is read from the plan by ``read_check`` and scored by ``score_check`` over ``RunFacts``: the
run's events, its exit, the verdicts its report printed and the workspace files the checks name, as
read after the run. Each outcome is pass or fail with a one-line reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.refusal import Refusal

CENSUS_KEYS = ("allowed", "denied", "replaced", "abstained", "bypassed")
OMITTED_WHEN_ZERO = ("bypassed",)
"""Census counts a stream writes only when not zero (docs/events.md#census): absent reads as 0."""
VERDICTS = ("ok", "gap", "unk")
DECIDERS = ("frame", "embedder", "deadline", "adapter")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class EventCheck(msgspec.Struct, frozen=True):
    """Events whose fields (dotted keys reach into objects) equal the values, counted in bounds."""

    id: str
    fields: tuple[tuple[str, Any], ...]
    at_least: int | None
    at_most: int | None


class CensusCheck(msgspec.Struct, frozen=True):
    id: str
    counts: tuple[tuple[str, int], ...]


class ExitCheck(msgspec.Struct, frozen=True):
    id: str
    code: int


class VerdictCheck(msgspec.Struct, frozen=True):
    id: str
    control: str | None
    audit: str | None


class FileCheck(msgspec.Struct, frozen=True):
    """A workspace path after the run: it exists or not, and holds the text."""

    id: str
    path: str
    exists: bool | None
    contains: str | None


class DecidedCheck(msgspec.Struct, frozen=True):
    """At least one call of tool ``name`` decided ``decision`` (when given) by ``by`` (when given)."""

    id: str
    name: str
    decision: str | None
    by: str | None


Check = EventCheck | CensusCheck | ExitCheck | VerdictCheck | FileCheck | DecidedCheck


class RunFacts(msgspec.Struct, frozen=True):
    """What the checks read: the events (decoded lines), the exit (None when the run had none),
    the control and audit verdict words of the report (None when not printed), and for each path a
    file check names, its bytes after the run (None when it is missing or no regular file; an
    :class:`UnreadFile` when it is a link or reached through one, or too large)."""

    events: tuple[dict[str, Any], ...]
    exit: int | None
    control: str | None
    audit: str | None
    files: Mapping[str, bytes | UnreadFile | None]


class UnreadFile(msgspec.Struct, frozen=True):
    """A checked path the driver would not read, and why (``is a symbolic link``, …): its check fails
    saying so (docs/eval.md#checks)."""

    why: str


class CheckOutcome(msgspec.Struct, frozen=True):
    id: str
    passed: bool
    reason: str


def malformed(key: str, detail: str) -> Failure[Refusal]:
    """The ``plan-malformed`` refusal about the plan's ``key``."""
    return Failure(Refusal("plan-malformed", f"{key}: {detail}"))


def identifier(key: str, value: object) -> Result[str, Refusal]:
    """``value`` when it is an id: letters, digits, '.', '_' or '-', starting with a letter or digit."""
    if not isinstance(value, str) or not _ID.match(value):
        return malformed(key, "an id is letters, digits, '.', '_' or '-', starting with a letter or digit")
    return Success(value)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _event_check(key: str, check_id: str, raw: dict[str, Any], body: object) -> Result[Check, Refusal]:
    if not isinstance(body, dict) or not body or not all(isinstance(name, str) for name in body):
        return malformed(f"{key}.event", "a non-empty map of event field to value")
    bounds = {name: raw.get(name) for name in ("at-least", "at-most") if name in raw}
    if not all(_count(value) for value in bounds.values()):
        return malformed(key, "at-least and at-most are whole numbers of at least 0")
    at_least, at_most = bounds.get("at-least"), bounds.get("at-most")
    return Success(
        EventCheck(
            id=check_id,
            fields=tuple(body.items()),
            at_least=1 if at_least is None and at_most is None else at_least,
            at_most=at_most,
        )
    )


def _census_check(key: str, check_id: str, body: object) -> Result[Check, Refusal]:
    if not isinstance(body, dict) or not body:
        return malformed(f"{key}.census", f"a map of {'|'.join(CENSUS_KEYS)} to a count")
    for name, value in body.items():
        if name not in CENSUS_KEYS or not _count(value):
            return malformed(f"{key}.census.{name}", f"one of {', '.join(CENSUS_KEYS)} with a count")
    return Success(CensusCheck(id=check_id, counts=tuple(body.items())))


def _verdict_check(key: str, check_id: str, body: object) -> Result[Check, Refusal]:
    if not isinstance(body, dict) or not body or not set(body) <= {"control", "audit"}:
        return malformed(f"{key}.verdict", "a map with control and/or audit")
    if not all(value in VERDICTS for value in body.values()):
        return malformed(f"{key}.verdict", f"each verdict is one of {', '.join(VERDICTS)}")
    return Success(VerdictCheck(id=check_id, control=body.get("control"), audit=body.get("audit")))


def _file_check(key: str, check_id: str, body: object) -> Result[Check, Refusal]:
    if not isinstance(body, dict) or not set(body) <= {"path", "exists", "contains"}:
        return malformed(f"{key}.file", "a map of path, exists and contains")
    path, exists, contains = body.get("path"), body.get("exists"), body.get("contains")
    if not isinstance(path, str) or not path or path.startswith("/") or ".." in path.split("/"):
        return malformed(f"{key}.file.path", "a path inside the workspace")
    if exists is not None and not isinstance(exists, bool):
        return malformed(f"{key}.file.exists", "true or false")
    if contains is not None and not isinstance(contains, str):
        return malformed(f"{key}.file.contains", "a text")
    if exists is False and contains is not None:
        return malformed(f"{key}.file", "a file that must not exist contains nothing")
    return Success(FileCheck(id=check_id, path=path, exists=exists, contains=contains))


def _decided_check(key: str, check_id: str, body: object) -> Result[Check, Refusal]:
    if not isinstance(body, dict) or not set(body) <= {"name", "decision", "by"} or "name" not in body:
        return malformed(f"{key}.decided", "a map with name, and decision and by when wanted")
    if not all(isinstance(value, str) for value in body.values()):
        return malformed(f"{key}.decided", "name, decision and by are words")
    if "by" in body and body["by"] not in DECIDERS:
        return malformed(f"{key}.decided.by", f"one of {', '.join(DECIDERS)}")
    return Success(DecidedCheck(id=check_id, name=body["name"], decision=body.get("decision"), by=body.get("by")))


def read_check(key: str, raw: object) -> Result[Check, Refusal]:
    """One check of the plan at ``key``: an ``id`` and exactly one kind."""
    if not isinstance(raw, dict):
        return malformed(key, "a check is a map")
    checked_id = identifier(f"{key}.id", raw.get("id"))
    if isinstance(checked_id, Failure):
        return checked_id
    check_id = checked_id.unwrap()
    kinds = [name for name in ("event", "census", "exit", "verdict", "file", "decided") if name in raw]
    if len(kinds) != 1:
        return malformed(key, "a check has exactly one of event, census, exit, verdict, file, decided")
    (kind,) = kinds
    extra = sorted(set(raw) - {"id", kind} - ({"at-least", "at-most"} if kind == "event" else set()))
    if extra:
        return malformed(f"{key}.{extra[0]}", f"not a key of a {kind} check")
    body = raw[kind]
    if kind == "event":
        return _event_check(key, check_id, raw, body)
    if kind == "census":
        return _census_check(key, check_id, body)
    if kind == "exit":
        if isinstance(body, bool) or not isinstance(body, int):
            return malformed(f"{key}.exit", "an exit code")
        return Success(ExitCheck(id=check_id, code=body))
    if kind == "verdict":
        return _verdict_check(key, check_id, body)
    if kind == "file":
        return _file_check(key, check_id, body)
    return _decided_check(key, check_id, body)


_ABSENT = object()


def field_at(event: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted key (``decision.decision``), or a marker no plan value equals."""
    value: Any = event
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def _same(found: Any, wanted: Any) -> bool:
    """Equal as JSON values: a bool never equals a number."""
    return isinstance(found, bool) == isinstance(wanted, bool) and found == wanted


def event_matches(event: Mapping[str, Any], fields: tuple[tuple[str, Any], ...]) -> bool:
    """Every field of ``fields`` is present in ``event`` with an equal value."""
    return all(_same(field_at(event, key), value) for key, value in fields)


def _spell(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _score_event(check: EventCheck, facts: RunFacts) -> tuple[bool, str]:
    count = sum(1 for event in facts.events if event_matches(event, check.fields))
    wanted = " and ".join(
        [f"at least {check.at_least}"] * (check.at_least is not None) + [f"at most {check.at_most}"] * (check.at_most is not None)
    )
    passed = (check.at_least is None or count >= check.at_least) and (check.at_most is None or count <= check.at_most)
    spelled = ", ".join(f"{key}={_spell(value)}" for key, value in check.fields)
    return passed, f"{count} events with {spelled}; wanted {wanted}"


def _closing_census(facts: RunFacts) -> dict[str, Any] | None:
    """The last ``session.ended``'s census, a ``DECISION_BYPASSED`` written after it counted in ``bypassed``
    too (docs/events.md#census)."""
    ends = [index for index, event in enumerate(facts.events) if event.get("event") == "session.ended"]
    census = facts.events[ends[-1]].get("census") if ends else None
    if not isinstance(census, dict):
        return None
    later = sum(1 for event in facts.events[ends[-1] + 1:]
                if event.get("event") == "warning" and event.get("code") == "DECISION_BYPASSED")  # fmt: skip
    return census if not later else {**census, "bypassed": census.get("bypassed", 0) + later}


def _score_census(check: CensusCheck, facts: RunFacts) -> tuple[bool, str]:
    census = _closing_census(facts)
    if census is None:
        return False, "the stream has no session.ended census"
    for key, wanted in check.counts:
        found = census.get(key, 0 if key in OMITTED_WHEN_ZERO else None)
        if found is None:
            return False, f"the census has no {key} count"
        if found != wanted:
            return False, f"the census counts {key} {found}, wanted {wanted}"
    return True, "the census counts " + ", ".join(f"{key} {wanted}" for key, wanted in check.counts)


def _score_verdict(check: VerdictCheck, facts: RunFacts) -> tuple[bool, str]:
    for name, wanted, found in (("control", check.control, facts.control), ("audit", check.audit, facts.audit)):
        if wanted is None:
            continue
        if found is None:
            return False, f"the run printed no {name} verdict"
        if found != wanted:
            return False, f"{name} verdict {found}, wanted {wanted}"
    return True, ", ".join(f"{name} verdict {wanted}" for name, wanted in (("control", check.control), ("audit", check.audit)) if wanted)


def _score_file(check: FileCheck, facts: RunFacts) -> tuple[bool, str]:
    data = facts.files.get(check.path)
    if isinstance(data, UnreadFile):
        return False, f"{check.path} {data.why}"
    if data is None:
        return (check.exists is False, f"{check.path} does not exist")
    if check.exists is False:
        return False, f"{check.path} exists"
    if check.contains is None:
        return True, f"{check.path} exists"
    found = check.contains.encode("utf-8") in data
    return found, f"{check.path} {'contains' if found else 'does not contain'} {_spell(check.contains)}"


def _score_decided(check: DecidedCheck, facts: RunFacts) -> tuple[bool, str]:
    names = {
        event.get("call_id"): event.get("name") for event in facts.events if event.get("event") == "tool.requested"
    }
    decided = [
        event for event in facts.events if event.get("event") == "tool.decided" and names.get(event.get("call_id")) == check.name
    ]
    wanted = " ".join(
        [check.name] + [f"decided {check.decision}"] * (check.decision is not None) + [f"by {check.by}"] * (check.by is not None)
    )
    for event in decided:
        decision = event.get("decision")
        kind = decision.get("decision") if isinstance(decision, dict) else None
        if (check.decision is None or kind == check.decision) and (check.by is None or event.get("decided_by") == check.by):
            return True, f"a call of {wanted}"
    return False, f"no call of {wanted} among {len(decided)} decided {check.name} calls"


def score_check(check: Check, facts: RunFacts) -> CheckOutcome:
    """Whether ``facts`` satisfy ``check``, with the reason in one line."""
    if isinstance(check, EventCheck):
        passed, reason = _score_event(check, facts)
    elif isinstance(check, CensusCheck):
        passed, reason = _score_census(check, facts)
    elif isinstance(check, ExitCheck):
        passed = facts.exit == check.code
        reason = f"exit {facts.exit if facts.exit is not None else 'none'}, wanted {check.code}"
    elif isinstance(check, VerdictCheck):
        passed, reason = _score_verdict(check, facts)
    elif isinstance(check, FileCheck):
        passed, reason = _score_file(check, facts)
    else:
        passed, reason = _score_decided(check, facts)
    return CheckOutcome(id=check.id, passed=passed, reason=reason)


def file_paths(checks: tuple[Check, ...]) -> tuple[str, ...]:
    """The workspace paths the file checks read, once each, in order."""
    return tuple(dict.fromkeys(check.path for check in checks if isinstance(check, FileCheck)))
