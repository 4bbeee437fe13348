"""The adapter contract: everything a shared module needs to know about one kind, as one frozen value.

Each kind defines its ``Adapter`` in ``pure/<kind>/adapter.py``, importing its own stages (its replay,
its frame check) at the top; ``metaharness.pure.adapters`` collects them, and the shared modules
(options, environment, hermetic, capabilities, loopback, confinement, projection, replay) look a kind
up there instead of naming it. A kind's stages never import its adapter module or the registry: what
they share with it (program, pins, API paths, tool names) is the leaf ``pure/<kind>/vendor.py``, so the
import graph has no cycle (``tests/test_import_graph.py``). See ``docs/DEVELOPING.md`` "Adding a fourth kind".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

import msgspec
from returns.result import Result

from metaharness.pure.kind import Kind
from metaharness.pure.modes import Credentials, DecisionMode, HermeticMode
from metaharness.pure.refusal import Refusal

if TYPE_CHECKING:
    from metaharness.pure.frames import Frame

Status = Literal["delivered", "unverified", "absent"]
Variables = tuple[tuple[str, str], ...]
RowText = tuple[str, Literal["imposed", "declared", "unavailable"], str]
"""A hermetic row as the kind attests it: row id, state, the how or the why."""

MCP_CALL_TEMPLATE = "mcp__<server>__<tool>"
"""The vendor tool name ``mcp.call`` renders to on the kinds that carry MCP servers."""

VENDOR_SCOPE_OPTIONS = ("write-scope", "scope-announce")
VENDOR_SCOPE = "a vendor arm's scope travels sealed in Frame.subjects, and a flag would be a second, unsealed copy of it"
"""Why a vendor arm does not carry the scope options."""
LOOP_ONLY_OPTIONS = (
    "hooks",
    "driver",
    "toolchain",
    "prices",
    "substrate",
    "substrate-embedded",
    "cgroup-root",
    "model-wire",
    "subscription-token-file",
    "subscription-token-env",
    "subscription-token-pointer",
    "api-key-secret",
)
LOOP_ONLY = "it reaches the b10x loop only"
"""Why a vendor arm does not carry the options only the b10x loop reads."""
VENDOR_NOT_CARRIED: Mapping[str, str] = MappingProxyType(
    {**dict.fromkeys(VENDOR_SCOPE_OPTIONS, VENDOR_SCOPE), **dict.fromkeys(LOOP_ONLY_OPTIONS, LOOP_ONLY)}
)
"""What no vendor arm carries, and why: the scope options, then the options only the b10x loop reads."""


def custody_document(custody: bytes) -> object:
    """A loopback custody file's JSON document, or ``None`` when it is no JSON (the kind's custody reader then
    refuses it ``loopback-custody-unreadable``)."""
    try:
        document: object = msgspec.json.decode(custody)
    except (msgspec.DecodeError, RecursionError):
        return None
    return document


class DescriptorFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What ``capabilities <KIND>`` states beside the pins: the adapter's class, its tiers and
    decision modes, and the vendor tool each operation renders to (absent: none)."""

    adapter_class: Literal["harness", "direct_provider"]
    tiers: Mapping[str, Status]
    decision_modes: Mapping[str, Status]
    rendering: Mapping[str, str]
    honoured_commands: frozenset[str]
    """The ``metaharness.command/1`` commands the kind's live loop honours; ``capabilities`` states every
    other command as refused (docs/adapters/common.md#descriptor)."""


class RunRules(msgspec.Struct, frozen=True, kw_only=True):
    """The kind's part in ``run``'s option pairing (docs/cli.md): which options it needs, and which
    pairings it refuses. A message is the refusal's text; ``None`` means the rule does not apply."""

    frame_required: str | None
    """``--decisions frame`` needs ``--frame`` (nothing else would decide)."""
    prompt_required: bool
    model_endpoint_required: str | None
    model_required: str | None
    endpoint_route: bool
    """``--model-endpoint`` is a gateway root that replaces the vendor's API (so it pairs with
    ``--credentials none`` or ``loopback``, and ``--catalogue`` with the owned surface); otherwise any
    ``http(s)`` URL the kind talks to itself."""
    allow_program_needs_owned_surface: bool
    owned_surface_needs_catalogue: bool
    default_decisions: DecisionMode = "frame"
    """``--decisions`` when the run leaves it out (docs/cli.md#run): a kind that does not carry ``frame`` names its own."""
    default_credentials: Credentials = "operator-login"
    """``--credentials`` when the run leaves it out (docs/cli.md#run)."""


class EnvironmentFloor(msgspec.Struct, frozen=True, kw_only=True):
    """What the child's environment is built from beside ``PATH`` (docs/hermetic.md): the caller's
    locale and identity variables, a scratch ``TMPDIR``, the toolchain variables under ``--toolchain``,
    and the config-home variable with its directory under the scratch root."""

    caller_variables: bool
    scratch_tmpdir: bool
    toolchain_variables: bool
    config_home: tuple[str, str]


class EnvironmentGuard(msgspec.Struct, frozen=True, kw_only=True):
    """The ``denied-environment`` guard: ``declared_keys_only`` admits exactly the keys the declaration
    puts there; otherwise a key is denied by prefix or name unless exempt (always, or when the
    credential posture put it there)."""

    declared_keys_only: bool
    hook_variables: frozenset[str] = frozenset()
    """The variables that make the vendor skip its hooks: row H8, denied in every vendor child."""
    denied_prefixes: tuple[str, ...] = ()
    denied_names: frozenset[str] = frozenset()
    exempt: frozenset[str] = frozenset()
    exempt_from_posture: frozenset[str] = frozenset()


class CredentialCarriage(msgspec.Struct, frozen=True, kw_only=True):
    """How the kind carries each ``--credentials`` mode (docs/hermetic.md "Credentials")."""

    operator_login_file: Callable[[Mapping[str, str]], str | None]
    """The caller's credential file under operator-login, or ``None`` when none can be named."""
    operator_login_reads_none: bool
    """operator-login means no credential at all (the kind reads its own)."""
    api_key_variables: tuple[str, ...]
    api_key_flag: bool
    """The key variable's name is also handed over as ``--api-key-env NAME``."""
    api_key_secret_store: bool
    """``--api-key-secret`` names a key the kind reads from the secret store."""
    endpoint_variables: Callable[[str], Variables] | None
    """Under ``--credentials none``, the variables pointing the child at ``--model-endpoint``."""
    subscription_token: bool
    """``--subscription-token-*`` hand the kind a subscription token."""
    login_advice: str = ""
    """What a person does to create the operator-login file, said by every refusal that misses it."""


class Loopback(msgspec.Struct, frozen=True, kw_only=True):
    """The loopback proxy's vendor facts: the default upstream, the custody file's token, the child's
    variables, and the shape of the proxy's own error bodies."""

    upstream: str
    custody_token: Callable[[bytes], Result[str, Refusal]]
    child_variables: Callable[[str, str], Variables]
    """(port, placeholder) → the variables pointing the child at the proxy."""
    error_body: Callable[[str, str, str | None], bytes]
    """(type, message, code) → the vendor's error body."""
    unauthorized: tuple[str, str | None]
    """The error type and code of the proxy's own 401."""


class Memory(msgspec.Struct, frozen=True, kw_only=True):
    """Row H11 for the kind: the shapes the ancestor walk looks for, whether hits are held to the
    version's memory canary (only loaded shapes count), whether a hit refuses a scratch run, and what
    an empty walk adds."""

    shapes: tuple[str, ...]
    canary: bool
    refused_in_scratch: bool
    nothing_found_suffix: str


class VendorRoute(msgspec.Struct, frozen=True, kw_only=True):
    """How a confined child reaches the vendor's API through the bridge (docs/confinement.md): the API's
    root, the wire's own request paths, the variable that points the child at the bridge and the path
    the bridge's URL ends in, and whether operator-login is routable only when the login file holds an
    API key."""

    upstream: str
    wire_paths: tuple[str, ...]
    base_url_variable: str
    base_url_path: str
    login_needs_api_key: bool


class ToolEntry(msgspec.Struct, frozen=True, kw_only=True):
    """How the tools a kind can start enter the inner layer (docs/confinement.md#two-layers), verified
    against the pinned binary: ``entry``, the harness starts every tool through the program the
    environment variable ``variable`` names (metaharness's tools' layer), handed the command line as
    one argument (``form`` ``shell-line``) or the program and its arguments (``argv``); ``path``, the
    harness starts every tool through the first ``program`` on its PATH, so the entry stands in for it
    in a folder put first on the harness's PATH and runs the real one (``runs``; ``None``: the
    substrate's ``bwrap``) inside the layer with the arguments it was handed (``form`` ``program``);
    ``unavailable``, they cannot be put there. ``how`` is row H14's words (why, when unavailable);
    ``masked``, the names in the shared TMPDIR the harness keeps its own sockets in, covered by an empty
    tmpfs in the tools' layer; ``kept``, the scratch-relative programs the harness starts through the
    same program (its hook, as ``<program> -c '<path>'``), which run where the harness is; ``reads``,
    the scratch-relative folders of the harness's own the layer binds read-only (codex's sandbox helper);
    ``covered``, globs below the program's ``node_modules`` naming a fallback of the vendor's own that
    would start tools beside the layer (codex's bundled ``bwrap``), each covered in the view by an empty
    device; ``apart``, folders below the shared TMPDIR (``*`` in the name) the harness makes for one tool and
    reads after it exits (gemini's ``gemini-shell-*``, holding ``bgpids.tmp``): the tools' layer then has a
    TMPDIR of its own, the scratch-relative ``own_tmp`` bound at the shared one's path, and an empty folder
    of its own in place of each such folder, so no tool, however many run at once, reaches the harness's."""

    mechanism: Literal["entry", "path", "unavailable"]
    how: str
    variable: str | None = None
    form: Literal["shell-line", "argv", "program", "bwrap"] = "shell-line"
    masked: tuple[str, ...] = ()
    program: str | None = None
    runs: str | None = None
    kept: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    covered: tuple[str, ...] = ()
    apart: tuple[str, ...] = ()
    own_tmp: str | None = None


class ConfinementShape(msgspec.Struct, frozen=True, kw_only=True):
    """The kind under ``--confine``: its vendor route (``None``: the kind talks to its own
    ``--model-endpoint``), what the view adds to row H7's grant, the scratch directories besides
    ``work`` that are writable in the view, and how its tools enter the inner layer."""

    vendor_route: VendorRoute | None
    view_grant: str
    writable: tuple[str, ...]
    tools: ToolEntry
    route_dialect: Callable[[str], Loopback] | None
    """Whose API a confined route speaks, given the route's first path: the ``Loopback`` facts the route
    proxy's own answers take their shape from; ``None``: the kind has no confined model route
    (docs/confinement.md)."""
    endpoint_paths: Callable[[str | None], tuple[str, ...]] | None = None
    """On the endpoint route of a kind without a vendor route: (``--model``) → the wire's own request paths
    below the endpoint, when they name the model (Gemini CLI's Generative Language methods); ``None``: the
    Messages or Responses path ``--model-wire`` names."""


class HermeticShape(msgspec.Struct, frozen=True, kw_only=True):
    """The kind's rows of the attestation and what their verdicts read (docs/hermetic.md)."""

    memory: Memory
    launch_rows: Callable[[str, tuple[str, ...], str | None, str | None], tuple[RowText, ...]]
    """(scratch, MCP servers, why H2 is unavailable, ``--hooks``) → rows H1a, H1b, H2, H5, H8, H9."""
    grant_in_words: str
    """What the child can do to an operator's tree it runs in (row H7's why)."""
    vendor_ambient: bool
    """The vendor's system prompt carries the git status and the network is not isolated."""
    plugins_from_skills: bool
    """Row H1a is read from the skills and agents the record names (else from its plugin list)."""
    no_output_style: str | None
    """Why the kind has no output style (row H1b is then ok), or ``None`` when its record states one."""


class ReplayRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What ``replay`` hands a kind's pure replay (docs/cli.md ``replay``)."""

    run_id: str = "replay"
    decisions: DecisionMode = "observe"
    frame: Frame | None = None
    hermetic: HermeticMode = "off"
    harness_version: str | None = None
    model: str | None = None
    transcript_path: str

    @property
    def attested_decisions(self) -> DecisionMode:
        """The mode the replayed stream attests: nothing answers an ask offline, so ``ask`` reads as ``observe``."""
        return "frame" if self.decisions == "frame" else "observe"


class Replayed(msgspec.Struct, frozen=True):
    """A replay's stream, its closing reason and the caller-seam lines (empty on a kind without one)."""

    stream: bytes
    reason: str
    seam_lines: bytes


class SeamAnswer(msgspec.Struct, frozen=True):
    """A caller-seam line a replay answered with (``replay --answers``), beside the event lines it yields."""

    line: bytes


ReplayOutput = bytes | SeamAnswer
"""What a kind's replay yields as it reads: an event line (``\n`` included), or a seam answer."""


class WitnessFacts(msgspec.Struct, frozen=True):
    """How a kind's stream records the calls the model emitted (docs/decisions.md#the-route-witness):
    ``hosts`` are code-mode hosts whose nested calls reach the seam under ids the model never sees;
    ``names`` maps an emitted tool name to the name the stream records; ``fields`` lists, for an
    emitted name, the (emitted field, recorded field) pairs that must agree (``""``: the whole emitted
    input) instead of the whole input; ``unasked`` are tools the kind runs undecided by design (the frame
    must admit them), which need only a ``tool.requested``; ``by_presentation``: the kind's seam carries no call
    id, so an emitted call is filed under the stream's call of the same name and input, not by its own id."""

    hosts: frozenset[str] = frozenset()
    unasked: frozenset[str] = frozenset()
    names: Mapping[str, str] = msgspec.field(default_factory=dict)
    fields: Mapping[str, tuple[tuple[str, str], ...]] = msgspec.field(default_factory=dict)
    by_presentation: bool = False


class Adapter(msgspec.Struct, frozen=True, kw_only=True):
    """One kind, as every shared module sees it."""

    kind: Kind
    program: str
    """The binary the spawn runs, resolved on the child's PATH (``doctor`` names it too)."""
    pins: tuple[str, ...]
    descriptor: DescriptorFacts
    not_carried: Mapping[str, str]
    """Option (given, whatever its value) → the fixed reason the kind does not carry it."""
    not_carried_values: Mapping[tuple[str, str], str]
    """(option, value) → the reason the kind does not carry that value."""
    run_rules: RunRules
    floor: EnvironmentFloor
    guard: EnvironmentGuard
    credentials: CredentialCarriage
    loopback: Loopback | None
    hermetic: HermeticShape
    confinement: ConfinementShape
    record_source: str
    """The vendor format ``project --from KIND`` names as the document's source."""
    admit_frame: Callable[[Frame], Result[Frame, Refusal]] | None
    """The kind's own check of a loaded frame, run after the frame file's."""
    caller_seam: bool
    """``replay --answers`` writes the caller-seam lines the replay produced."""
    witness: WitnessFacts = msgspec.field(default_factory=lambda: WitnessFacts())
    """How the route witness matches the model's calls with the stream's (docs/decisions.md#the-route-witness)."""

    def value_not_carried(self, option: str, value: str) -> str | None:
        """Why the kind does not carry ``--<option> <value>``, or ``None`` when it does: its own
        ``not_carried_values``, and ``--credentials loopback`` on a kind without ``Loopback`` facts
        (docs/cli.md#run)."""
        reason = self.not_carried_values.get((option, value))
        if reason is None and (option, value) == ("credentials", "loopback") and self.loopback is None:
            return "it has no loopback credential proxy"
        return reason
