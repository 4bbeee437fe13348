"""The tool contract document (docs/hermetic.md#catalogue): loading, every refusal of
docs/hermetic.md#catalogue-refusals, the scratch copy of docs/hermetic.md#catalogue-scratch-copy and its read-back, what
an entry performs (docs/hermetic.md#what-an-entry-performs) and the schema it is served with."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from returns.result import Failure, Success

from metaharness.pure.catalogue import (
    CATALOGUE_CAP,
    Catalogue,
    CatalogueEntry,
    Field,
    check_codex_names,
    check_copy_read_back,
    checked_value,
    input_schema,
    load_catalogue,
    needs_writable,
    operation_of,
    resolve_catalogue_call,
    scratch_copy,
)
from metaharness.pure.frames import Operation
from metaharness.shell.catalogue_file import read_back_scratch_copy, read_catalogue, write_scratch_copy

EXAMPLE_YAML = """format: metaharness.catalogue/1
entries:
  - name: read_note
    description: Read one note under notes/.
    performs: file_read
    input:
      path: {type: string, required: true, description: Path relative to the workspace.}
      limit: {type: integer}
"""
EXAMPLE_JSON = (
    '{"format":"metaharness.catalogue/1","entries":[{"name":"read_note","description":"Read one note under notes/.",'
    '"performs":"file_read","input":{"path":{"type":"string","required":true,"description":"Path relative to the '
    'workspace."},"limit":{"type":"integer"}}}]}'
)
EXAMPLE = Catalogue(
    (
        CatalogueEntry(
            "read_note",
            "Read one note under notes/.",
            "file_read",
            (
                Field("path", "string", True, "Path relative to the workspace."),
                Field("limit", "integer", False, None),
            ),
        ),
    )
)


def refusal_of(text: str | bytes) -> tuple[str, str]:
    data = text.encode("utf-8") if isinstance(text, str) else text
    result = load_catalogue(data, "tools.yaml")
    assert isinstance(result, Failure), result
    return result.failure().code, result.failure().message


def one_entry(entry: str) -> str:
    return f"format: metaharness.catalogue/1\nentries:\n  - {entry}\n"


def test_the_spec_example_loads_alike_from_yaml_and_json() -> None:
    assert load_catalogue(EXAMPLE_YAML.encode(), "tools.yaml") == Success(EXAMPLE)
    assert load_catalogue(EXAMPLE_JSON.encode(), "tools.json") == Success(EXAMPLE)


def test_a_leading_byte_order_mark_is_dropped() -> None:
    assert load_catalogue(b"\xef\xbb\xbf" + EXAMPLE_YAML.encode(), "tools.yaml") == Success(EXAMPLE)
    assert load_catalogue(b"\xef\xbb\xbf" + EXAMPLE_JSON.encode(), "tools.json") == Success(EXAMPLE)


def test_the_checked_catalogue_is_normalised() -> None:
    assert checked_value(EXAMPLE) == {
        "format": "metaharness.catalogue/1",
        "entries": [
            {
                "name": "read_note",
                "description": "Read one note under notes/.",
                "performs": "file_read",
                "input": {
                    "path": {"type": "string", "required": True, "description": "Path relative to the workspace."},
                    "limit": {"type": "integer", "required": False, "description": None},
                },
            }
        ],
    }
    bare = load_catalogue(one_entry("{name: a, description: d, performs: search}").encode(), "t").unwrap()
    assert checked_value(bare)["entries"][0]["input"] == {}


def test_the_served_input_schema() -> None:
    assert input_schema(EXAMPLE.entries[0]) == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace."},
            "limit": {"type": "integer"},
        },
        "required": ["path"],
        "additionalProperties": False,
    }


def test_field_order_is_the_documents() -> None:
    text = one_entry("{name: a, description: d, performs: search, input: {z: {type: string}, a: {type: number}}}")
    entry = load_catalogue(text.encode(), "t").unwrap().entries[0]
    assert [field.name for field in entry.input] == ["z", "a"]


def test_what_an_entry_performs() -> None:
    assert [operation_of(name) for name in ("file_read", "dir_list", "search", "find", "file_write", "file_edit")] == [
        "file.read",
        "dir.list",
        "search",
        "search",
        "file.write",
        "file.edit",
    ]
    assert operation_of("run") is None and operation_of("web_fetch") is None
    writes = load_catalogue(one_entry("{name: w, description: d, performs: file_edit}").encode(), "t").unwrap()
    assert needs_writable(writes) and not needs_writable(EXAMPLE)


def test_a_call_resolves_to_its_entrys_operation_and_the_performing_entrys_subjects() -> None:
    text = (
        "format: metaharness.catalogue/1\nentries:\n"
        "  - {name: read_note, description: d, performs: file_read}\n"
        "  - {name: look, description: d, performs: find}\n"
        "  - {name: build, description: d, performs: run}\n"
    )
    catalogue = load_catalogue(text.encode(), "t").unwrap()
    assert resolve_catalogue_call(catalogue, "read_note", {"path": "notes/a.md"}) == (
        (Operation("file.read"),),
        ("file:notes/a.md",),
    )
    assert resolve_catalogue_call(catalogue, "look", {"glob": "*.md"}) == ((Operation("search"),), ("file:.",))
    assert resolve_catalogue_call(catalogue, "build", {"argv": ["cargo"]}) == ((), ())
    assert resolve_catalogue_call(catalogue, "file_read", {"path": "a"}) == ((), ())


# catalogue-unreadable (bytes) and catalogue-not-tool-contract


def test_text_that_is_not_utf8_is_unreadable() -> None:
    code, message = refusal_of(b"format: metaharness.catalogue/1\n\xff\n")
    assert code == "catalogue-unreadable" and "not UTF-8" in message and "offset 32" in message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "parses as neither JSON nor YAML"),
        ("a: [1\n", "parses as neither JSON nor YAML"),
        ("--- 1\n--- 2\n", "parses as neither JSON nor YAML"),
        ("!!python/object/apply:os.system [ls]\n", "parses as neither JSON nor YAML"),
        ("[1, 2]", "is a list, not a mapping"),
        ('"metaharness.catalogue/1"', "is a string, not a mapping"),
        ("", "is null, not a mapping"),
        ("entries: []\n", "has no `format`"),
        ("format: metaharness.catalogue/2\nentries: []\n", "has format `metaharness.catalogue/2`"),
        ("format: 1\n", "has format a number"),
    ],
)
def test_what_is_not_a_tool_contract(text: str, said: str) -> None:
    code, message = refusal_of(text)
    assert code == "catalogue-not-tool-contract"
    assert message.startswith("tools.yaml ") and said in message


def test_the_tag_is_checked_before_a_duplicate_key() -> None:
    assert refusal_of("format: x\nformat: y\n")[0] == "catalogue-not-tool-contract"


# catalogue-malformed


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("format: metaharness.catalogue/1\nformat: metaharness.catalogue/1\nentries: []\n", "`format` twice"),
        (
            one_entry("{name: a, description: d, performs: x, input: {p: {type: string, type: integer}}}"),
            "`type` twice",
        ),
        (
            '{"format":"metaharness.catalogue/1","entries":[{"name":"a","name":"b","description":"d","performs":"x"}]}',
            "`name` twice",
        ),
        ("format: metaharness.catalogue/1\n", "the top level has no `entries`"),
        ("format: metaharness.catalogue/1\nentries: []\nextra: 1\n", "the top level has the key `extra`"),
        ("format: metaharness.catalogue/1\nentries: []\n", "not an empty list"),
        ("format: metaharness.catalogue/1\nentries: {a: 1}\n", "not a mapping"),
        ("format: metaharness.catalogue/1\nentries: [1]\n", "entry 1 must be a mapping"),
        (one_entry("{name: a, description: d}"), "entry 1 (`a`) has no `performs`"),
        (one_entry("{name: a, description: d, performs: x, via: y}"), "entry 1 (`a`) has the key `via`"),
        (one_entry("{name: 'a b', description: d, performs: x}"), "entry 1: `name` is `a b`"),
        (one_entry("{name: " + "n" * 65 + ", description: d, performs: x}"), "entry 1: `name` is"),
        (one_entry("{name: 7, description: d, performs: x}"), "`name` is a number"),
        (one_entry("{name: a, description: '', performs: x}"), "`description` must be a non-empty string, not empty"),
        (one_entry("{name: a, description: d, performs: [x]}"), "`performs` must be a non-empty string, not a list"),
        (one_entry("{name: a, description: d, performs: x, input: [p]}"), "`input` must be a mapping"),
        (one_entry("{name: a, description: d, performs: x, input: {1p: {type: string}}}"), "input field `1p`"),
        (one_entry("{name: a, description: d, performs: x, input: {on: {type: string}}}"), "a boolean key True"),
        (one_entry("{name: a, description: d, performs: x, input: {p: string}}"), "input field `p` must be a mapping"),
        (one_entry("{name: a, description: d, performs: x, input: {p: {required: true}}}"), "`p` has no `type`"),
        (one_entry("{name: a, description: d, performs: x, input: {p: {type: text}}}"), "`type` is `text`"),
        (one_entry("{name: a, description: d, performs: x, input: {p: {type: string, required: 1}}}"), "`required`"),
        (
            one_entry("{name: a, description: d, performs: x, input: {p: {type: string, description: 2}}}"),
            "`description`",
        ),
        (one_entry("{name: a, description: d, performs: x, input: {p: {type: string, default: 2}}}"), "key `default`"),
    ],
)
def test_what_is_malformed_names_the_entry_and_key(text: str, said: str) -> None:
    code, message = refusal_of(text)
    assert code == "catalogue-malformed"
    assert message.startswith("tools.yaml") and said in message


def test_two_entries_under_one_name_are_malformed() -> None:
    text = "format: metaharness.catalogue/1\nentries:\n  - {name: a, description: d, performs: x}\n" * 1
    text += "  - {name: b, description: d, performs: x}\n  - {name: a, description: e, performs: y}\n"
    code, message = refusal_of(text)
    assert code == "catalogue-malformed" and "entry 3 is published under `a`" in message


def test_a_copy_that_could_not_be_written_as_utf8_is_malformed() -> None:
    text = '{"format":"metaharness.catalogue/1","entries":[{"name":"a","description":"\\ud800","performs":"x"}]}'
    code, message = refusal_of(text)
    assert code == "catalogue-malformed" and "would not read back as the same catalogue" in message


def test_a_copy_past_four_mebibytes_is_malformed() -> None:
    # Each alias repeats a 2 KiB description: the file is small, its copy is not.
    lines = ["format: metaharness.catalogue/1", "entries:"]
    lines.append(f"  - {{name: e0, description: &d {'x' * 2048}, performs: search}}")
    lines += [f"  - {{name: e{i}, description: *d, performs: search}}" for i in range(1, 2100)]
    data = "\n".join(lines).encode()
    assert len(data) < CATALOGUE_CAP
    code, message = refusal_of(data)
    assert code == "catalogue-malformed" and "past 4 MiB" in message


def test_an_aliased_input_is_checked_once_per_mapping() -> None:
    fields = ", ".join(f"f{i}: {{type: string}}" for i in range(2000))
    lines = [
        "format: metaharness.catalogue/1",
        "entries:",
        f"  - {{name: e0, description: d, performs: search, input: &i {{{fields}}}}}",
    ]
    lines += [f"  - {{name: e{i}, description: d, performs: search, input: *i}}" for i in range(1, 3000)]
    code, message = refusal_of("\n".join(lines))
    assert code == "catalogue-malformed" and "past 4 MiB" in message


# catalogue-name-reserved (codex)


@pytest.mark.parametrize("name", ["mcp", "mcp__x", "mcp__"])
def test_codex_refuses_the_names_app_server_reserves(name: str) -> None:
    catalogue = load_catalogue(one_entry(f"{{name: '{name}', description: d, performs: x}}").encode(), "t").unwrap()
    result = check_codex_names(catalogue, "tools.yaml")
    assert isinstance(result, Failure) and result.failure().code == "catalogue-name-reserved"
    assert f"`{name}`" in result.failure().message


@pytest.mark.parametrize("name", ["mcpx", "my_mcp", "mcp_x", "MCP"])
def test_codex_accepts_names_that_only_resemble_them(name: str) -> None:
    catalogue = load_catalogue(one_entry(f"{{name: {name}, description: d, performs: x}}").encode(), "t").unwrap()
    assert check_codex_names(catalogue, "tools.yaml") == Success(catalogue)


# The scratch copy


def test_the_scratch_copy_bytes_of_the_example() -> None:
    assert scratch_copy(EXAMPLE) == (
        b'{"format": "metaharness.catalogue/1", "entries": [{"name": "read_note", "description": "Read one note under '
        b'notes/.", "performs": "file_read", "input": {"path": {"type": "string", "required": true, "description": '
        b'"Path relative to the workspace."}, "limit": {"type": "integer", "required": false, "description": null}}}]}\n'
    )


def test_the_scratch_copy_escapes_what_yaml_refuses_or_reads_as_a_line_break() -> None:
    odd = "\x00\t\n\x1f\x7f\x85\x9f\u2028\u2029\ufeff\ufffe\uffff"
    kept = "é\u00a0\U0001f600/'<&"
    description = f'{odd}"\\{kept}'
    catalogue = Catalogue((CatalogueEntry("a", description, "search", ()),))
    copy = scratch_copy(catalogue)
    written = copy.split(b'"description": "', 1)[1].split(b'", "performs"', 1)[0]
    assert written == (
        b"\\u0000\\u0009\\u000a\\u001f\\u007f\\u0085\\u009f\\u2028\\u2029\\ufeff\\ufffe\\uffff"
        + b'\\"\\\\'
        + kept.encode("utf-8")
    )
    assert copy.count(b"\n") == 1 and copy.endswith(b"\n") and not copy.startswith(b"\xef\xbb\xbf")
    assert json.loads(copy) == checked_value(catalogue) == yaml.safe_load(copy.decode())
    assert load_catalogue(copy, "catalogue.json") == Success(catalogue)


def test_the_read_back_of_a_copy_that_differs() -> None:
    copy = scratch_copy(EXAMPLE)
    assert check_copy_read_back(copy, EXAMPLE, "tools.yaml", "the scratch files had been written") == Success(None)
    changed = copy.replace(b"Read one note", b"Read any note")
    result = check_copy_read_back(changed, EXAMPLE, "tools.yaml", "the scratch files had been written")
    assert isinstance(result, Failure)
    assert result.failure().code == "catalogue-copy-differs"
    assert result.failure().message.startswith("the scratch copy of tools.yaml reads back as a different catalogue")
    assert result.failure().message.endswith(
        "by then the scratch files had been written; no vendor session was started"
    )
    reordered = copy.replace(b'"required": false, "description": null', b'"description": null, "required": false')
    assert isinstance(check_copy_read_back(reordered, EXAMPLE, "t", "x"), Failure)
    raw_break = copy.replace(b"Read one note", b"Read one\xe2\x80\xa8note")
    assert isinstance(check_copy_read_back(raw_break, EXAMPLE, "t", "x"), Failure)


# The file (shell)


def test_reading_a_catalogue_file_and_its_symlink(tmp_path: Path) -> None:
    (tmp_path / "tools.yaml").write_text(EXAMPLE_YAML)
    (tmp_path / "link.yaml").symlink_to(tmp_path / "tools.yaml")
    assert read_catalogue(str(tmp_path / "tools.yaml")) == Success(EXAMPLE)
    assert read_catalogue(str(tmp_path / "link.yaml")) == Success(EXAMPLE)


def unreadable(path: str) -> str:
    result = read_catalogue(path)
    assert isinstance(result, Failure) and result.failure().code == "catalogue-unreadable", result
    assert result.failure().message.startswith(path)
    return result.failure().message


def test_what_cannot_be_read_as_a_catalogue_file(tmp_path: Path) -> None:
    assert "cannot be read" in unreadable(str(tmp_path / "absent.yaml"))
    assert "is not a regular file" in unreadable(str(tmp_path))
    os.mkfifo(tmp_path / "fifo")
    assert "is not a regular file" in unreadable(str(tmp_path / "fifo"))
    assert "is not a regular file" in unreadable("/dev/null")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert "cannot be read" in unreadable(str(tmp_path / "dangling"))
    big = tmp_path / "big.yaml"
    big.write_bytes(EXAMPLE_YAML.encode() + b"#" * (CATALOGUE_CAP + 1 - len(EXAMPLE_YAML)))
    assert "past 4 MiB" in unreadable(str(big))
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(EXAMPLE_YAML.replace("notes/.", "caf\xe9").encode("latin-1"))
    assert "is not UTF-8" in unreadable(str(latin))


def test_a_file_of_exactly_four_mebibytes_is_read(tmp_path: Path) -> None:
    exact = tmp_path / "exact.yaml"
    exact.write_bytes(EXAMPLE_YAML.encode() + b"#" * (CATALOGUE_CAP - len(EXAMPLE_YAML)))
    assert read_catalogue(str(exact)) == Success(EXAMPLE)


def test_the_scratch_copy_is_written_and_read_back(tmp_path: Path) -> None:
    copy = tmp_path / "catalogue.json"
    write_scratch_copy(EXAMPLE, str(copy))
    assert copy.read_bytes() == scratch_copy(EXAMPLE)
    assert copy.stat().st_mode & 0o777 == 0o600
    assert read_back_scratch_copy(str(copy), EXAMPLE, "tools.yaml", "x") == Success(None)
    assert read_catalogue(str(copy)) == Success(EXAMPLE)


def test_a_scratch_copy_changed_on_disk_differs(tmp_path: Path) -> None:
    copy = tmp_path / "catalogue.json"
    write_scratch_copy(EXAMPLE, str(copy))
    copy.write_bytes(copy.read_bytes().replace(b"file_read", b"file_edit"))
    happened = "the scratch files had been written and the loopback proxy had started"
    result = read_back_scratch_copy(str(copy), EXAMPLE, "tools.yaml", happened)
    assert isinstance(result, Failure)
    assert result.failure().line() == (
        "metaharness: catalogue-copy-differs: the scratch copy of tools.yaml reads back as a different catalogue; "
        "by then the scratch files had been written and the loopback proxy had started; no vendor session was started"
    )
    copy.unlink()
    gone = read_back_scratch_copy(str(copy), EXAMPLE, "tools.yaml", happened)
    assert isinstance(gone, Failure) and gone.failure().code == "catalogue-copy-differs"
