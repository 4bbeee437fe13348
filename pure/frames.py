"""The frame document ``metaharness.frame/1`` (docs/frames.md) and the operation vocabulary
(docs/decisions.md#operations).

``load_frame`` runs checks 2–7 of docs/frames.md#3-what-a-run-does-with-it over a file's bytes; ``frame_from_object``
runs 3–7 over an already decoded value (a ``frame.set`` command's ``frame``, whose ``format`` key may be absent). A
failure is a ``FrameFault`` naming its check; ``frame_refusal`` turns it into the run refusal
``frame-invalid`` with the message ``frame <path>: <message>``. ``canonical_frame_bytes`` and
``frame_digest`` are docs/frames.md#2-seal-it; ``seal_frame`` sets the digest of a document for tools and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias, TypeVar

import msgspec
from msgspec import Struct
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import decode_bounded, first_duplicate_key
from metaharness.pure.events import StepRef
from metaharness.pure.jsonline import canonical, compact, sha256_hex
from metaharness.pure.operations import OPERATION_NAMES
from metaharness.pure.refusal import Refusal
from metaharness.pure.results import each

FRAME_FORMAT = "metaharness.frame/1"

MCP_CALL = "mcp.call"
_UINT32_MAX = 2**32 - 1
_HEX = frozenset("0123456789abcdef")


class Operation(Struct, frozen=True, omit_defaults=True):
    """An operation (docs/decisions.md#operations); ``mcp.call`` carries ``server`` and ``tool`` and equals another only
    when both match. Written ``{"op":…}`` or ``{"op":"mcp.call","server":…,"tool":…}``."""

    op: str
    server: str | None = None
    tool: str | None = None

    def sort_key(self) -> tuple[str, str, str]:
        """The canonical order of docs/frames.md#2-seal-it step 3: (``op``, ``server``, ``tool``), missing parts
        as ``""``."""
        return (self.op, self.server or "", self.tool or "")


class FrameWorkflow(Struct, frozen=True):
    """The workflow a frame belongs to (docs/frames.md#4-fields)."""

    id: str
    version: str


class FrameNode(Struct, frozen=True):
    """A workflow node named by ``node`` or ``next`` (docs/frames.md#4-fields)."""

    id: str


class Prior(Struct, frozen=True):
    """Something already established, and where it came from (docs/frames.md#4-fields)."""

    text: str
    source: str | None


class Ask(Struct, frozen=True):
    """An obligation or a reaching condition, and who asked for it (docs/frames.md#4-fields)."""

    text: str
    asked_by: str | None


class NoHandoff(Struct, frozen=True, tag_field="handoff", tag="none"):
    """The step hands nothing on (docs/frames.md#4-fields)."""


class ArtifactHandoff(Struct, frozen=True, tag_field="handoff", tag="artifact"):
    """The step hands on a named artifact (docs/frames.md#4-fields)."""

    name: str
    kind: str | None


class StructuredAnswerHandoff(Struct, frozen=True, tag_field="handoff", tag="structured_answer"):
    """The step hands on an answer of a schema (docs/frames.md#4-fields)."""

    schema: str


Handoff: TypeAlias = NoHandoff | ArtifactHandoff | StructuredAnswerHandoff


class SubjectRule(Struct, frozen=True):
    """A glob over subjects and the operations it admits; rules are ordered, first match wins
    (docs/frames.md#4-fields)."""

    subject: str
    operations: tuple[Operation, ...]


class Entities(Struct, frozen=True):
    """The entities a frame names, and where they come from (docs/frames.md#4-fields)."""

    source: str
    members: tuple[str, ...]


class Frame(Struct, frozen=True, kw_only=True):
    """A loaded frame (docs/frames.md#4-fields). ``operations`` and each rule's ``operations`` are held as sets in
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
    """Why a frame document was refused: the docs/frames.md#3-what-a-run-does-with-it check that failed (2–7) and
    its message."""

    check: int
    message: str


def operation_set(operations: tuple[Operation, ...]) -> tuple[Operation, ...]:
    """Duplicates removed, sorted by (``op``, ``server``, ``tool``) (docs/frames.md#2-seal-it step 3)."""
    return tuple(sorted(set(operations), key=Operation.sort_key))


# Check 6, the typed shape (docs/frames.md#4-fields): each reader returns the value read or the detail of
# the first fault, in the document's reading order; unknown fields are refused at every level.

_Part = TypeVar("_Part")


def _fields(
    value: Any, path: str, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> Result[dict[str, Any], str]:
    if not isinstance(value, dict):
        return Failure(f"{path} must be an object")
    unknown = [key for key in value if key not in required and key not in optional]
    if unknown:
        return Failure(f'unknown field "{unknown[0]}"')
    missing = [key for key in required if key not in value]
    if missing:
        return Failure(f'missing field "{_join(path, missing[0])}"')
    return Success(value)


def _join(path: str, key: str) -> str:
    return key if path == "the frame" else f"{path}.{key}"


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def _text(value: Any, path: str) -> Result[str, str]:
    return Success(value) if isinstance(value, str) else Failure(f"{path} must be a string")


def _optional_text(value: Any, path: str) -> Result[str | None, str]:
    return Success(None) if value is None else _text(value, path)


def _counter(value: Any, path: str) -> Result[int, str]:
    if type(value) is not int or not 0 <= value <= _UINT32_MAX:
        return Failure(f"{path} must be an integer from 0 to {_UINT32_MAX}")
    return Success(value)


def _listed(value: Any, path: str, read: Callable[[Any, str], Result[_Part, str]]) -> Result[tuple[_Part, ...], str]:
    """A list whose items each read at ``path[n]``."""
    if not isinstance(value, list):
        return Failure(f"{path} must be a list")
    return each(range(len(value)), lambda n: read(value[n], f"{path}[{n}]"))


def _operation(value: Any, path: str) -> Result[Operation, str]:
    return Result.do(
        operation
        for raw in _fields(value, path, ("op",), ("server", "tool"))
        for name in _text(raw["op"], f"{path}.op")
        for operation in _named_operation(raw, name, path)
    )


def _named_operation(raw: dict[str, Any], name: str, path: str) -> Result[Operation, str]:
    if name not in OPERATION_NAMES:
        return Failure(f'{path}.op is "{name}", which is not an operation of the vocabulary')
    if name != MCP_CALL:
        return _fields(raw, path, ("op",)).map(lambda _: Operation(name))
    return Result.do(
        Operation(name, server, tool)
        for _ in _fields(raw, path, ("op", "server", "tool"))
        for server in _text(raw["server"], f"{path}.server")
        for tool in _text(raw["tool"], f"{path}.tool")
    )


def _operations(value: Any, path: str) -> Result[tuple[Operation, ...], str]:
    return _listed(value, path, _operation).map(operation_set)


def _handoff(value: Any) -> Result[Handoff, str]:
    return _fields(value, "handoff", ("handoff",), ("name", "kind", "schema")).bind(_handoff_of_its_kind)


def _handoff_of_its_kind(raw: dict[str, Any]) -> Result[Handoff, str]:
    match raw["handoff"]:
        case "none":
            return _fields(raw, "handoff", ("handoff",)).map(lambda _: NoHandoff())
        case "artifact":
            return Result.do(
                ArtifactHandoff(name, kind)
                for _ in _fields(raw, "handoff", ("handoff", "name"), ("kind",))
                for name in _text(raw["name"], "handoff.name")
                for kind in _optional_text(raw.get("kind"), "handoff.kind")
            )
        case "structured_answer":
            return Result.do(
                StructuredAnswerHandoff(schema)
                for _ in _fields(raw, "handoff", ("handoff", "schema"))
                for schema in _text(raw["schema"], "handoff.schema")
            )
    return Failure('handoff.handoff must be "none", "artifact" or "structured_answer"')


def _ask(value: Any, path: str) -> Result[Ask, str]:
    return Result.do(
        Ask(text, asked_by)
        for raw in _fields(value, path, ("text",), ("asked_by",))
        for text in _text(raw["text"], f"{path}.text")
        for asked_by in _optional_text(raw.get("asked_by"), f"{path}.asked_by")
    )


def _prior(value: Any, path: str) -> Result[Prior, str]:
    return Result.do(
        Prior(text, source)
        for raw in _fields(value, path, ("text",), ("source",))
        for text in _text(raw["text"], f"{path}.text")
        for source in _optional_text(raw.get("source"), f"{path}.source")
    )


def _node(value: Any, path: str) -> Result[FrameNode, str]:
    return _fields(value, path, ("id",)).bind(lambda raw: _text(raw["id"], f"{path}.id")).map(FrameNode)


def _subject_rule(value: Any, path: str) -> Result[SubjectRule, str]:
    return Result.do(
        SubjectRule(subject, operations)
        for raw in _fields(value, path, ("subject", "operations"))
        for subject in _text(raw["subject"], f"{path}.subject")
        for operations in _operations(raw["operations"], f"{path}.operations")
    )


def _subjects(value: Any) -> Result[tuple[SubjectRule, ...] | None, str]:
    return Success(None) if value is None else _listed(value, "subjects", _subject_rule)


def _entities(value: Any) -> Result[Entities | None, str]:
    if value is None:
        return Success(None)
    return Result.do(
        Entities(source, members)
        for raw in _fields(value, "entities", ("source", "members"))
        for members in _listed(raw["members"], "entities.members", _text)
        for source in _text(raw["source"], "entities.source")
    )


def _workflow(raw: dict[str, Any]) -> Result[FrameWorkflow, str]:
    return Result.do(
        FrameWorkflow(workflow_id, version)
        for workflow_id in _text(raw["id"], "workflow.id")
        for version in _text(raw["version"], "workflow.version")
    )


def _step(raw: dict[str, Any]) -> Result[StepRef, str]:
    return Result.do(
        StepRef(workflow=workflow, state=state, index=index, attempt=attempt)
        for workflow in _text(raw["workflow"], "step.workflow")
        for state in _text(raw["state"], "step.state")
        for index in _counter(raw["index"], "step.index")
        for attempt in _counter(raw["attempt"], "step.attempt")
    )


def _digest(value: Any, required: bool) -> Result[str, str]:
    if required and not _is_digest(value):
        return Failure("digest must be 64 lowercase hex characters")
    return Success(value if isinstance(value, str) else "")


_REQUIRED = ("workflow", "node", "step", "prior", "obligations", "reaching", "next", "handoff", "operations")
_OPTIONAL = ("format", "subjects", "entities", "digest")


def _shape(raw: dict[str, Any], digest_required: bool) -> Result[Frame, str]:
    """Check 6: the typed shape of a frame, the detail of its first fault otherwise."""
    return Result.do(
        Frame(
            workflow=workflow,
            node=node,
            step=step,
            prior=prior,
            obligations=obligations,
            reaching=reaching,
            next=next_nodes,
            handoff=handoff,
            operations=operations,
            subjects=subjects,
            entities=entities,
            digest=digest,
        )
        for _ in _fields(raw, "the frame", _REQUIRED + (("digest",) if digest_required else ()), _OPTIONAL)
        for workflow_fields in _fields(raw["workflow"], "workflow", ("id", "version"))
        for step_fields in _fields(raw["step"], "step", ("workflow", "state", "index", "attempt"))
        for digest in _digest(raw.get("digest", ""), digest_required)
        for workflow in _workflow(workflow_fields)
        for node in _node(raw["node"], "node")
        for step in _step(step_fields)
        for prior in _listed(raw["prior"], "prior", _prior)
        for obligations in _listed(raw["obligations"], "obligations", _ask)
        for reaching in _listed(raw["reaching"], "reaching", _ask)
        for next_nodes in _listed(raw["next"], "next", _node)
        for handoff in _handoff(raw["handoff"])
        for operations in _operations(raw["operations"], "operations")
        for subjects in _subjects(raw.get("subjects"))
        for entities in _entities(raw.get("entities"))
    )


def _not_a_frame(detail: str) -> FrameFault:
    return FrameFault(6, f"not a frame: {detail}")


def canonical_frame_bytes(frame: Frame) -> bytes:
    """The canonical bytes of docs/frames.md#2-seal-it: optional fields filled with ``null`` except ``subjects``
    (kept iff given a list), no ``format`` or ``digest``, operation sets deduplicated and sorted, rules
    never reordered, keys sorted at every level."""
    content = msgspec.to_builtins(frame)
    del content["digest"]
    if frame.subjects is None:
        del content["subjects"]
    return canonical(content)


def frame_digest(frame: Frame) -> str:
    """The SHA-256 hex of a frame's canonical bytes (docs/frames.md#2-seal-it)."""
    return sha256_hex(canonical_frame_bytes(frame))


def _tag_text(tag: object) -> str:
    return tag if isinstance(tag, str) else "<not a string>"


def frame_from_object(raw: Any, *, format_required: bool = True) -> Result[Frame, FrameFault]:
    """Checks 3–7 of docs/frames.md#3-what-a-run-does-with-it over a decoded JSON value. A ``frame.set`` frame passes
    ``format_required=False``: its ``format`` key may be absent and must otherwise be the tag."""
    if not isinstance(raw, dict):
        return Failure(FrameFault(3, "not a JSON object: the document is JSON but not an object"))
    if "format" not in raw and format_required:
        return Failure(FrameFault(4, f'no format tag, expected "{FRAME_FORMAT}"'))
    if "format" in raw and raw["format"] != FRAME_FORMAT:
        return Failure(FrameFault(5, f'unknown format tag "{_tag_text(raw["format"])}", expected "{FRAME_FORMAT}"'))
    return _shape(raw, digest_required=True).alt(_not_a_frame).bind(_sealed)


def _sealed(frame: Frame) -> Result[Frame, FrameFault]:
    """Check 7: the stated digest is the digest of the contents."""
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
    """Checks 2–7 of docs/frames.md#3-what-a-run-does-with-it over the bytes of a ``--frame`` file."""
    return decode_json(data).alt(lambda detail: FrameFault(2, f"not a JSON object: {detail}")).bind(frame_from_object)


def frame_refusal(path: str, fault: FrameFault) -> Refusal:
    """The run refusal for a frame that failed checks 2–7: ``frame-invalid``, ``frame <path>: <message>``."""
    return Refusal("frame-invalid", f"frame {path}: {fault.message}")


def refuse_frame_beside_observe(decisions: str, frame_path: str | None) -> Result[None, Refusal]:
    """``observe-with-frame`` (docs/frames.md#3-what-a-run-does-with-it): observe decides nothing, so a frame beside it
    would be recorded as policy nobody applied."""
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
    """A frame document with its digest computed (docs/frames.md#2-seal-it), for tools and tests; any stated
    ``digest`` is ignored and the shape is checked as on load."""
    unsealed = {key: value for key, value in raw.items() if key != "digest"}
    return (
        _shape(unsealed, digest_required=False)
        .map(lambda frame: msgspec.structs.replace(frame, digest=frame_digest(frame)))
        .alt(_not_a_frame)
    )


def frame_document(frame: Frame) -> bytes:
    """A sealed frame as one compact JSON document: ``format`` first, fields in docs/frames.md#4-fields order,
    ``digest`` last; ``subjects`` written only when present."""
    content = msgspec.to_builtins(frame)
    if frame.subjects is None:
        del content["subjects"]
    content["digest"] = content.pop("digest")
    return compact({"format": FRAME_FORMAT, **content})
