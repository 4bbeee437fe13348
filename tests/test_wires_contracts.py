"""The production encoder, header builder and decoder against the contract bytes (docs/loop.md#wire-contracts)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import msgspec
import pytest

from metaharness.pure.wires import anthropic_messages, openai_responses
from metaharness.pure.wires.neutral import TurnRequest, event_line
from metaharness.pure.wires.sse import frame_sse

VECTORS = Path(__file__).resolve().parent.parent / "vectors" / "provider-wires"
WIRES: dict[str, ModuleType] = {"openai-responses": openai_responses, "anthropic-messages": anthropic_messages}
FOLDERS = sorted(VECTORS.glob("*/*/manifest.json"))


def _folder_ids() -> list[str]:
    return [f"{p.parent.parent.name}/{p.parent.name}" for p in FOLDERS]


def test_every_wire_has_a_contract() -> None:
    assert {p.parent.parent.name for p in FOLDERS} == set(WIRES)


@pytest.mark.parametrize("manifest_path", FOLDERS, ids=_folder_ids())
def test_request_bytes_and_headers_match_the_contract(manifest_path: Path) -> None:
    folder = manifest_path.parent
    wire = WIRES[folder.parent.name]
    neutral = json.loads((folder / "request.neutral.json").read_text(encoding="utf-8"))
    request = msgspec.json.decode(json.dumps(neutral["request"]).encode(), type=TurnRequest)
    if wire is openai_responses:
        projected = openai_responses.project_request(request, neutral["session_key"]).unwrap()
        headers = openai_responses.request_headers(neutral["session_key"], "<credential>")
    else:
        projected = anthropic_messages.project_request(request, neutral["credential_kind"]).unwrap()
        headers = anthropic_messages.request_headers(neutral["credential_kind"], "<credential>")
    assert projected.body == (folder / "request.body").read_bytes()
    assert projected.path == json.loads(manifest_path.read_text())["endpoint_path"]
    assert [list(pair) for pair in headers] == json.loads((folder / "request.headers.json").read_text())


@pytest.mark.parametrize("manifest_path", FOLDERS, ids=_folder_ids())
def test_streams_decode_to_the_contract_events(manifest_path: Path) -> None:
    folder = manifest_path.parent
    wire = WIRES[folder.parent.name]
    streams = sorted(folder.glob("stream-*.sse"))
    assert streams
    for stream in streams:
        data = stream.read_bytes()
        expected = stream.with_name(stream.name.removesuffix(".sse") + ".events.jsonl").read_bytes()
        for size in (len(data), 1, 7, 64):
            chunks = [data[i : i + size] for i in range(0, len(data), size)]
            decoded = b"".join(event_line(e) + b"\n" for e in wire.decode_stream(frame_sse(chunks), "b10x-contract"))
            assert decoded == expected, (stream.name, size)


@pytest.mark.parametrize("manifest_path", FOLDERS, ids=_folder_ids())
def test_the_manifest_inventory_is_the_decoders(manifest_path: Path) -> None:
    manifest = json.loads(manifest_path.read_text())
    wire = WIRES[manifest["wire"]]
    assert manifest["accepted_events"] == sorted(wire.ACCEPTED_EVENTS)
    assert manifest["terminal"] == ("done-sentinel" if wire is openai_responses else "message-stop")
