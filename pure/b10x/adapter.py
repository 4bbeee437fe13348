"""The b10x loop as the shared modules see it: its pin, descriptor, carriage, environment,
credentials, hermetic rows, frame check and replay (``metaharness.pure.adapter``)."""

from __future__ import annotations

from types import MappingProxyType

from metaharness.pure.adapter import (
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
    WitnessFacts,
)
from metaharness.pure.b10x.admissibility import check_frame_admissible
from metaharness.pure.b10x.vendor import HONOURED_COMMANDS, KIND, PIN, PROGRAM, RENDERING
from metaharness.pure.claude.adapter import LOOPBACK as MESSAGES
from metaharness.pure.codex.adapter import LOOPBACK as RESPONSES

FRAME_REQUIRED = (
    "--decisions frame (the default) without --frame on b10x: with nothing to decide from, every write "
    "would be refused — pass --decisions observe for the arm that decides nothing, or name a frame"
)
PLUGINS_ELSEWHERE = "marketplace plugins are resolved for Claude Code only"


def launch_rows(scratch: str, servers: tuple[str, ...], h2_unavailable: str | None, hooks: str | None) -> tuple[RowText, ...]:
    """Rows H1a, H2, H5, H8 and H9 of a b10x launch (the loop has no output style: no H1b)."""
    named = f"hooks named by --hooks {hooks}" if hooks is not None else "no hooks"
    return (
        ("H1a", "imposed", "plugins arrive only as named --plugin-dir copies"),
        ("H2", "imposed", f"XDG_CONFIG_HOME={scratch}/config holds no profile"),
        ("H5", "imposed", "no --mcp-profile; mcp_servers stated []"),
        ("H8", "imposed", f"{named}; no ambient discovery"),
        ("H9", "unavailable", "the version is read from the launch's --version probe"),
    )


def route_dialect(first_path: str) -> Loopback:
    """Whose API the loop's route speaks: the wire its first path is (Messages: claude's facts; Responses:
    codex's), so the route proxy's own answers are in the shape the loop's wire reads."""
    return MESSAGES if first_path.endswith("/messages") else RESPONSES


ADAPTER = Adapter(
    kind=KIND,
    program=PROGRAM,
    pins=(PIN,),
    descriptor=DescriptorFacts(
        adapter_class="direct_provider",
        tiers={"registration": "unverified", "call": "unverified", "turn": "unverified", "kill": "unverified"},
        decision_modes={"frame": "delivered", "ask": "unverified", "observe": "delivered"},
        rendering=RENDERING,
        honoured_commands=HONOURED_COMMANDS,
    ),
    not_carried=MappingProxyType(
        {
            "effort": "the b10x launch carries no effort setting",
            "plugin": PLUGINS_ELSEWHERE,
            "catalogue": "on this arm the loop's published toolset is the policy",
        }
    ),
    not_carried_values=MappingProxyType(
        {
            ("tool-surface", "owned"): "the loop publishes its own toolset",
            ("credentials", "loopback"): "the loop reads its credential itself",
        }
    ),
    run_rules=RunRules(
        frame_required=FRAME_REQUIRED,
        prompt_required=False,
        model_endpoint_required="b10x needs --model-endpoint URL: the loop talks to the model provider itself",
        model_required=None,
        endpoint_route=False,
        allow_program_needs_owned_surface=False,
        owned_surface_needs_catalogue=False,
    ),
    floor=EnvironmentFloor(
        caller_variables=False, scratch_tmpdir=False, toolchain_variables=True, config_home=("XDG_CONFIG_HOME", "config")
    ),
    guard=EnvironmentGuard(declared_keys_only=True),
    credentials=CredentialCarriage(
        operator_login_file=lambda caller_env: None,
        operator_login_reads_none=True,
        api_key_variables=("OPENAI_API_KEY",),
        api_key_flag=True,
        api_key_secret_store=True,
        endpoint_variables=None,
        subscription_token=True,
    ),
    loopback=None,
    hermetic=HermeticShape(
        memory=Memory(
            shapes=("CLAUDE.md", "AGENTS.md"),
            canary=False,
            refused_in_scratch=False,
            nothing_found_suffix="; HOME is also absent from the child",
        ),
        launch_rows=launch_rows,
        grant_in_words="",
        vendor_ambient=False,
        plugins_from_skills=True,
        no_output_style="the loop has no output style",
    ),
    confinement=ConfinementShape(
        route_dialect=route_dialect,
        vendor_route=None,
        view_grant="",
        writable=("config",),
        tools=ToolEntry(
            mechanism="entry",
            variable="B10X_HARNESS_RUN_THROUGH",
            form="argv",
            how="B10X_HARNESS_RUN_THROUGH starts every program of the loop's run tool in the tools' layer",
        ),
    ),
    record_source="b10x-harness.record",
    admit_frame=check_frame_admissible,
    caller_seam=True,
    witness=WitnessFacts(unasked=frozenset({"file_read", "dir_list", "search", "find", "skill"})),
)
"""The b10x adapter (docs/adapters/b10x.md)."""
