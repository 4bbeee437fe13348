"""Codex as the shared modules see it: its pin, descriptor, carriage, environment, credentials,
loopback, hermetic rows and replay (``metaharness.pure.adapter``)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from types import MappingProxyType

from returns.result import Failure, Result, Success

from metaharness.pure.adapter import (
    VENDOR_NOT_CARRIED,
    Adapter,
    ConfinementShape,
    CredentialCarriage,
    DescriptorFacts,
    EnvironmentFloor,
    EnvironmentGuard,
    HermeticShape,
    Loopback,
    Memory,
    RowText,
    RunRules,
    ToolEntry,
    VendorRoute,
    WitnessFacts,
    custody_document,
)
from metaharness.pure.codex.vendor import (
    HONOURED_COMMANDS,
    KIND,
    LOOPBACK_KEY_VARIABLE,
    PINS,
    PROGRAM,
    RENDERING,
    UPSTREAM,
    WIRE_PATHS,
)
from metaharness.pure.jsonline import compact
from metaharness.pure.refusal import Refusal


def operator_login_file(caller_env: Mapping[str, str]) -> str | None:
    """``~/.codex/auth.json``."""
    home = caller_env.get("HOME", "")
    return posixpath.join(home, ".codex", "auth.json") if home else None


def custody_token(custody: bytes) -> Result[str, Refusal]:
    """``OPENAI_API_KEY`` (class api-key), else ``tokens.access_token`` (class chatgpt →
    ``loopback-chatgpt-login``); the key wins when both exist; else ``loopback-custody-unreadable``."""
    unreadable = Failure(Refusal("loopback-custody-unreadable", f"the {KIND} custody file holds no usable token"))
    document = custody_document(custody)
    if not isinstance(document, dict):
        return unreadable
    key = document.get("OPENAI_API_KEY")
    if isinstance(key, str) and key:
        return Success(key)
    tokens = document.get("tokens")
    if isinstance(tokens, dict) and isinstance(tokens.get("access_token"), str):
        return Failure(
            Refusal(
                "loopback-chatgpt-login",
                "the codex custody file holds a ChatGPT-plan login; loopback carries an API key only: log in with "
                "`codex login --with-api-key`, or pass --credentials api-key with OPENAI_API_KEY set",
            )
        )
    return unreadable


def error_body(error_type: str, message: str, code: str | None) -> bytes:
    """The OpenAI API's error body."""
    return compact({"error": {"type": error_type, "code": code, "message": message}})


def launch_rows(scratch: str, servers: tuple[str, ...], h2_unavailable: str | None, hooks: str | None) -> tuple[RowText, ...]:
    """Rows H1a, H1b, H2, H5, H8 and H9 of a codex launch."""
    return (
        ("H1a", "imposed", f"CODEX_HOME={scratch}/codex-home"),
        ("H1b", "imposed", "fresh CODEX_HOME"),
        ("H2", "imposed", "only the scratch config.toml; no project trust")
        if h2_unavailable is None
        else ("H2", "unavailable", h2_unavailable),
        ("H5", "imposed", "[mcp_servers] empty"),
        ("H8", "imposed", "PreToolUse hook in config.toml, --dangerously-bypass-hook-trust, no CODEX_DISABLE_HOOKS"),
        ("H9", "unavailable", "the version is read from the opening record"),
    )


LOOPBACK = Loopback(
    upstream=UPSTREAM,
    custody_token=custody_token,
    child_variables=lambda port, placeholder: ((LOOPBACK_KEY_VARIABLE, placeholder),),
    error_body=error_body,
    unauthorized=("invalid_request_error", "invalid_api_key"),
)
"""The loopback proxy's facts for codex."""


def route_dialect(_first_path: str) -> Loopback:
    """A confined route speaks the kind's own API: the route proxy answers in its loopback facts' shape."""
    return LOOPBACK


ADAPTER = Adapter(
    kind=KIND,
    program=PROGRAM,
    pins=PINS,
    descriptor=DescriptorFacts(
        adapter_class="harness",
        tiers={"registration": "unverified", "call": "delivered", "turn": "unverified", "kill": "delivered"},
        decision_modes={"ask": "delivered", "frame": "delivered", "observe": "delivered"},
        rendering=RENDERING,
        honoured_commands=HONOURED_COMMANDS,
    ),
    not_carried=MappingProxyType(
        {
            **VENDOR_NOT_CARRIED,
            "allow-program": "codex publishes no run tool metaharness could narrow",
            "max-turns": "codex exec has no turn ceiling to carry it",
            "plugin": "marketplace plugins are resolved for Claude Code only",
        }
    ),
    not_carried_values=MappingProxyType({}),
    run_rules=RunRules(
        frame_required=None,
        prompt_required=True,
        model_endpoint_required=None,
        model_required=None,
        endpoint_route=True,
        allow_program_needs_owned_surface=False,
        owned_surface_needs_catalogue=True,
    ),
    floor=EnvironmentFloor(
        caller_variables=True, scratch_tmpdir=True, toolchain_variables=False, config_home=("CODEX_HOME", "codex-home")
    ),
    guard=EnvironmentGuard(
        declared_keys_only=False,
        hook_variables=frozenset({"CODEX_DISABLE_HOOKS"}),
        denied_prefixes=("OPENAI_", "CODEX_", "DISABLE_", "GIT_"),
        denied_names=frozenset({LOOPBACK_KEY_VARIABLE}),
        exempt=frozenset({"CODEX_HOME"}),
        exempt_from_posture=frozenset({"OPENAI_API_KEY", "CODEX_API_KEY", LOOPBACK_KEY_VARIABLE}),
    ),
    credentials=CredentialCarriage(
        operator_login_file=operator_login_file,
        operator_login_reads_none=False,
        api_key_variables=("OPENAI_API_KEY", "CODEX_API_KEY"),
        api_key_flag=False,
        api_key_secret_store=False,
        endpoint_variables=None,
        subscription_token=False,
        login_advice=(
            "log in once with `codex login --with-api-key` under this HOME (it writes ~/.codex/auth.json holding the "
            "key), or pass --credentials api-key with OPENAI_API_KEY set, or --credentials none --model-endpoint URL "
            "for a gateway"
        ),
    ),
    loopback=LOOPBACK,
    hermetic=HermeticShape(
        memory=Memory(shapes=("CLAUDE.md", "AGENTS.md"), canary=False, refused_in_scratch=True, nothing_found_suffix=""),
        launch_rows=launch_rows,
        grant_in_words='; the codex sandbox is sandbox_mode = "workspace-write" on that tree, with no writable_roots '
        "and exclude_slash_tmp",
        vendor_ambient=True,
        plugins_from_skills=False,
        no_output_style=None,
    ),
    confinement=ConfinementShape(
        route_dialect=route_dialect,
        vendor_route=VendorRoute(
            upstream=UPSTREAM, wire_paths=WIRE_PATHS, base_url_variable="OPENAI_BASE_URL", base_url_path="/v1",
            login_needs_api_key=True,
        ),
        view_grant="; in the view that grant is the tree and TMPDIR",
        writable=("codex-home", "tmp", "hook-channel"),
        tools=ToolEntry(
            mechanism="path",
            how="codex starts every shell command through the first bwrap on its PATH, the tools' layer's entry, "
            "and its own sandbox runs inside the layer",
            program="bwrap",
            form="bwrap",
            reads=("codex-home/tmp/arg0-linux",),
            covered=("@openai/codex-linux-*/vendor/*/codex-resources/bwrap",),
        ),
    ),
    record_source="codex.rollout",
    admit_frame=None,
    caller_seam=False,
    witness=WitnessFacts(
        hosts=frozenset({"exec"}),
        names={"exec_command": "Bash", "spawn_agent": "collaborationspawn_agent", "wait_agent": "collaborationwait_agent"},
        fields={"exec_command": (("cmd", "command"),), "apply_patch": (("", "command"),)},
    ),
)
"""The codex adapter (docs/adapters/codex.md)."""
