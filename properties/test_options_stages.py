"""Properties of ``run``'s refusal stages 2–4 (docs/cli.md#run; docs/hermetic.md#refusal-order, #auditor): for any
option set, the refusal reported is the first applicable one in stage order, and an option the kind does not carry is
refused exactly when it is *given*, whatever its value (docs/cli.md).

The oracle below restates the documented tables independently of ``metaharness.pure.options``."""

from __future__ import annotations

import shlex
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from metaharness.pure.environment import ProgramCandidate
from metaharness.pure.options import RUN_OPTION_ORDER, AuditFacts, RunOptions, check_run_options

LOOP_ONLY = {
    "hooks", "driver", "toolchain", "prices", "substrate", "substrate-embedded", "cgroup-root", "model-wire",
    "subscription-token-file", "subscription-token-env", "subscription-token-pointer", "api-key-secret",
    "write-scope", "scope-announce",
}
REFUSED_ON = {
    **{name: {"claude", "codex"} for name in LOOP_ONLY},
    "allow-program": {"codex"},
    "max-turns": {"codex"},
    "effort": {"b10x"},
    "plugin": {"codex", "b10x"},
    "catalogue": {"b10x"},
}

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "prompt": st.sampled_from(["fix it", ""]),
    "decisions": st.sampled_from(["frame", "ask", "observe"]),
    "frame": st.just("step.frame.json"),
    "actor": st.just("ci"),
    "model": st.just("m"),
    "effort": st.just("high"),
    "max-turns": st.integers(1, 5),
    "credentials": st.sampled_from(["operator-login", "api-key", "loopback", "none"]),
    "api-key-secret": st.just("openai"),
    "model-endpoint": st.sampled_from(
        ["http://127.0.0.1:8080", "https://gw.example/", "https://gw.example/v1", "ftp://x", "http://h:0"]
    ),
    "model-wire": st.sampled_from(["openai-responses", "anthropic-messages"]),
    "subscription-token-file": st.just("token.json"),
    "subscription-token-env": st.just("TOKEN"),
    "subscription-token-pointer": st.just("/access_token"),
    "tool-surface": st.sampled_from(["native", "owned"]),
    "allow-program": st.lists(st.sampled_from(["ls", "git"]), min_size=1, max_size=2).map(tuple),
    "catalogue": st.just("catalogue.json"),
    "context": st.just(("docs/brief.md",)),
    "plugin-dir": st.just(("plugins/a",)),
    "plugin": st.just(("repo@name@pin",)),
    "cwd": st.just("/work/repo"),
    "scratch-cwd": st.just(True),
    "hermetic": st.sampled_from(["off", "on", "strict"]),
    "audit": st.just(True),
    "spec": st.just("spec.md"),
    "auditor": st.sampled_from(["auditor", "auditor check", "'", "/opt/auditor --x"]),
    "strict-version": st.just(True),
    "retain-dir": st.just("/tmp/retain"),
    "timeout": st.sampled_from([0.5, 600.0]),
    "decision-deadline": st.sampled_from([1.0, 300.0]),
    "events": st.just("/tmp/events.jsonl"),
    "quiet": st.just(True),
    "hooks": st.just("hooks.json"),
    "driver": st.just("driver"),
    "toolchain": st.just("stable"),
    "prices": st.just("prices.json"),
    "write-scope": st.just((("src/**", "allowed"),)),
    "scope-announce": st.sampled_from(["stated", "silent"]),
    "substrate": st.just("/run/sub.sock"),
    "substrate-embedded": st.just(True),
    "cgroup-root": st.just("/sys/fs/cgroup/x"),
    "confine": st.sampled_from(["on", "off"]),
    "confine-read": st.just(("/opt/toolchain",)),
}
DEFAULTS = {"decisions": "frame", "credentials": "operator-login", "tool-surface": "native", "hermetic": "off",
            "scope-announce": "stated", "confine": "on"}


@st.composite
def run_options(draw: st.DrawFn) -> tuple[RunOptions, AuditFacts]:
    kind = draw(st.sampled_from(["claude", "codex", "b10x"]))
    names = draw(st.lists(st.sampled_from(RUN_OPTION_ORDER), max_size=7, unique=True))
    values = {name: draw(VALUES[name]) for name in names}
    # given: every option set on the command line, including one set to its default value
    given_defaults = draw(st.lists(st.sampled_from(sorted(DEFAULTS)), max_size=2, unique=True))
    for name in given_defaults:
        values.setdefault(name, DEFAULTS[name])
    auditor_args = draw(st.sampled_from([(), ("-v",), ("--spec",), ("--transcript=t",)]))
    options = RunOptions(
        kind=kind,
        auditor_args=auditor_args,
        given=frozenset(values),
        **{name.replace("-", "_"): value for name, value in values.items()},
    )
    words = shlex.split(values["auditor"]) if "auditor" in values and values["auditor"] != "'" else []
    executable = draw(st.booleans())
    candidates = {}
    if words:
        path = words[0] if "/" in words[0] else f"/bin/{words[0]}"
        candidates[path] = ProgramCandidate(regular=True, executable=executable)
    facts = AuditFacts(spec_readable=draw(st.booleans()), caller_path="/bin", auditor_candidates=candidates)
    return options, facts


def gateway_root(url: str) -> bool:
    scheme, sep, rest = url.partition("://")
    if scheme not in ("http", "https") or not sep:
        return False
    host_port = rest.removesuffix("/")
    if "/" in host_port or "?" in host_port or "#" in host_port or "@" in host_port or not host_port:
        return False
    host, _, port = host_port.partition(":")
    return bool(host) and (port == "" or (port.isdigit() and 0 < int(port) < 65536))


def applicable(o: RunOptions, facts: AuditFacts) -> list[str]:
    """Every refusal of stages 2–4 that applies, in stage order, restated from docs/cli.md."""
    codes: list[str] = []
    audited = o.audit or o.hermetic == "strict"
    # stage 2, docs/hermetic.md#auditor
    if o.spec is not None and o.auditor is None:
        codes.append("spec-without-auditor")
    if o.auditor is not None and o.spec is None:
        codes.append("auditor-without-spec")
    if (o.spec is not None or o.auditor is not None) and not audited:
        codes.append("auditor-without-audit")
    if o.spec is not None and not facts.spec_readable:
        codes.append("spec-unreadable")
    if o.auditor is not None:
        try:
            words = shlex.split(o.auditor)
        except ValueError:
            words = []
        found = any(c.regular and c.executable for c in facts.auditor_candidates.values())
        if not words or not found:
            codes.append("auditor-not-invokable")
    if (o.auditor_args and o.auditor is None) or any(
        w in ("--spec", "--transcript") or w.startswith(("--spec=", "--transcript=")) for w in o.auditor_args
    ):
        codes.append("auditor-args-unusable")
    # stage 3, docs/cli.md#run, in docs/cli.md#run's table order
    for name in RUN_OPTION_ORDER:
        if name in o.given and o.kind in REFUSED_ON.get(name, set()):
            codes.append(f"{name}-not-carried")
        if name == "tool-surface" and o.kind == "b10x" and o.tool_surface == "owned":
            codes.append("tool-surface-not-carried")
        if name == "credentials" and o.kind == "b10x" and o.credentials == "loopback":
            codes.append("credentials-not-carried")
    # stage 4, docs/hermetic.md#refusal-order
    vendor = o.kind != "b10x"
    token = o.subscription_token_file is not None or o.subscription_token_env is not None
    endpoint = o.model_endpoint
    rules = [
        ("scratch-cwd-without-cwd", o.scratch_cwd and o.cwd is None),
        ("frame-required", o.kind == "b10x" and o.decisions == "frame" and o.frame is None),
        ("prompt-required", vendor and o.prompt is None),
        ("model-endpoint-required", o.kind == "b10x" and endpoint is None),
        (
            "model-endpoint-malformed",
            endpoint is not None
            and (not gateway_root(endpoint) if vendor else not endpoint.startswith(("http://", "https://"))),
        ),
        ("endpoint-with-credential", vendor and endpoint is not None and o.credentials in ("operator-login", "api-key")),
        ("api-key-secret-needs-api-key", o.api_key_secret is not None and o.credentials != "api-key"),
        ("subscription-token-conflict", o.subscription_token_file is not None and o.subscription_token_env is not None),
        ("subscription-token-pointer-alone", o.subscription_token_pointer is not None and not token),
        ("subscription-token-with-api-key", token and o.credentials == "api-key"),
        ("substrate-conflict", o.substrate is not None and o.substrate_embedded),
        ("allow-program-needs-owned-surface", o.kind == "claude" and bool(o.allow_program) and o.tool_surface == "native"),
        ("tool-surface-owned-needs-catalogue", o.kind == "codex" and o.tool_surface == "owned" and o.catalogue is None),
        ("catalogue-needs-owned-surface", vendor and o.catalogue is not None and o.tool_surface == "native"),
        ("catalogue-with-allow-program", o.catalogue is not None and bool(o.allow_program)),
    ]
    codes.extend(code for code, applies in rules if applies)
    return codes


@settings(max_examples=400, deadline=None)
@given(run_options())
def test_the_refusal_is_the_first_applicable_in_stage_order(case: tuple[RunOptions, AuditFacts]) -> None:
    options, facts = case
    expected = applicable(options, facts)
    result = check_run_options(options, facts, not_built={})
    if expected:
        assert isinstance(result, Failure)
        assert result.failure().code == expected[0]
    else:
        assert result == Success(options)


@settings(max_examples=200, deadline=None)
@given(run_options(), st.sampled_from(sorted(REFUSED_ON)))
def test_not_carried_follows_given_not_value(case: tuple[RunOptions, AuditFacts], name: str) -> None:
    """Taking an option out of ``given`` (keeping its value) removes its not-carried refusal, and
    putting it in (at its default value) adds it on a kind that does not carry it."""
    options, facts = case
    bare = RunOptions(kind=options.kind, decisions="observe", model="m", model_endpoint="http://h", prompt="p",
                      given=frozenset({name}))
    refused = check_run_options(bare, AuditFacts(), not_built={})
    if options.kind in REFUSED_ON[name]:
        assert refused.failure().code == f"{name}-not-carried"
    else:
        assert not (isinstance(refused, Failure) and refused.failure().code.endswith("-not-carried"))
    hidden = RunOptions(**{**{f: getattr(options, f) for f in options.__struct_fields__}, "given": frozenset()})
    result = check_run_options(hidden, facts, not_built={})
    assert not (isinstance(result, Failure) and result.failure().code == f"{name}-not-carried")


@settings(max_examples=200, deadline=None)
@given(run_options(), st.sampled_from(["claude", "codex", "b10x", "--prompt", "--cwd", "--audit"]))
def test_not_built_comes_after_not_carried_and_before_pairing(
    case: tuple[RunOptions, AuditFacts], unbuilt: str
) -> None:
    options, facts = case
    expected = applicable(options, facts)
    result = check_run_options(options, facts, not_built={unbuilt: "later work"})
    stage_3 = [c for c in expected if c.endswith("-not-carried")]
    stage_2 = [c for c in expected if c in {"spec-without-auditor", "auditor-without-spec", "auditor-without-audit",
                                            "spec-unreadable", "auditor-not-invokable", "auditor-args-unusable"}]
    hits = unbuilt == options.kind or unbuilt.removeprefix("--") in options.given
    if stage_2 or stage_3:
        assert result.failure().code == expected[0]
    elif hits:
        assert result.failure().code == "not-built"
        assert "later work" in result.failure().message
    else:
        assert result == check_run_options(options, facts, not_built={})
