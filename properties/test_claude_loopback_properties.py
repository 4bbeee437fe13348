"""Properties of the loopback proxy's pure decisions (docs/adapters/common.md#endpoint-route): whatever the child sends,
the forwarded head carries exactly one credential — the real token — and no hop-by-hop header, and only
the exact placeholder is admitted."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.claude.adapter import LOOPBACK as CLAUDE_LOOPBACK
from metaharness.pure.loopback import HOP_BY_HOP, RequestHead, admit_request, carries_placeholder, forward_headers

PLACEHOLDER = "mh-run-claude-7-00112233445566778899aabb"
names = st.one_of(
    st.sampled_from(["Authorization", "authorization", "X-Api-Key", "Host", "Content-Length", "Connection",
                     "Keep-Alive", "Transfer-Encoding", "anthropic-version", "anthropic-beta", "Upgrade", "TE"]),
    st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,12}", fullmatch=True),
)  # fmt: skip
values = st.from_regex(r"[ -~]{0,20}", fullmatch=True).map(str.strip)
heads = st.lists(st.tuples(names, values), max_size=10).map(lambda h: RequestHead("POST", "/v1/messages", tuple(h)))


@settings(max_examples=200)
@given(heads, st.integers(0, 10_000))
def test_the_forwarded_head_carries_exactly_the_real_token(head: RequestHead, length: int) -> None:
    forwarded = forward_headers(head, "https://api.anthropic.com", "real-token", length)
    lowered = [(key.lower(), value) for key, value in forwarded]
    assert [v for k, v in lowered if k == "authorization"] == ["Bearer real-token"]
    assert not any(k == "x-api-key" for k, _ in lowered)
    assert [v for k, v in lowered if k == "host"] == ["api.anthropic.com"]
    assert [v for k, v in lowered if k == "content-length"] == [str(length)]
    assert [v for k, v in lowered if k == "connection"] == ["close"]
    assert [v for k, v in lowered if k == "accept-encoding"] == ["gzip, deflate"]
    assert not any(k in HOP_BY_HOP for k, _ in lowered if k != "connection")
    assert all(PLACEHOLDER not in value for _, value in forwarded)


@settings(max_examples=200)
@given(st.text(max_size=60), st.sampled_from(["authorization", "x-api-key"]))
def test_only_the_exact_placeholder_is_admitted(offered: str, header: str) -> None:
    value = f"Bearer {offered}" if header == "authorization" else offered
    head = RequestHead("POST", "/v1/messages", ((header, value), ("Content-Length", "2")))
    assert carries_placeholder(head, PLACEHOLDER) == (offered == PLACEHOLDER)
    admitted = admit_request(CLAUDE_LOOPBACK, head, PLACEHOLDER)
    assert (admitted == 2) == (offered == PLACEHOLDER)
