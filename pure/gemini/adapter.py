"""Gemini CLI as the shared modules see it: its pin, descriptor, carriage, environment, credentials,
hermetic rows and replay (``metaharness.pure.adapter``; docs/adapters/gemini.md)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

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
    WitnessFacts,
)
from metaharness.pure.jsonline import compact
from metaharness.pure.refusal import Refusal

KIND: Literal["gemini"] = "gemini"
HONOURED_COMMANDS = frozenset({"tool.decide", "interrupt", "halt"})
"""The ``metaharness.command/1`` commands the gemini adapter honours; the rest are ``UNSUPPORTED_CONTROL``
(docs/events.md#commands). Its descriptor states them and its session steers by them."""
PROGRAM = "gemini"
PINS = ("0.61.0",)
LAYER_TMP = "tmp/layer-tmp"
"""The tools' own TMPDIR under the scratch root, bound in their layer at the harness's (``tmp``), so the
folders Gemini CLI makes there for each command stay out of every tool's reach (docs/confinement.md#two-layers)."""
BASE_URL_VARIABLE = "GOOGLE_GEMINI_BASE_URL"
KEY_VARIABLE = "GEMINI_API_KEY"
ENDPOINT_PLACEHOLDER = "metaharness-model-endpoint"
"""The key a child on the endpoint route holds: Gemini CLI 0.61.0 needs some key under the API-key auth type, and
the endpoint takes none (docs/adapters/gemini.md#credentials)."""

RENDERING: Mapping[str, str] = MappingProxyType(
    {
        "file.read": "read_file",
        "file.write": "write_file",
        "file.edit": "replace",
        "dir.list": "list_directory",
        "search": "grep_search",
        "shell": "run_shell_command",
        "web.read": "web_fetch",
        "task.todo": "write_todos",
        "skill.load": "activate_skill",
        "subagent.spawn": "invoke_agent",
    }
)
"""Gemini CLI 0.61.0's tool for each operation, as its API tool list and its BeforeTool hook's ``tool_name``
name it (docs/adapters/gemini.md#rendering); ``mcp.call`` renders to nothing, since the scratch settings
name no MCP server."""

OAUTH_LOGIN = (
    "a Google sign-in (~/.gemini/oauth_creds.json) is an OAuth login bound to Google's Code Assist service, which no "
    "route metaharness builds can carry; use --credentials api-key with GEMINI_API_KEY, or --credentials none with "
    "--model-endpoint"
)
UPSTREAM = "https://generativelanguage.googleapis.com"


def custody_file(caller_env: Mapping[str, str]) -> str | None:
    """``~/.gemini/.env``, where Gemini CLI itself keeps ``GEMINI_API_KEY``: the loopback custody file."""
    home = caller_env.get("HOME", "")
    return posixpath.join(home, ".gemini", ".env") if home else None


def _dotenv_value(line: str) -> tuple[str, str] | None:
    """``KEY=VALUE`` (an ``export`` prefix and one pair of surrounding quotes dropped), else ``None``."""
    text = line.strip().removeprefix("export ").strip()
    key, equals, value = text.partition("=")
    if not equals or text.startswith("#"):
        return None
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return key.strip(), value


def custody_token(custody: bytes) -> Result[str, Refusal]:
    """The last ``GEMINI_API_KEY=`` of the custody ``.env``, else ``loopback-custody-unreadable``."""
    try:
        lines = custody.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = []
    pairs = [pair for pair in map(_dotenv_value, lines) if pair is not None and pair[0] == KEY_VARIABLE and pair[1]]
    if not pairs:
        return Failure(Refusal("loopback-custody-unreadable", f"the {KIND} custody file holds no {KEY_VARIABLE}"))
    return Success(pairs[-1][1])


def error_body(error_type: str, message: str, code: str | None) -> bytes:
    """The Generative Language API's error body."""
    return compact({"error": {"status": error_type, "message": message, "reason": code}})


LOOPBACK = Loopback(
    upstream=UPSTREAM,
    custody_token=custody_token,
    child_variables=lambda port, placeholder: (
        (BASE_URL_VARIABLE, f"http://127.0.0.1:{port}"), (KEY_VARIABLE, placeholder)),
    error_body=error_body,
    unauthorized=("UNAUTHENTICATED", None),
)
"""The loopback proxy's facts for gemini: the child holds a placeholder key; the proxy attaches the real one as
``x-goog-api-key``, the header the child sent its placeholder in."""


def endpoint_variables(endpoint: str) -> Variables:
    """The endpoint route: ``GOOGLE_GEMINI_BASE_URL`` and the placeholder key (nothing real is sent)."""
    return ((BASE_URL_VARIABLE, endpoint.rstrip("/")), (KEY_VARIABLE, ENDPOINT_PLACEHOLDER))


H2_HOW = ("only the scratch settings.json: the system settings and defaults paths name absent scratch files, and a "
          "work tree holding its own .gemini is refused")
H8_HOW = "BeforeTool hook in the scratch settings.json, hooksConfig.enabled true, no GEMINI_ variable from the caller"


DEFAULT_MODEL = "gemini-2.5-pro"
"""The model a run names when ``--model`` is absent: naming one skips Gemini CLI's auto-router, which would
ask the model route a classification turn of its own first."""
GENERATIVE_METHODS = (":streamGenerateContent", ":generateContent", ":countTokens")


def endpoint_paths(model: str | None) -> tuple[str, ...]:
    """The Generative Language paths a confined route forwards: the run's model's three methods, no other
    model's (``google_web_search`` asks another model, and is refused)."""
    return tuple(f"/v1beta/models/{model or DEFAULT_MODEL}{method}" for method in GENERATIVE_METHODS)


def launch_rows(scratch: str, servers: tuple[str, ...], h2_unavailable: str | None, hooks: str | None) -> tuple[RowText, ...]:
    """Rows H1a, H1b, H2, H5, H8 and H9 of a gemini launch."""
    home = posixpath.join(scratch, "gemini-home")
    return (
        ("H1a", "imposed", f"GEMINI_CLI_HOME={home}: no extensions, no ~/.gemini profile"),
        ("H1b", "imposed", "fresh GEMINI_CLI_HOME"),
        ("H2", "imposed", H2_HOW)
        if h2_unavailable is None
        else ("H2", "unavailable", h2_unavailable),
        ("H5", "imposed", "mcpServers empty in the scratch settings.json"),
        ("H8", "imposed", H8_HOW),
        ("H9", "unavailable", "the version is read from the launch's --version probe"),
    )


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
            "allow-program": "Gemini CLI publishes no run tool metaharness could narrow",
            "effort": "gemini -p has no reasoning-effort flag to carry it",
            "max-turns": "gemini -p takes its turn ceiling from settings, which metaharness does not expose",
            "plugin": "marketplace plugins are resolved for Claude Code only",
            "plugin-dir": "Gemini CLI's extensions are not carried: the scratch GEMINI_CLI_HOME holds none",
            "tool-surface": "the owned surface is served to claude and codex only",
            "catalogue": "the catalogue is served to claude and codex only",
        }
    ),
    not_carried_values=MappingProxyType(
        {("credentials", "operator-login"): OAUTH_LOGIN}
    ),
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
        caller_variables=True, scratch_tmpdir=True, toolchain_variables=False,
        config_home=("GEMINI_CLI_HOME", "gemini-home"),
    ),
    guard=EnvironmentGuard(
        declared_keys_only=False,
        denied_prefixes=("GEMINI_", "GOOGLE_", "CLOUD_SHELL", "DISABLE_", "GIT_"),
        exempt=frozenset({"GEMINI_CLI_HOME", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "GEMINI_CLI_SYSTEM_SETTINGS_PATH"}),
        exempt_from_posture=frozenset({KEY_VARIABLE, BASE_URL_VARIABLE}),
    ),
    credentials=CredentialCarriage(
        operator_login_file=custody_file,
        operator_login_reads_none=False,
        api_key_variables=(KEY_VARIABLE,),
        api_key_flag=False,
        api_key_secret_store=False,
        endpoint_variables=endpoint_variables,
        subscription_token=False,
        login_advice=(
            "write GEMINI_API_KEY=<key> into ~/.gemini/.env under this HOME (Gemini CLI's own place for its key), or "
            "pass --credentials api-key with GEMINI_API_KEY set, or --credentials none --model-endpoint URL for a gateway"
        ),
    ),
    loopback=LOOPBACK,
    hermetic=HermeticShape(
        memory=Memory(shapes=("GEMINI.md",), canary=False, refused_in_scratch=True, nothing_found_suffix=""),
        launch_rows=launch_rows,
        grant_in_words="; Gemini CLI's tools act on that tree (--approval-mode yolo; the hook decides)",
        vendor_ambient=True,
        plugins_from_skills=False,
        no_output_style="Gemini CLI has no output style",
    ),
    confinement=ConfinementShape(
        route_dialect=route_dialect,
        vendor_route=None,
        view_grant="",
        writable=("gemini-home", "tmp", "hook-channel"),
        endpoint_paths=endpoint_paths,
        tools=ToolEntry(
            mechanism="path",
            how="Gemini CLI starts every run_shell_command through the first bash on its PATH, the tools' layer's "
            "entry (its hook's own line runs where the harness is)",
            program="bash",
            runs="/bin/bash",
            form="program",
            kept=("hooks/pretooluse",),
            apart=("gemini-shell-*",),
            own_tmp=LAYER_TMP,
        ),
    ),
    record_source="gemini.stream-json",
    admit_frame=None,
    caller_seam=False,
    witness=WitnessFacts(by_presentation=True),
)
"""The gemini adapter (docs/adapters/gemini.md)."""
