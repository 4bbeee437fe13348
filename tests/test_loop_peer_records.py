"""Records written by the reference Rust loop 0.9.1 (kept outside the project) are the same contract as ours:
every kind is one we write, and its keys appear in our field order (older lines may lack newer fields)."""

from __future__ import annotations

import json

import msgspec
import pytest
from shared_tree import ABSENT, SHARED

from metaharness.pure.loop import record

PEER = SHARED / "peer-records" / "b10x-harness-0.9.1"
KINDS = {cls.__struct_config__.tag: cls for cls in record.RecordLine.__args__}  # type: ignore[attr-defined]


def _peer_lines() -> list[dict[str, object]]:
    if not PEER.is_dir():
        pytest.skip(ABSENT)
    return [json.loads(line) for path in sorted(PEER.glob("*.jsonl")) for line in path.read_text().splitlines()]


def test_every_peer_line_is_a_kind_we_write_with_keys_in_our_order() -> None:
    lines = _peer_lines()
    assert lines
    for line in lines:
        kind = line["kind"]
        assert kind in KINDS, kind
        ours = ["kind", *(f.encode_name for f in msgspec.structs.fields(KINDS[kind]))]
        keys = list(line)
        assert all(key in ours for key in keys), (kind, keys)
        assert [ours.index(key) for key in keys] == sorted(ours.index(key) for key in keys), (kind, keys)


def test_peer_finished_lines_round_trip_through_ours() -> None:
    finished = [line for line in _peer_lines() if line["kind"] == "finished"]
    assert finished
    for line in finished:
        raw = json.dumps(line, separators=(",", ":")).encode()
        assert msgspec.json.encode(msgspec.json.decode(raw, type=record.Finished)) == raw
