"""The options of ``metaharness run`` as one frozen value, and the refusal stages 2–4 over it
(docs/cli.md#run; docs/hermetic.md#refusal-order, #auditor).

``RunOptions`` holds every option of docs/cli.md#run plus ``given``, the names of the options that
appeared on the command line whatever their value (docs/cli.md). The stage functions decide over it
and over facts the shell gathered; each returns the first refusal of its stage in the documented order.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Literal

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.adapter import RunRules
from metaharness.pure.adapters import adapter_of
from metaharness.pure.environment import ProgramCandidate, resolve_program
from metaharness.pure.kind import Kind
from metaharness.pure.modes import Credentials, DecisionMode, HermeticMode
from metaharness.pure.refusal import Refusal

RUN_OPTION_ORDER: tuple[str, ...] = (
    "prompt",
    "decisions",
    "frame",
    "actor",
    "model",
    "effort",
    "max-turns",
    "credentials",
    "api-key-secret",
    "model-endpoint",
    "model-wire",
    "subscription-token-file",
    "subscription-token-env",
    "subscription-token-pointer",
    "tool-surface",
    "allow-program",
    "catalogue",
    "context",
    "plugin-dir",
    "plugin",
    "cwd",
    "scratch-cwd",
    "hermetic",
    "audit",
    "spec",
    "auditor",
    "strict-version",
    "retain-dir",
    "timeout",
    "decision-deadline",
    "events",
    "quiet",
    "hooks",
    "driver",
    "toolchain",
    "prices",
    "write-scope",
    "scope-announce",
    "substrate",
    "substrate-embedded",
    "cgroup-root",
    "confine",
    "confine-read",
)
"""The named options of ``run`` in the order of docs/cli.md#run's table (``-- AUDITOR_ARGS`` aside)."""


class RunOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Every option of ``metaharness run`` after parsing (docs/cli.md#run), defaults filled in.

    ``write_scope`` keeps the ``GLOB=SCOPE`` pairs in command-line order; ``auditor_args`` are the
    words after ``--``; ``given`` names (without dashes) the options that appeared on the command line.
    """

    kind: Kind
    prompt: str | None = None
    decisions: DecisionMode = "frame"
    frame: str | None = None
    actor: str | None = None
    model: str | None = None
    effort: str | None = None
    max_turns: int | None = None
    credentials: Credentials = "operator-login"
    api_key_secret: str | None = None
    model_endpoint: str | None = None
    model_wire: Literal["openai-responses", "anthropic-messages"] | None = None
    subscription_token_file: str | None = None
    subscription_token_env: str | None = None
    subscription_token_pointer: str | None = None
    tool_surface: Literal["native", "owned"] = "native"
    allow_program: tuple[str, ...] = ()
    catalogue: str | None = None
    context: tuple[str, ...] = ()
    plugin_dir: tuple[str, ...] = ()
    plugin: tuple[str, ...] = ()
    cwd: str | None = None
    scratch_cwd: bool = False
    hermetic: HermeticMode = "off"
    audit: bool = False
    spec: str | None = None
    auditor: str | None = None
    auditor_args: tuple[str, ...] = ()
    strict_version: bool = False
    retain_dir: str | None = None
    timeout: float | None = None
    decision_deadline: float | None = None
    events: str | None = None
    quiet: bool = False
    hooks: str | None = None
    driver: str | None = None
    toolchain: str | None = None
    prices: str | None = None
    write_scope: tuple[tuple[str, str], ...] = ()
    scope_announce: Literal["stated", "silent"] = "stated"
    substrate: str | None = None
    substrate_embedded: bool = False
    cgroup_root: str | None = None
    confine: Literal["on", "off"] = "on"
    confine_read: tuple[str, ...] = ()
    given: frozenset[str] = frozenset()

    def audited(self) -> bool:
        """Whether the run asks for an audit: ``--audit``, or ``--hermetic strict`` (docs/hermetic.md#auditor)."""
        return self.audit or self.hermetic == "strict"


def split_auditor_prefix(prefix: str) -> tuple[str, ...]:
    """The words of ``--auditor PREFIX`` by POSIX shell word rules; none when it cannot be split
    (docs/hermetic.md#auditor check 5)."""
    try:
        return tuple(shlex.split(prefix, posix=True))
    except ValueError:
        return ()


class AuditFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the shell found for stage 2 (docs/hermetic.md#auditor): whether ``--spec`` is a readable regular
    file, the PATH ``run`` was started with, and the candidates for the auditor's first word
    (``metaharness.pure.environment.program_candidates``)."""

    spec_readable: bool = False
    caller_path: str = ""
    auditor_candidates: dict[str, ProgramCandidate] = msgspec.field(default_factory=dict)


class AuditPairing(msgspec.Struct, frozen=True, kw_only=True):
    """A run's audit plan after stage 2: whether it is audited, and the auditor's argv prefix with its
    first word resolved to the file that will run (empty when no auditor is named)."""

    audited: bool
    auditor_words: tuple[str, ...]
    auditor_program: str | None


_SUPPLIED_AUDITOR_WORDS = ("--spec", "--transcript")


def _supplied_word(word: str) -> bool:
    return any(word == flag or word.startswith(flag + "=") for flag in _SUPPLIED_AUDITOR_WORDS)


def check_audit_pairing(options: RunOptions, facts: AuditFacts) -> Result[AuditPairing, Refusal]:
    """Stage 2, audit pairing: checks 1–6 of docs/hermetic.md#auditor in order, the first that matches refused."""
    if options.spec is not None and options.auditor is None:
        return Failure(Refusal("spec-without-auditor", f"--spec {options.spec} is given without --auditor"))
    if options.auditor is not None and options.spec is None:
        return Failure(
            Refusal("auditor-without-spec", f"--auditor {options.auditor} is given without --spec")
        )
    if options.auditor is not None and not options.audited():
        return Failure(
            Refusal(
                "auditor-without-audit",
                "--spec and --auditor are given while neither --audit nor --hermetic strict asks for an audit",
            )
        )
    if options.spec is not None and not facts.spec_readable:
        return Failure(Refusal("spec-unreadable", f"--spec {options.spec} is not a readable regular file"))
    words: tuple[str, ...] = ()
    program: str | None = None
    if options.auditor is not None:
        words = split_auditor_prefix(options.auditor)
        if not words:
            return Failure(
                Refusal("auditor-not-invokable", f"--auditor {options.auditor!r} splits into no word")
            )
        resolved = resolve_program(words[0], facts.caller_path, facts.auditor_candidates)
        if not isinstance(resolved, Success):
            where = f"at {words[0]}" if "/" in words[0] else f"on the PATH {facts.caller_path}"
            return Failure(
                Refusal(
                    "auditor-not-invokable",
                    f"--auditor {options.auditor!r}: {words[0]} is not an executable regular file {where}",
                )
            )
        program = resolved.unwrap()
    if options.auditor_args and options.auditor is None:
        return Failure(
            Refusal(
                "auditor-args-unusable",
                f"words after -- ({' '.join(options.auditor_args)}) are given without --auditor",
            )
        )
    supplied = [word for word in options.auditor_args if _supplied_word(word)]
    if supplied:
        return Failure(
            Refusal(
                "auditor-args-unusable",
                f"{supplied[0]} after -- is supplied by metaharness itself (--spec and --transcript)",
            )
        )
    return Success(AuditPairing(audited=options.audited(), auditor_words=words, auditor_program=program))


NOT_BUILT: Mapping[str, str] = MappingProxyType(
    {
        "--plugin": "marketplace plugin resolution (docs/adapters/claude.md#plugins) has not landed",
    }
)
"""What ``run`` declares but this build does not perform (docs/cli.md ``not-built``): a kind name, an
``--option`` on every kind, or ``--option on KIND`` → what it waits for. Later work shrinks this one
value."""


def _option_value(options: RunOptions, name: str) -> object:
    return getattr(options, name.replace("-", "_"))


def _not_carried(options: RunOptions, name: str) -> Refusal | None:
    if name in options.given:
        reason = adapter_of(options.kind).not_carried.get(name)
        if reason is not None:
            return Refusal(f"{name}-not-carried", f"--{name} is not carried on {options.kind}: {reason}")
    value = _option_value(options, name)
    if isinstance(value, str):
        reason = adapter_of(options.kind).value_not_carried(name, value)
        if reason is not None:
            return Refusal(
                f"{name}-not-carried", f"--{name} {value} is not carried on {options.kind}: {reason}"
            )
    return None


def kind_defaults(options: RunOptions) -> RunOptions:
    """``--decisions`` and ``--credentials`` left out (not in ``given``, at ``RunOptions``' defaults) take the
    kind's own defaults (``RunRules.default_decisions``, ``default_credentials``; docs/cli.md#run)."""
    rules = adapter_of(options.kind).run_rules
    left_out = RunOptions(kind=options.kind)
    chosen: dict[str, str] = {}
    if "decisions" not in options.given and options.decisions == left_out.decisions:
        chosen["decisions"] = rules.default_decisions
    if "credentials" not in options.given and options.credentials == left_out.credentials:
        chosen["credentials"] = rules.default_credentials
    return msgspec.structs.replace(options, **chosen)


def _not_built(subject: str, waits_for: str) -> Refusal:
    return Refusal("not-built", f"{subject} is not built in this build: {waits_for}")


def check_kind_carriage(
    options: RunOptions, not_built: Mapping[str, str] = NOT_BUILT
) -> Result[RunOptions, Refusal]:
    """Stage 3, kind carriage: the first option the kind does not carry in docs/cli.md#run's table order
    (docs/cli.md#run); then ``not-built`` for the kind, then for a given option this build does not perform on any
    kind or on this one. A left-out ``--decisions`` or ``--credentials`` is first the kind's own default
    (:func:`kind_defaults`), and the options returned carry it."""
    options = kind_defaults(options)
    for name in RUN_OPTION_ORDER:
        refusal = _not_carried(options, name)
        if refusal is not None:
            return Failure(refusal)
    if options.kind in not_built:
        return Failure(_not_built(f"run {options.kind}", not_built[options.kind]))
    for name in RUN_OPTION_ORDER:
        if name in options.given:
            for subject in (f"--{name}", f"--{name} on {options.kind}"):
                if subject in not_built:
                    return Failure(_not_built(subject, not_built[subject]))
    return Success(options)


def gateway_root_problem(url: str) -> str | None:
    """Why ``url`` is not a gateway root ``http(s)://host[:port]`` with no path (a lone ``/`` is
    allowed and removed by the launch), or ``None`` when it is one (docs/adapters/common.md#endpoint-route).
    ``urllib.parse`` is imported here: a run refused before it names no endpoint needs none of it."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port_valid = parts.port is None or parts.port > 0
    except ValueError as error:
        return str(error)
    if not port_valid:
        return "its port is 0"
    if parts.scheme not in ("http", "https") or not url.startswith(f"{parts.scheme}://"):
        return "it does not begin http:// or https://"
    if not parts.hostname:
        return "it names no host"
    if parts.username is not None or parts.password is not None:
        return "it carries user information"
    if parts.path not in ("", "/") or parts.query or parts.fragment or url.endswith(("?", "#")):
        return "it has a path, query or fragment; a gateway root is http(s)://host[:port]"
    return None


def _endpoint_problem(options: RunOptions) -> str | None:
    endpoint = options.model_endpoint
    if endpoint is None:
        return None
    if adapter_of(options.kind).run_rules.endpoint_route:
        return gateway_root_problem(endpoint)
    if not endpoint.startswith(("http://", "https://")):
        return "it does not begin http:// or https://"
    return _url_problem(endpoint)


def _url_problem(url: str) -> str | None:
    """Why ``url`` names no host and port a connect could be tried at (an unclosed ``[``, a port that is no
    number or past 65535, no host), or ``None``."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError as error:
        return str(error)
    return None if parts.hostname else "it names no host"


PairingRule = tuple[str, Callable[[RunOptions], str | None]]


def _when(condition: bool, message: str) -> str | None:
    return message if condition else None


def _rules(options: RunOptions) -> RunRules:
    return adapter_of(options.kind).run_rules


def _endpoint_route(options: RunOptions) -> bool:
    return _rules(options).endpoint_route


def _token_source(options: RunOptions) -> bool:
    return options.subscription_token_file is not None or options.subscription_token_env is not None


PAIRING_RULES: tuple[PairingRule, ...] = (
    (
        "scratch-cwd-without-cwd",
        lambda o: _when(o.scratch_cwd and o.cwd is None, "--scratch-cwd is given without --cwd"),
    ),
    (
        "frame-required",
        lambda o: (
            _rules(o).frame_required if o.decisions == "frame" and o.frame is None else None
        ),
    ),
    (
        "prompt-required",
        lambda o: _when(_rules(o).prompt_required and o.prompt is None, f"{o.kind} needs the task as -p/--prompt TEXT"),
    ),
    (
        "model-endpoint-required",
        lambda o: _rules(o).model_endpoint_required if o.model_endpoint is None else None,
    ),
    (
        "model-required",
        lambda o: _rules(o).model_required if o.model is None else None,
    ),
    (
        "model-endpoint-malformed",
        lambda o: (
            None
            if (problem := _endpoint_problem(o)) is None
            else f"--model-endpoint {o.model_endpoint}: {problem}"
        ),
    ),
    (
        "endpoint-with-credential",
        lambda o: _when(
            _endpoint_route(o) and o.model_endpoint is not None and o.credentials in ("operator-login", "api-key"),
            f"--model-endpoint {o.model_endpoint} is given with --credentials {o.credentials}; "
            "the endpoint route takes --credentials none, or loopback to make it the proxy's upstream",
        ),
    ),
    (
        "api-key-secret-needs-api-key",
        lambda o: _when(
            o.api_key_secret is not None and o.credentials != "api-key",
            f"--api-key-secret {o.api_key_secret} is given without --credentials api-key",
        ),
    ),
    (
        "subscription-token-conflict",
        lambda o: _when(
            o.subscription_token_file is not None and o.subscription_token_env is not None,
            "--subscription-token-file and --subscription-token-env name two sources for one token",
        ),
    ),
    (
        "subscription-token-pointer-alone",
        lambda o: _when(
            o.subscription_token_pointer is not None and not _token_source(o),
            f"--subscription-token-pointer {o.subscription_token_pointer} is given without "
            "--subscription-token-file or --subscription-token-env",
        ),
    ),
    (
        "subscription-token-with-api-key",
        lambda o: _when(
            _token_source(o) and o.credentials == "api-key",
            "a subscription token source is given with --credentials api-key",
        ),
    ),
    (
        "substrate-conflict",
        lambda o: _when(
            o.substrate is not None and o.substrate_embedded,
            f"--substrate {o.substrate} is given with --substrate-embedded",
        ),
    ),
    (
        "allow-program-needs-owned-surface",
        lambda o: _when(
            _rules(o).allow_program_needs_owned_surface and bool(o.allow_program) and o.tool_surface == "native",
            f"--allow-program {' '.join(o.allow_program)} needs --tool-surface owned "
            f"on {o.kind}: the native surface has no run tool metaharness serves",
        ),
    ),
    (
        "tool-surface-owned-needs-catalogue",
        lambda o: _when(
            _rules(o).owned_surface_needs_catalogue and o.tool_surface == "owned" and o.catalogue is None,
            f"--tool-surface owned on {o.kind} needs --catalogue: {o.kind} carries the owned surface only as "
            "a catalogue through app-server",
        ),
    ),
    (
        "catalogue-needs-owned-surface",
        lambda o: _when(
            _endpoint_route(o) and o.catalogue is not None and o.tool_surface == "native",
            f"--catalogue {o.catalogue} is given beside --tool-surface native",
        ),
    ),
    (
        "catalogue-with-allow-program",
        lambda o: _when(
            o.catalogue is not None and bool(o.allow_program),
            f"--catalogue {o.catalogue} is given beside --allow-program: a server handed a catalogue "
            "publishes no run for the programs to be started by",
        ),
    ),
)
"""docs/hermetic.md#refusal-order's pairing refusals in that table's order: code → the message when it applies."""


def check_option_pairing(options: RunOptions) -> Result[RunOptions, Refusal]:
    """Stage 4, option pairing: the first rule of docs/hermetic.md#refusal-order that applies, in that table's order."""
    for code, rule in PAIRING_RULES:
        message = rule(options)
        if message is not None:
            return Failure(Refusal(code, message))
    return Success(options)


def check_prompt_text(options: RunOptions) -> Result[RunOptions, Refusal]:
    """``prompt-not-utf8``: the task must be UTF-8 text. The command line hands undecodable bytes over
    as lone surrogates; no harness can be given them as a task, so the run is refused before anything
    starts."""
    prompt = options.prompt
    if prompt is None:
        return Success(options)
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as error:
        return Failure(
            Refusal(
                "prompt-not-utf8",
                f"-p/--prompt is not UTF-8 text: the byte at position {error.start} does not decode; "
                "pass the task as UTF-8",
            )
        )
    return Success(options)


STREAM_WORDS = ("model", "actor", "effort")
"""Options whose text the event stream carries as given, so it must be UTF-8."""


def check_stream_words(options: RunOptions) -> Result[RunOptions, Refusal]:
    """``argument-not-utf8`` for an option of ``STREAM_WORDS`` whose bytes are not UTF-8 (they arrive
    as surrogates), which no event could carry."""
    for name in STREAM_WORDS:
        value = getattr(options, name)
        if isinstance(value, str) and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return Failure(Refusal("argument-not-utf8", f"--{name} is not UTF-8 text, so no event could carry it"))
    return Success(options)


def check_run_options(
    options: RunOptions, facts: AuditFacts, not_built: Mapping[str, str] = NOT_BUILT
) -> Result[RunOptions, Refusal]:
    """The task's text and the UTF-8 check of the stream's words, then stages 2–4 (audit pairing, kind
    carriage, option pairing) in order; the first refusal is the one reported."""
    return (
        check_prompt_text(options)
        .bind(check_stream_words)
        .bind(lambda _words: check_audit_pairing(options, facts))
        .bind(lambda _pairing: check_kind_carriage(options, not_built))
        .bind(check_option_pairing)
    )


def check_serve_pairing(
    *, writable: bool, allow_program: tuple[str, ...], catalogue: str | None
) -> Result[None, Refusal]:
    """``mcp-serve``'s option pairing (docs/hermetic.md#mcp-serve), in this order: a catalogue publishes no run tool
    for ``--allow-program`` to narrow (whether or not ``--writable`` is given), and ``--allow-program`` needs
    ``--writable``."""
    if allow_program and catalogue is not None:
        return Failure(
            Refusal(
                "catalogue-with-allow-program",
                f"--catalogue {catalogue} is given beside --allow-program: a server handed a catalogue "
                "publishes no run for the programs to be started by",
            )
        )
    if allow_program and not writable:
        return Failure(
            Refusal(
                "allow-program-needs-writable",
                f"--allow-program {' '.join(allow_program)} is given without --writable",
            )
        )
    return Success(None)
