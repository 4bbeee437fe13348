"""The frame document ``metaharness.frame/1`` (spec 20 §6) and the operation vocabulary (§7).

``load_frame`` runs checks 2–7 of §6.3 over a file's bytes; ``frame_from_object`` runs 3–7 over an
already decoded value (a ``frame.set`` command's ``frame``, whose ``format`` key may be absent). A
failure is a ``FrameFault`` naming its check; ``frame_refusal`` turns it into the run refusal
``frame-invalid`` with the message ``frame <path>: <message>``. ``canonical_frame_bytes`` and
``frame_digest`` are §6.2; ``seal_frame`` sets the digest of a document for tools and tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import msgspec
from msgspec import Struct
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import decode_bounded, first_duplicate_key
from metaharness.pure.events import StepRef
from metaharness.pure.jsonline import canonical, compact, sha256_hex
from metaharness.pure.refusal import Refusal

FRAME_FORMAT = "metaharness.frame/1"

OPERATION_NAMES: tuple[str, ...] = (
    "file.read",
    "file.write",
    "file.edit",
    "dir.list",
    "search",
    "shell",
    "web.read",
    "skill.load",
    "subagent.spawn",
    "task.todo",
    "mcp.call",
)
"""The closed operation vocabulary of spec 20 §7, in the order the spec lists it."""

MCP_CALL = "mcp.call"
_UINT32_MAX = 2**32 - 1
_HEX = frozenset("0123456789abcdef")


class Operation(Struct, frozen=True, omit_defaults=True):
    """An operation (spec 20 §7); ``mcp.call`` carries ``server`` and ``tool`` and equals another only
    when both match. Written ``{"op":…}`` or ``{"op":"mcp.call","server":…,"tool":…}``."""

    op: str
    server: str | None = None
    tool: str | None = None

    def sort_key(self) -> tuple[str, str, str]:
        """The canonical order of §6.2 step 3: (``op``, ``server``, ``tool``), missing parts as ``""``."""
        return (self.op, self.server or "", self.tool or "")


class FrameWorkflow(Struct, frozen=True):
    """The workflow a frame belongs to (spec 20 §6.1)."""

    id: str
    version: str


class FrameNode(Struct, frozen=True):
    """A workflow node named by ``node`` or ``next`` (spec 20 §6.1)."""

    id: str


class Prior(Struct, frozen=True):
    """Something already established, and where it came from (spec 20 §6.1)."""

    text: str
    source: str | None


class Ask(Struct, frozen=True):
    """An obligation or a reaching condition, and who asked for it (spec 20 §6.1)."""

    text: str
    asked_by: str | None


class NoHandoff(Struct, frozen=True, tag_field="handoff", tag="none"):
    """The step hands nothing on (spec 20 §6.1)."""


class ArtifactHandoff(Struct, frozen=True, tag_field="handoff", tag="artifact"):
    """The step hands on a named artifact (spec 20 §6.1)."""

    name: str
    kind: str | None


class StructuredAnswerHandoff(Struct, frozen=True, tag_field="handoff", tag="structured_answer"):
    """The step hands on an answer of a schema (spec 20 §6.1)."""

    schema: str


Handoff: TypeAlias = NoHandoff | ArtifactHandoff | StructuredAnswerHandoff


class SubjectRule(Struct, frozen=True):
    """A glob over subjects and the operations it admits; rules are ordered, first match wins (§6.1)."""

    subject: str
    operations: tuple[Operation, ...]


class Entities(Struct, frozen=True):
    """The entities a frame names, and where they come from (spec 20 §6.1)."""

    source: str
    members: tuple[str, ...]


class Frame(Struct, frozen=True, kw_only=True):
    """A loaded frame (spec 20 §6.1). ``operations`` and each rule's ``operations`` are held as sets in
    canonical order; ``subjects`` is ``None`` when absent (an empty tuple scopes everything)."""

    workflow: FrameWorkflow
    node: FrameNode
    step: StepRef
    prior: tuple[Prior, ...]
    obligations: tuple[Ask, ...]
    reaching: tuple[Ask, ...]
    next: tuple[FrameNode, ...]
    handoff: Handoff
    operations: tuple[Operation, ...]
    subjects: tuple[SubjectRule, ...] | None
    entities: Entities | None
    digest: str


class FrameFault(Struct, frozen=True):
    """Why a frame document was refused: the §6.3 check that failed (2–7) and its message."""

    check: int
    message: str


class _NotAFrame(Exception):
    """Raised inside the shape reader only; ``frame_from_object`` returns it as check 6."""


def operation_set(operations: tuple[Operation, ...]) -> tuple[Operation, ...]:
    """Duplicates removed, sorted by (``op``, ``server``, ``tool``) (spec 20 §6.2 step 3)."""
    return tuple(sorted(set(operations), key=Operation.sort_key))


def _fields(value: Any, path: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _NotAFrame(f"{path} must be an object")
    for key in value:
        if key not in required and key not in optional:
            raise _NotAFrame(f'unknown field "{key}"')
    for key in required:
        if key not in value:
            raise _NotAFrame(f'missing field "{_join(path, key)}"')
    return value


def _join(path: str, key: str) -> str:
    return key if path == "the frame" else f"{path}.{key}"


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _NotAFrame(f"{path} must be a string")
    return value


def _optional_text(value: Any, path: str) -> str | None:
    return None if value is None else _text(value, path)


def _counter(value: Any, path: str) -> int:
    if type(value) is not int or not 0 <= value <= _UINT32_MAX:
        raise _NotAFrame(f"{path} must be an integer from 0 to {_UINT32_MAX}")
    return value


def _items(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _NotAFrame(f"{path} must be a list")
    return value


def _operation(value: Any, path: str) -> Operation:
    raw = _fields(value, path, ("op",), ("server", "tool"))
    name = _text(raw["op"], f"{path}.op")
    if name not in OPERATION_NAMES:
        raise _NotAFrame(f'{path}.op is "{name}", which is not an operation of the vocabulary')
    if name != MCP_CALL:
        _fields(raw, path, ("op",))
        return Operation(name)
    _fields(raw, path, ("op", "server", "tool"))
    return Operation(name, _text(raw["server"], f"{path}.server"), _text(raw["tool"], f"{path}.tool"))


def _operations(value: Any, path: str) -> tuple[Operation, ...]:
    return operation_set(tuple(_operation(item, f"{path}[{n}]") for n, item in enumerate(_items(value, path))))


def _handoff(value: Any) -> Handoff:
    raw = _fields(value, "handoff", ("handoff",), ("name", "kind", "schema"))
    kind = raw["handoff"]
    if kind == "none":
        _fields(raw, "handoff", ("handoff",))
        return NoHandoff()
    if kind == "artifact":
        _fields(raw, "handoff", ("handoff", "name"), ("kind",))
        return ArtifactHandoff(_text(raw["name"], "handoff.name"), _optional_text(raw.get("kind"), "handoff.kind"))
    if kind == "structured_answer":
        _fields(raw, "handoff", ("handoff", "schema"))
        return StructuredAnswerHandoff(_text(raw["schema"], "handoff.schema"))
    raise _NotAFrame('handoff.handoff must be "none", "artifact" or "structured_answer"')


def _asks(value: Any, path: str) -> tuple[Ask, ...]:
    asks = []
    for n, item in enumerate(_items(value, path)):
        raw = _fields(item, f"{path}[{n}]", ("text",), ("asked_by",))
        asks.append(Ask(_text(raw["text"], f"{path}[{n}].text"), _optional_text(raw.get("asked_by"), f"{path}[{n}].asked_by")))
    return tuple(asks)


def _priors(value: Any) -> tuple[Prior, ...]:
    priors = []
    for n, item in enumerate(_items(value, "prior")):
        raw = _fields(item, f"prior[{n}]", ("text",), ("source",))
        priors.append(Prior(_text(raw["text"], f"prior[{n}].text"), _optional_text(raw.get("source"), f"prior[{n}].source")))
    return tuple(priors)


def _nodes(value: Any, path: str) -> tuple[FrameNode, ...]:
    return tuple(
        FrameNode(_text(_fields(item, f"{path}[{n}]", ("id",))["id"], f"{path}[{n}].id"))
        for n, item in enumerate(_items(value, path))
    )


def _subjects(value: Any) -> tuple[SubjectRule, ...] | None:
    if value is None:
        return None
    rules = []
    for n, item in enumerate(_items(value, "subjects")):
        raw = _fields(item, f"subjects[{n}]", ("subject", "operations"))
        rules.append(
            SubjectRule(
                _text(raw["subject"], f"subjects[{n}].subject"),
                _operations(raw["operations"], f"subjects[{n}].operations"),
            )
        )
    return tuple(rules)


def _entities(value: Any) -> Entities | None:
    if value is None:
        return None
    raw = _fields(value, "entities", ("source", "members"))
    members = tuple(_text(m, f"entities.members[{n}]") for n, m in enumerate(_items(raw["members"], "entities.members")))
    return Entities(_text(raw["source"], "entities.source"), members)


_REQUIRED = ("workflow", "node", "step", "prior", "obligations", "reaching", "next", "handoff", "operations")
_OPTIONAL = ("format", "subjects", "entities", "digest")


def _shape(raw: dict[str, Any], digest_required: bool) -> Frame:
    """Check 6: the typed shape of §6.1, refusing unknown fields at every level."""
    _fields(raw, "the frame", _REQUIRED + (("digest",) if digest_required else ()), _OPTIONAL)
    workflow = _fields(raw["workflow"], "workflow", ("id", "version"))
    step = _fields(raw["step"], "step", ("workflow", "state", "index", "attempt"))
    digest = raw.get("digest", "")
    if digest_required and not _is_digest(digest):
        raise _NotAFrame("digest must be 64 lowercase hex characters")
    return Frame(
        workflow=FrameWorkflow(_text(workflow["id"], "workflow.id"), _text(workflow["version"], "workflow.version")),
        node=FrameNode(_text(_fields(raw["node"], "node", ("id",))["id"], "node.id")),
        step=StepRef(
            workflow=_text(step["workflow"], "step.workflow"),
            state=_text(step["state"], "step.state"),
            index=_counter(step["index"], "step.index"),
            attempt=_counter(step["attempt"], "step.attempt"),
        ),
        prior=_priors(raw["prior"]),
        obligations=_asks(raw["obligations"], "obligations"),
        reaching=_asks(raw["reaching"], "reaching"),
        next=_nodes(raw["next"], "next"),
        handoff=_handoff(raw["handoff"]),
        operations=_operations(raw["operations"], "operations"),
        subjects=_subjects(raw.get("subjects")),
        entities=_entities(raw.get("entities")),
        digest=digest if isinstance(digest, str) else "",
    )


def canonical_frame_bytes(frame: Frame) -> bytes:
    """The canonical bytes of spec 20 §6.2: optional fields filled with ``null`` except ``subjects``
    (kept iff given a list), no ``format`` or ``digest``, operation sets deduplicated and sorted, rules
    never reordered, keys sorted at every level."""
    content = msgspec.to_builtins(frame)
    del content["digest"]
    if frame.subjects is None:
        del content["subjects"]
    return canonical(content)


def frame_digest(frame: Frame) -> str:
    """The SHA-256 hex of a frame's canonical bytes (spec 20 §6.2)."""
    return sha256_hex(canonical_frame_bytes(frame))


def _tag_text(tag: object) -> str:
    return tag if isinstance(tag, str) else "<not a string>"


def frame_from_object(raw: Any, *, format_required: bool = True) -> Result[Frame, FrameFault]:
    """Checks 3–7 of spec 20 §6.3 over a decoded JSON value. A ``frame.set`` frame passes
    ``format_required=False``: its ``format`` key may be absent and must otherwise be the tag."""
    if not isinstance(raw, dict):
        return Failure(FrameFault(3, "not a JSON object: the document is JSON but not an object"))
    if "format" not in raw and format_required:
        return Failure(FrameFault(4, f'no format tag, expected "{FRAME_FORMAT}"'))
    if "format" in raw and raw["format"] != FRAME_FORMAT:
        return Failure(FrameFault(5, f'unknown format tag "{_tag_text(raw["format"])}", expected "{FRAME_FORMAT}"'))
    try:
        frame = _shape(raw, digest_required=True)
    except _NotAFrame as fault:
        return Failure(FrameFault(6, f"not a frame: {fault}"))
    computed = frame_digest(frame)
    if computed != frame.digest:
        return Failure(
            FrameFault(
                7,
                f"the stated digest {frame.digest} does not describe the contents (computed {computed}); "
                "the frame was never sealed or was edited after sealing",
            )
        )
    return Success(frame)


def decode_json(data: bytes) -> Result[Any, str]:
    """Decode one JSON document, or the parser's detail (a leading byte-order mark is not JSON; nor is
    an object holding one key twice, whose first copy a decoder would silently drop)."""
    try:
        value = decode_bounded(data)
    except (msgspec.DecodeError, RecursionError) as error:
        return Failure(str(error))
    duplicate = first_duplicate_key(data)
    if duplicate is not None:
        return Failure(f"the key {duplicate!r} appears twice in one object")
    return Success(value)


def load_frame(data: bytes) -> Result[Frame, FrameFault]:
    """Checks 2–7 of spec 20 §6.3 over the bytes of a ``--frame`` file."""
    return decode_json(data).alt(lambda detail: FrameFault(2, f"not a JSON object: {detail}")).bind(frame_from_object)


def frame_refusal(path: str, fault: FrameFault) -> Refusal:
    """The run refusal for a frame that failed checks 2–7: ``frame-invalid``, ``frame <path>: <message>``."""
    return Refusal("frame-invalid", f"frame {path}: {fault.message}")


def refuse_frame_beside_observe(decisions: str, frame_path: str | None) -> Result[None, Refusal]:
    """``observe-with-frame`` (spec 20 §6.3): observe decides nothing, so a frame beside it would be
    recorded as policy nobody applied."""
    if decisions == "observe" and frame_path is not None:
        return Failure(
            Refusal(
                "observe-with-frame",
                f"--frame {frame_path} was given with --decisions observe: observe decides nothing, "
                "so a frame would be recorded as policy nobody applied",
            )
        )
    return Success(None)


def seal_frame(raw: Mapping[str, Any]) -> Result[Frame, FrameFault]:
    """A frame document with its digest computed (spec 20 §6.2), for tools and tests; any stated
    ``digest`` is ignored and the shape is checked as on load."""
    unsealed = {key: value for key, value in raw.items() if key != "digest"}
    try:
        frame = _shape(unsealed, digest_required=False)
    except _NotAFrame as fault:
        return Failure(FrameFault(6, f"not a frame: {fault}"))
    return Success(msgspec.structs.replace(frame, digest=frame_digest(frame)))


def frame_document(frame: Frame) -> bytes:
    """A sealed frame as one compact JSON document: ``format`` first, fields in §6.1 order, ``digest``
    last; ``subjects`` written only when present."""
    content = msgspec.to_builtins(frame)
    if frame.subjects is None:
        del content["subjects"]
    content["digest"] = content.pop("digest")
    return compact({"format": FRAME_FORMAT, **content})
