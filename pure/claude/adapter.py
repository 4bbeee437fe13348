"""Claude Code as the shared modules see it: its pin, descriptor, carriage, environment, credentials,
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
    Variables,
    VendorRoute,
    custody_document,
)
from metaharness.pure.claude.vendor import HONOURED_COMMANDS, KIND, PINS, PROGRAM, RENDERING, UPSTREAM, WIRE_PATHS
from metaharness.pure.jsonline import compact
from metaharness.pure.refusal import Refusal

ENDPOINT_VARIABLES = ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
ENDPOINT_PLACEHOLDER = "metaharness-model-endpoint"


def operator_login_file(caller_env: Mapping[str, str]) -> str | None:
    """``.credentials.json`` in ``$CLAUDE_CONFIG_DIR``, else in ``~/.claude``."""
    config_dir = caller_env.get("CLAUDE_CONFIG_DIR", "")
    if config_dir:
        return posixpath.join(config_dir, ".credentials.json")
    home = caller_env.get("HOME", "")
    return posixpath.join(home, ".claude", ".credentials.json") if home else None


def _gateway(token: str, base_url: str) -> Variables:
    return tuple(zip(ENDPOINT_VARIABLES, (token, base_url, "1"), strict=True))


def custody_token(custody: bytes) -> Result[str, Refusal]:
    """``claudeAiOauth.accessToken`` of the custody file, else ``loopback-custody-unreadable``."""
    unreadable = Failure(Refusal("loopback-custody-unreadable", f"the {KIND} custody file holds no usable token"))
    document = custody_document(custody)
    oauth = document.get("claudeAiOauth") if isinstance(document, dict) else None
    token = oauth.get("accessToken") if isinstance(oauth, dict) else None
    return Success(token) if isinstance(token, str) and token else unreadable


def error_body(error_type: str, message: str, code: str | None) -> bytes:
    """The Anthropic API's error body (it has no code)."""
    return compact({"type": "error", "error": {"type": error_type, "message": message}})


def launch_rows(scratch: str, servers: tuple[str, ...], h2_unavailable: str | None, hooks: str | None) -> tuple[RowText, ...]:
    """Rows H1a, H1b, H2, H5, H8 and H9 of a claude launch."""
    return (
        ("H1a", "imposed", f"CLAUDE_CONFIG_DIR={scratch}/claude-home; plugins only as named copies"),
        ("H1b", "imposed", "fresh config home"),
        ("H2", "imposed", '--setting-sources "", the settings file outside the home'),
        ("H5", "imposed", f"--strict-mcp-config with [{', '.join(servers)}]"),
        (
            "H8",
            "imposed",
            "no --bare/--safe-mode, no CLAUDE_CODE_SAFE_MODE/CLAUDE_CODE_SIMPLE; PreToolUse callback confirmed in-band",
        ),
        ("H9", "unavailable", "the version is read from the opening record"),
    )


LOOPBACK = Loopback(
    upstream=UPSTREAM,
    custody_token=custody_token,
    child_variables=lambda port, placeholder: _gateway(placeholder, f"http://127.0.0.1:{port}"),
    error_body=error_body,
    unauthorized=("authentication_error", None),
)
"""The loopback proxy's facts for claude."""


def route_dialect(_first_path: str) -> Loopback:
    """A confined route speaks the kind's own API: the route proxy answers in its loopback facts' shape."""
    return LOOPBACK


ADAPTER = Adapter(
    kind=KIND,
    program=PROGRAM,
    pins=PINS,
    descriptor=DescriptorFacts(
        adapter_class="harness",
        tiers={"registration": "delivered", "call": "delivered", "turn": "unverified", "kill": "delivered"},
        decision_modes={"ask": "delivered", "frame": "delivered", "observe": "delivered"},
        rendering=RENDERING,
        honoured_commands=HONOURED_COMMANDS,
    ),
    not_carried=VENDOR_NOT_CARRIED,
    not_carried_values=MappingProxyType({}),
    run_rules=RunRules(
        frame_required=None,
        prompt_required=True,
        model_endpoint_required=None,
        model_required=None,
        endpoint_route=True,
        allow_program_needs_owned_surface=True,
        owned_surface_needs_catalogue=False,
    ),
    floor=EnvironmentFloor(
        caller_variables=True, scratch_tmpdir=True, toolchain_variables=False,
        config_home=("CLAUDE_CONFIG_DIR", "claude-home"),
    ),
    guard=EnvironmentGuard(
        declared_keys_only=False,
        hook_variables=frozenset({"CLAUDE_CODE_SAFE_MODE", "CLAUDE_CODE_SIMPLE"}),
        denied_prefixes=("ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_", "GIT_"),
        exempt_from_posture=frozenset({*ENDPOINT_VARIABLES, "ANTHROPIC_API_KEY"}),
    ),
    credentials=CredentialCarriage(
        operator_login_file=operator_login_file,
        operator_login_reads_none=False,
        api_key_variables=("ANTHROPIC_API_KEY",),
        api_key_flag=False,
        api_key_secret_store=False,
        endpoint_variables=lambda endpoint: _gateway(ENDPOINT_PLACEHOLDER, endpoint.rstrip("/")),
        subscription_token=False,
        login_advice=(
            "log in once with `claude` and its /login under this HOME (it writes ~/.claude/.credentials.json, or "
            "$CLAUDE_CONFIG_DIR/.credentials.json), or pass --credentials api-key with ANTHROPIC_API_KEY set, or "
            "--credentials none --model-endpoint URL for a gateway"
        ),
    ),
    loopback=LOOPBACK,
    hermetic=HermeticShape(
        memory=Memory(
            shapes=("CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md", ".claude/rules/*.md", "AGENTS.md"),
            canary=True,
            refused_in_scratch=True,
            nothing_found_suffix="",
        ),
        launch_rows=launch_rows,
        grant_in_words="; Claude Code's tools act on that tree",
        vendor_ambient=True,
        plugins_from_skills=False,
        no_output_style=None,
    ),
    confinement=ConfinementShape(
        route_dialect=route_dialect,
        vendor_route=VendorRoute(
            upstream=UPSTREAM, wire_paths=WIRE_PATHS, base_url_variable="ANTHROPIC_BASE_URL", base_url_path="",
            login_needs_api_key=False,
        ),
        view_grant="",
        writable=("claude-home", "tmp"),
        tools=ToolEntry(
            mechanism="entry",
            variable="CLAUDE_CODE_SHELL_PREFIX",
            how="CLAUDE_CODE_SHELL_PREFIX starts every Bash command and MCP server in the tools' layer",
            masked=("cc-socks",),
        ),
    ),
    record_source="claude.stream-json",
    admit_frame=None,
    caller_seam=False,
)
"""The claude adapter (docs/adapters/claude.md)."""
