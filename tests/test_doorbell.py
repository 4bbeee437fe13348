"""Doorbell keys that name no request (docs/adapters/common.md#child-trees): 16 ``COVERAGE_GAP``, then one
``DOORBELL_FLOODED``, then silence, on both kinds with a hook channel (gemini here with unit facts; codex
with the real CLI in tests/test_doorbell_flood_e2e.py)."""

from __future__ import annotations

from metaharness.pure.bounds import UNREAD_KEY_LIMIT
from metaharness.pure.doorbell import UnreadKeys, unread_key
from metaharness.pure.events import EventValue, Hermetic, Transcript, WarningRaised
from metaharness.pure.gemini.record import RecordFacts
from metaharness.pure.gemini.session import hook_request, open_session

GAP = WarningRaised(code="COVERAGE_GAP", message="key K rang with no request")
HERMETIC = Hermetic(mode="off", decisions="observe", imposed=(), declared=(), unavailable=(), ambient_inputs=(),
                    installed_plugins=())  # fmt: skip
FACTS = RecordFacts(transcript=Transcript(path="/s/stream.jsonl", digest=None, bytes=None), hermetic=HERMETIC,
                    cwd="/w", model="gemini-2.5-pro", harness_version="0.61.0")  # fmt: skip


def test_the_gaps_are_named_up_to_the_limit_then_one_flood_then_none():
    keys, written = UnreadKeys(), []
    for _ in range(UNREAD_KEY_LIMIT + 100):
        keys, warning = unread_key(keys, GAP)
        written.append(warning)
    assert written[:UNREAD_KEY_LIMIT] == [GAP] * UNREAD_KEY_LIMIT
    flooded = written[UNREAD_KEY_LIMIT]
    assert flooded is not None and flooded.code == "DOORBELL_FLOODED"
    assert set(written[UNREAD_KEY_LIMIT + 1 :]) == {None}


def test_a_gemini_session_flooded_with_keys_writes_seventeen_lines():
    session, lines = open_session(FACTS, "r", "observe", None), []
    for n in range(5000):
        session, effects = hook_request(session, f"BOG{n:05d}", None)
        lines += effects
    codes = [effect.payload.code for effect in lines if isinstance(effect, EventValue) and isinstance(effect.payload, WarningRaised)]
    assert codes == ["COVERAGE_GAP"] * UNREAD_KEY_LIMIT + ["DOORBELL_FLOODED"]
