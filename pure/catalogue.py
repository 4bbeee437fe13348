"""The caller's tool contract: ``metaharness.catalogue/1`` (docs/hermetic.md#catalogue).

``load_catalogue`` takes a catalogue file's bytes to the checked catalogue or the first refusal of
docs/hermetic.md#catalogue-refusals (``catalogue-unreadable`` for text that is not UTF-8,
``catalogue-not-tool-contract``, ``catalogue-malformed``); the scratch copy (docs/hermetic.md#catalogue-scratch-copy) is
built and read back in memory as part of it. ``scratch_copy`` gives the copy's bytes, ``check_copy_read_back`` judges
the bytes read back from the written copy (``catalogue-copy-differs``), ``check_codex_names`` is codex's
reserved-name rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.frames import Operation
from metaharness.pure.loop.catalogue import subjects_of
from metaharness.pure.program_subjects import argv_subjects
from metaharness.pure.refusal import Refusal
from metaharness.pure.results import each

CATALOGUE_FORMAT = "metaharness.catalogue/1"
CATALOGUE_CAP = 4 * 1024 * 1024
"""The byte bound of a catalogue file and of its scratch copy (docs/hermetic.md#catalogue-refusals, 4 MiB)."""

FIELD_TYPES = ("string", "integer", "number", "boolean", "array", "object")
PERFORMED_OPERATIONS: dict[str, str] = {
    "file_read": "file.read",
    "dir_list": "dir.list",
    "search": "search",
    "find": "search",
    "file_write": "file.write",
    "file_edit": "file.edit",
}
"""The loop entries this build performs under a catalogue and the operation of each
(docs/hermetic.md#what-an-entry-performs)."""

WRITE_ENTRIES = frozenset({"file_write", "file_edit"})

_ENTRY_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_ESCAPED = frozenset([*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF, ord('"'), ord("\\")])
_BOM = "\ufeff"


class Field(msgspec.Struct, frozen=True):
    """One input field of an entry: its JSON type, whether it is required, its description."""

    name: str
    type: str
    required: bool
    description: str | None


class CatalogueEntry(msgspec.Struct, frozen=True):
    """One entry: the name it is published under, its description, the loop entry that performs it."""

    name: str
    description: str
    performs: str
    input: tuple[Field, ...]


class Catalogue(msgspec.Struct, frozen=True):
    """The checked catalogue (docs/hermetic.md#catalogue-document): entries in the document's order."""

    entries: tuple[CatalogueEntry, ...]

    def names(self) -> tuple[str, ...]:
        """The published names in order."""
        return tuple(entry.name for entry in self.entries)

    def entry(self, name: str) -> CatalogueEntry | None:
        """The entry published under ``name``."""
        return next((entry for entry in self.entries if entry.name == name), None)


def operation_of(performs: str) -> str | None:
    """The operation a catalogue entry resolves to, or ``None`` when this build does not perform it
    (docs/hermetic.md#what-an-entry-performs: ``find`` is a search; ``run`` and any other name resolve to
    no operation)."""
    return PERFORMED_OPERATIONS.get(performs)


def resolve_catalogue_call(
    catalogue: Catalogue, name: str, arguments: Any
) -> tuple[tuple[Operation, ...], tuple[str, ...]]:
    """The operations and subjects of a call to entry ``name`` with ``arguments`` as the model wrote
    them (docs/hermetic.md#what-an-entry-performs): the entry's operation and the performing loop entry's subjects
    (docs/loop.md#tools); none for a name outside the catalogue or an entry this build does not perform, so a frame
    denies it as ``UNCOVERED_TOOL``."""
    entry = catalogue.entry(name)
    operation = operation_of(entry.performs) if entry is not None else None
    if entry is None or operation is None:
        return (), ()
    argv = arguments.get("argv") if isinstance(arguments, dict) and entry.performs == "run" else None
    if isinstance(argv, list) and argv and all(isinstance(word, str) for word in argv):
        return (Operation(operation),), argv_subjects(argv)
    return (Operation(operation),), subjects_of(entry.performs, arguments)


def needs_writable(catalogue: Catalogue) -> bool:
    """Whether the server is passed ``--writable``: some entry performs a write
    (docs/hermetic.md#catalogue-delivery)."""
    return any(entry.performs in WRITE_ENTRIES for entry in catalogue.entries)


def input_schema(entry: CatalogueEntry) -> dict[str, Any]:
    """The entry's input schema as served (docs/hermetic.md#catalogue-document)."""
    properties: dict[str, Any] = {}
    for field in entry.input:
        prop: dict[str, Any] = {"type": field.type}
        if field.description is not None:
            prop["description"] = field.description
        properties[field.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [field.name for field in entry.input if field.required],
        "additionalProperties": False,
    }


def checked_value(catalogue: Catalogue) -> dict[str, Any]:
    """The checked catalogue as a document: keys in docs/hermetic.md#catalogue-document order, ``required`` explicit, an
    absent field description null, an absent ``input`` ``{}``."""
    return {
        "format": CATALOGUE_FORMAT,
        "entries": [
            {
                "name": entry.name,
                "description": entry.description,
                "performs": entry.performs,
                "input": {
                    field.name: {"type": field.type, "required": field.required, "description": field.description}
                    for field in entry.input
                },
            }
            for entry in catalogue.entries
        ],
    }


# Parsing


class _Duplicates:
    """The first duplicate mapping key a parser met, as ``<where>: <key>``."""

    def __init__(self) -> None:
        self.first: str | None = None

    def note(self, key: Any) -> None:
        if self.first is None:
            self.first = repr(key) if not isinstance(key, str) else f"`{key}`"


def _json_value(text: str, duplicates: _Duplicates) -> Result[Any, None]:
    """RFC 8259 JSON (no NaN or Infinity), recording duplicate keys; a ``Failure`` when the text is not that."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping: dict[str, Any] = {}
        for key, value in items:
            if key in mapping:
                duplicates.note(key)
            mapping[key] = value
        return mapping

    constants: list[str] = []
    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_constant=constants.append)
    except (ValueError, RecursionError):
        return Failure(None)
    return Failure(None) if constants else Success(value)


def _fast_loader() -> Any:
    """The YAML 1.1 safe loader, libyaml's parser when PyYAML has it. PyYAML is loaded at the first YAML document,
    not with this module, so a run's earlier refusals start without it (docs/DEVELOPING.md#dependency-direction)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_loader(duplicates: _Duplicates) -> Any:
    """A YAML 1.1 safe loader that records the first duplicate mapping key."""

    class Loader(_fast_loader()):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[tuple[str, Any]] = set()
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    typed = (type(key).__name__, key)
                    if typed in seen:
                        duplicates.note(key)
                    seen.add(typed)
                except TypeError:
                    continue
            mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return mapping

    return Loader


def _yaml_value(text: str, duplicates: _Duplicates) -> Any:
    import yaml

    return yaml.load(text, Loader=_yaml_loader(duplicates))


def parse_document(text: str) -> Result[tuple[Any, str | None], str]:
    """The document's value and its first duplicate key (docs/hermetic.md#catalogue-document loading): JSON when the
    text is valid JSON, else one YAML 1.1 document under the safe loader; the failure is the parser's."""
    duplicates = _Duplicates()
    json_document = _json_value(text, duplicates).map(lambda value: (value, duplicates.first))
    return json_document.lash(lambda _: _yaml_document(text))


def _yaml_document(text: str) -> Result[tuple[Any, str | None], str]:
    """One YAML 1.1 document and its first duplicate key, or the loader's complaint on one line."""
    import yaml

    duplicates = _Duplicates()
    try:
        return Success((_yaml_value(text, duplicates), duplicates.first))
    except (yaml.YAMLError, RecursionError, TypeError, ValueError, OverflowError) as error:
        return Failure(" ".join(str(error).split()) or type(error).__name__)


# Checking


# Each reader returns the value read or the text of the first rule of the catalogue document
# (docs/hermetic.md#catalogue-document) that failed, naming the entry and the key.


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _key_text(key: Any) -> str:
    return f"`{key}`" if isinstance(key, str) else f"{_kind(key)} key {key!r}"


def _exact_keys(
    mapping: dict[Any, Any], allowed: tuple[str, ...], required: tuple[str, ...], where: str
) -> Result[dict[Any, Any], str]:
    stray = [key for key in mapping if not isinstance(key, str) or key not in allowed]
    if stray:
        return Failure(f"{where} has the key {_key_text(stray[0])}; its keys are {', '.join(allowed)}")
    missing = [key for key in required if key not in mapping]
    if missing:
        return Failure(f"{where} has no `{missing[0]}`")
    return Success(mapping)


def _text(mapping: dict[Any, Any], key: str, where: str) -> Result[str, str]:
    value = mapping[key]
    if not isinstance(value, str) or not value:
        return Failure(f"{where}: `{key}` must be a non-empty string, not {_kind(value) if value != '' else 'empty'}")
    return Success(value)


def _field(name: Any, spec: Any, where: str) -> Result[Field, str]:
    if not isinstance(name, str) or _FIELD_NAME.fullmatch(name) is None:
        return Failure(f"{where}: input field {_key_text(name)} is not a name matching ^[A-Za-z_][A-Za-z0-9_]{{0,63}}$")
    at = f"{where}: input field `{name}`"
    if not isinstance(spec, dict):
        return Failure(f"{at} must be a mapping of type, required and description, not {_kind(spec)}")
    return _exact_keys(spec, ("type", "required", "description"), ("type",), at).bind(
        lambda _: _field_parts(name, spec, at)
    )


def _field_parts(name: str, spec: dict[Any, Any], at: str) -> Result[Field, str]:
    kind = spec["type"]
    if not isinstance(kind, str) or kind not in FIELD_TYPES:
        shown = f"`{kind}`" if isinstance(kind, str) else _kind(kind)
        return Failure(f"{at}: `type` is {shown}, not one of {', '.join(FIELD_TYPES)}")
    required = spec.get("required", False)
    if not isinstance(required, bool):
        return Failure(f"{at}: `required` must be a boolean, not {_kind(required)}")
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        return Failure(f"{at}: `description` must be a string, not {_kind(description)}")
    return Success(Field(name, kind, required, description))


def _fields(raw: Any, where: str, seen: dict[int, Result[tuple[Field, ...], str]]) -> Result[tuple[Field, ...], str]:
    """An entry's ``input``; a mapping a YAML alias repeats is read once."""
    if not isinstance(raw, dict):
        return Failure(f"{where}: `input` must be a mapping of field names, not {_kind(raw)}")
    known = seen.get(id(raw))
    if known is None:
        known = each(raw.items(), lambda item: _field(item[0], item[1], where))
        seen[id(raw)] = known
    return known


def _entry_name(name: Any, where: str) -> Result[str, str]:
    if not isinstance(name, str) or _ENTRY_NAME.fullmatch(name) is None:
        shown = f"`{name}`" if isinstance(name, str) else _kind(name)
        return Failure(f"{where}: `name` is {shown}, not a name matching ^[A-Za-z0-9_-]{{1,64}}$")
    return Success(name)


def _entry(raw: Any, index: int, seen: dict[int, Result[tuple[Field, ...], str]]) -> Result[CatalogueEntry, str]:
    where = f"entry {index}"
    if not isinstance(raw, dict):
        return Failure(f"{where} must be a mapping, not {_kind(raw)}")
    name = raw.get("name")
    if isinstance(name, str) and _ENTRY_NAME.fullmatch(name) is not None:
        where = f"entry {index} (`{name}`)"
    no_input: Result[tuple[Field, ...], str] = Success(())
    return Result.do(
        CatalogueEntry(published, description, performs, fields)
        for _ in _exact_keys(
            raw, ("name", "description", "performs", "input"), ("name", "description", "performs"), where
        )
        for published in _entry_name(name, where)
        for description in _text(raw, "description", where)
        for performs in _text(raw, "performs", where)
        for fields in (_fields(raw["input"], where, seen) if "input" in raw else no_input)
    )


def _checked(value: dict[Any, Any]) -> Result[Catalogue, str]:
    return _exact_keys(value, ("format", "entries"), ("entries",), "the top level").bind(
        lambda _: _entries(value["entries"])
    )


def _entries(raw_entries: Any) -> Result[Catalogue, str]:
    """The entries in order, each published under a name no earlier entry has."""
    if not isinstance(raw_entries, list) or not raw_entries:
        shown = "an empty list" if raw_entries == [] else _kind(raw_entries)
        return Failure(f"`entries` must be a non-empty list of entries, not {shown}")
    seen: dict[int, Result[tuple[Field, ...], str]] = {}
    names: set[str] = set()

    def first_of_its_name(index: int, entry: CatalogueEntry) -> Result[CatalogueEntry, str]:
        if entry.name in names:
            return Failure(f"entry {index} is published under `{entry.name}`, the name of an earlier entry")
        names.add(entry.name)
        return Success(entry)

    return each(
        enumerate(raw_entries, start=1),
        lambda numbered: _entry(numbered[1], numbered[0], seen).bind(
            lambda entry: first_of_its_name(numbered[0], entry)
        ),
    ).map(Catalogue)


def _decoded(data: bytes, source: str) -> Result[str, Refusal]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return Failure(
            Refusal(
                "catalogue-unreadable",
                f"{source} is not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start} does not decode",
            )
        )
    return Success(text.removeprefix(_BOM))


def check_catalogue_text(text: str, source: str) -> Result[Catalogue, Refusal]:
    """The tag check, then the duplicate-key and docs/hermetic.md#catalogue-document rules
    (``catalogue-not-tool-contract``, ``catalogue-malformed``), on text whose BOM is already dropped
    (docs/hermetic.md#catalogue-document, #catalogue-refusals)."""
    return (
        parse_document(text)
        .alt(
            lambda detail: Refusal("catalogue-not-tool-contract", f"{source} parses as neither JSON nor YAML: {detail}")
        )
        .bind(lambda parsed: _tool_contract(parsed[0], parsed[1], source))
    )


def _tool_contract(value: Any, duplicate: str | None, source: str) -> Result[Catalogue, Refusal]:
    """A parsed document tagged as a tool contract, without a duplicate key, checked entry by entry."""
    if not isinstance(value, dict):
        return Failure(
            Refusal(
                "catalogue-not-tool-contract", f"{source} is {_kind(value)}, not a mapping tagged {CATALOGUE_FORMAT}"
            )
        )
    if "format" not in value:
        return Failure(
            Refusal(
                "catalogue-not-tool-contract",
                f"{source} has no `format`; a tool contract says format: {CATALOGUE_FORMAT}",
            )
        )
    tag = value["format"]
    if tag != CATALOGUE_FORMAT or not isinstance(tag, str):
        shown = f"`{tag}`" if isinstance(tag, str) else _kind(tag)
        return Failure(Refusal("catalogue-not-tool-contract", f"{source} has format {shown}, not {CATALOGUE_FORMAT}"))
    if duplicate is not None:
        return Failure(Refusal("catalogue-malformed", f"{source} has the mapping key {duplicate} twice in one mapping"))
    return _checked(value).alt(lambda detail: Refusal("catalogue-malformed", f"{source}: {detail}"))


def load_catalogue(data: bytes, source: str) -> Result[Catalogue, Refusal]:
    """A catalogue file's bytes to the checked catalogue, by docs/hermetic.md#catalogue-refusals in the table's order:
    not UTF-8 (``catalogue-unreadable``), not a tool contract, malformed — including a scratch copy that,
    built in memory, would be past 4 MiB or would not read back as the same catalogue
    (docs/hermetic.md#catalogue-scratch-copy)."""
    return (
        _decoded(data, source)
        .bind(lambda text: check_catalogue_text(text, source))
        .bind(lambda catalogue: _copy_checked(catalogue, source))
    )


def check_codex_names(catalogue: Catalogue, source: str) -> Result[Catalogue, Refusal]:
    """codex only: an entry named ``mcp`` or starting ``mcp__`` is refused, since app-server would
    refuse it at ``thread/start`` (docs/hermetic.md#catalogue-refusals ``catalogue-name-reserved``)."""
    for index, entry in enumerate(catalogue.entries, start=1):
        if entry.name == "mcp" or entry.name.startswith("mcp__"):
            return Failure(
                Refusal(
                    "catalogue-name-reserved",
                    f"{source}: entry {index} is published as `{entry.name}`; codex app-server reserves `mcp` "
                    "and names under `mcp__` and would refuse it at thread/start",
                )
            )
    return Success(catalogue)


# The scratch copy


def _escaped(text: str) -> str:
    if not any(ord(char) in _ESCAPED for char in text):
        return text
    out: list[str] = []
    for char in text:
        code = ord(char)
        if char == '"' or char == "\\":
            out.append("\\" + char)
        elif code in _ESCAPED:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


class _Pairs(msgspec.Struct, frozen=True):
    """A mapping written pair by pair, so a copy past the cap is never built whole."""

    pairs: Iterable[tuple[str, Any]]


class _Items(msgspec.Struct, frozen=True):
    """A list written item by item."""

    items: Iterable[Any]


def _lazy_value(catalogue: Catalogue) -> _Pairs:
    """``checked_value`` as pieces, in the same order."""

    def fields(entry: CatalogueEntry) -> _Pairs:
        return _Pairs(
            (f.name, _Pairs((("type", f.type), ("required", f.required), ("description", f.description))))
            for f in entry.input
        )

    entries = _Items(
        _Pairs(
            (
                ("name", entry.name),
                ("description", entry.description),
                ("performs", entry.performs),
                ("input", fields(entry)),
            )
        )
        for entry in catalogue.entries
    )
    return _Pairs((("format", CATALOGUE_FORMAT), ("entries", entries)))


def _chunks(value: Any) -> Iterator[str]:
    if isinstance(value, _Pairs):
        yield "{"
        for index, (key, item) in enumerate(value.pairs):
            yield f'{", " if index else ""}"{_escaped(key)}": '
            yield from _chunks(item)
        yield "}"
    elif isinstance(value, _Items):
        yield "["
        for index, item in enumerate(value.items):
            if index:
                yield ", "
            yield from _chunks(item)
        yield "]"
    elif isinstance(value, bool):
        yield "true" if value else "false"
    elif value is None:
        yield "null"
    else:
        yield f'"{_escaped(value)}"'


def _copy_within(catalogue: Catalogue, cap: int) -> bytes | None:
    """The copy's bytes, or ``None`` as soon as they pass ``cap``; a text that cannot be written as
    UTF-8 (a lone surrogate) raises ``UnicodeEncodeError``."""
    pieces: list[bytes] = []
    size = 1
    for chunk in _chunks(_lazy_value(catalogue)):
        piece = chunk.encode("utf-8")
        size += len(piece)
        if size > cap:
            return None
        pieces.append(piece)
    pieces.append(b"\n")
    return b"".join(pieces)


def scratch_copy(catalogue: Catalogue) -> bytes:
    """``<scratch>/catalogue.json`` (docs/hermetic.md#catalogue-scratch-copy): the checked catalogue as one line of JSON
    with separators ``, `` and ``: ``, ``"`` and ``\\`` escaped, every character YAML refuses raw or reads
    as a line break written ``\\u`` and four lowercase hex digits, nothing else escaped, then ``\\n``. Only
    for a catalogue ``load_catalogue`` accepted, whose copy is known to fit."""
    copy = _copy_within(catalogue, CATALOGUE_CAP)
    if copy is None:
        raise ValueError("the scratch copy of a catalogue load_catalogue refused")
    return copy


def _shape(value: Any) -> Any:
    """A value with its types and mapping order made part of equality (``True`` is not ``1``)."""
    if isinstance(value, dict):
        return ("map", tuple((_shape(key), _shape(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", tuple(_shape(item) for item in value))
    return (type(value).__name__, value)


def _read_back_problem(copy: bytes, catalogue: Catalogue) -> str | None:
    """Why ``copy`` does not read back, with the JSON parser and the YAML loader alike, as the
    checked catalogue; ``None`` when it does (docs/hermetic.md#catalogue-scratch-copy)."""
    expected = _shape(checked_value(catalogue))
    try:
        text = copy.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not UTF-8"
    try:
        as_json = json.loads(text)
    except (ValueError, RecursionError):
        return "the JSON parser cannot read it"
    if _shape(as_json) != expected:
        return "the JSON parser reads a different catalogue"
    import yaml

    try:
        as_yaml = yaml.load(text, Loader=_fast_loader())
    except (yaml.YAMLError, RecursionError, ValueError):
        return "the YAML loader cannot read it"
    if _shape(as_yaml) != expected:
        return "the YAML loader reads a different catalogue"
    return None


def _copy_checked(catalogue: Catalogue, source: str) -> Result[Catalogue, Refusal]:
    try:
        copy = _copy_within(catalogue, CATALOGUE_CAP)
    except UnicodeEncodeError as error:
        return Failure(
            Refusal(
                "catalogue-malformed",
                f"{source}: the scratch copy would not read back as the same catalogue: "
                f"U+{ord(error.object[error.start]):04X} cannot be written as UTF-8",
            )
        )
    if copy is None:
        return Failure(
            Refusal(
                "catalogue-malformed",
                f"{source}: the scratch copy would be past 4 MiB ({CATALOGUE_CAP} bytes)",
            )
        )
    problem = _read_back_problem(copy, catalogue)
    if problem is not None:
        return Failure(
            Refusal(
                "catalogue-malformed",
                f"{source}: the scratch copy would not read back as the same catalogue: {problem}",
            )
        )
    return Success(catalogue)


def started_by_then(*, proxy_started: bool, probed: bool) -> str:
    """What had started before the catalogue's copy was read back, for ``catalogue-copy-differs``
    (docs/hermetic.md#catalogue-refusals): the scratch files, then the loopback proxy and the ``--version`` probe
    when they had."""
    happened = ["the scratch files had been written"]
    happened += ["the loopback proxy had started"] if proxy_started else []
    happened += ["the vendor binary had been run with --version"] if probed else []
    return happened[0] if len(happened) == 1 else ", ".join(happened[:-1]) + " and " + happened[-1]


def check_copy_read_back(copy: bytes, catalogue: Catalogue, source: str, happened: str) -> Result[None, Refusal]:
    """Stage 9 (d): the bytes read back from the written copy must read as the checked catalogue,
    else ``catalogue-copy-differs`` in the words of docs/hermetic.md#catalogue-refusals; ``happened`` says what had
    started by then (``the scratch files had been written and the loopback proxy had started``)."""
    if _read_back_problem(copy, catalogue) is None:
        return Success(None)
    return Failure(
        Refusal(
            "catalogue-copy-differs",
            f"the scratch copy of {source} reads back as a different catalogue; by then {happened}; "
            "no vendor session was started",
        )
    )
