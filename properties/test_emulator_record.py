"""Property of the emulator's record (docs/loop.md#record-file): no credential value, cookie or other header
value outside the named non-secret ones ever reaches a record line, whatever the request."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.emulator.answer import answer_request
from metaharness.pure.emulator.record import record_line
from metaharness.pure.emulator.scenarios import SCENARIO_NAMES

secrets_ = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=12, max_size=40).map(
    lambda s: f"SECRET{s}")
SECRET_HEADERS = ("authorization", "x-api-key", "cookie", "proxy-authorization", "x-custom-token")


@settings(max_examples=60, deadline=None)
@given(scenario=st.sampled_from(SCENARIO_NAMES), path=st.sampled_from(["/v1/responses", "/v1/messages", "/x"]),
       names=st.lists(st.sampled_from(SECRET_HEADERS), min_size=1, max_size=4, unique=True),
       values=st.lists(secrets_, min_size=4, max_size=4), bearer=st.booleans(), with_body=st.booleans())
def test_no_secret_header_value_reaches_the_record(scenario: str, path: str, names: list[str], values: list[str],
                                                    bearer: bool, with_body: bool) -> None:
    headers = tuple((name, f"Bearer {value}" if bearer and name == "authorization" else value)
                    for name, value in zip(names, values, strict=False))
    raw = json.dumps({"model": "m", "stream": True, "input": "hi", "messages": []}).encode()
    exchange = answer_request(scenario, "POST", path, headers, raw, 1)
    line = record_line(seq=1, scenario=scenario, method="POST", path=path, query=None, headers=headers, raw=raw,
                       exchange=exchange, with_body=with_body)
    for _, value in headers:
        assert value.removeprefix("Bearer ").encode() not in line
    record = json.loads(line)
    assert record["header_names"] == list(names)
    if "authorization" in names:
        sent = dict(headers)["authorization"]
        assert record["credential_header"] == "authorization"
        assert record["credential_length"] == len(sent.removeprefix("Bearer ").encode())
