"""``b10x-harness``'s commands (docs/loop.md#command-line), imported once ``--version`` is ruled out. The loop and
its HTTP client are imported only when a command runs, so ``run --help`` (which metaharness reads
before the spawn) stays light.

``run`` parses every declared flag, refuses before start with one reason (``refused`` under
``--json``, exit 1), then drives the loop; exit 0 on ``completed``, 2 on another stop, 1 on a loop
error, 130 on a second signal. ``app-server`` validates the same way and serves the loop over stdio
JSON-RPC (docs/loop-extensions.md).
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import click
from returns.result import Failure, Result, Success

from metaharness.pure.budgets import TOOL_ANSWER_TIMEOUT_MS
from metaharness.pure.loop import budget
from metaharness.pure.loop.approval import needs_approval
from metaharness.pure.loop.catalogue import Publication, publish
from metaharness.pure.loop.hooks import Hook, parse_hooks
from metaharness.pure.loop.instruction import (
    PROJECT_FILES,
    ContextFile,
    Instruction,
    InstructionFacts,
    render_instruction,
)
from metaharness.pure.loop.plan import NOT_BUILT, NOT_BUILT_HEADING, RunFlags, RunPlan, plan_run
from metaharness.pure.loop.record import (
    ContextEntry,
    Finished,
    Rates,
    SessionWritten,
    Started,
    WarningLine,
    encode_line,
    refused_line,
)
from metaharness.pure.loop.skills import Loaded
from metaharness.pure.results import each
from metaharness.pure.wires import anthropic_messages, openai_responses
from metaharness.pure.wires.neutral import Item, Sampling, UserText
from metaharness.shell.bounded_reads import open_regular
from metaharness.shell.loop.approver import AllApprover, Approver, CallerApprover, DenyApprover, PromptApprover
from metaharness.shell.loop.cancel import CancelToken
from metaharness.shell.loop.credentials import CredentialSource, read_credential
from metaharness.shell.loop.extensions import load_extensions
from metaharness.shell.loop.session import SessionFile, load_session, save_session, session_dir, session_id
from metaharness.shell.loop.version import VERSION_FLAGS, print_version, version
from metaharness.shell.parse_output import ClosedAtParse

if TYPE_CHECKING:
    from metaharness.shell.loop.runner import Loop, Recorder

CONTEXT_CAP = 256 * 1024
ENDPOINT_PATHS = {
    openai_responses.WIRE: openai_responses.ENDPOINT_PATH,
    anthropic_messages.WIRE: anthropic_messages.ENDPOINT_PATH,
}
RETRY_WAIT_SCALE = "B10X_HARNESS_TESTING_RETRY_WAIT_SCALE"
"""A hidden testing knob (docs/DEVELOPING.md#timers-in-tests): a non-negative factor every retry wait is
slept at, so end-to-end tests of retries do not wait on the real backoff. The waits the run reports are
the policy's, unscaled."""
NO_TERMINAL = "no terminal to ask; calls above the ceiling will be refused — pass --yes or --approve-up-to"


def _not_built_options() -> list[click.Option]:
    options = []
    for flag in NOT_BUILT:
        if flag == "--substrate-embedded":
            options.append(click.Option([flag], is_flag=True, default=False, help="declared; not built here"))
        else:
            options.append(click.Option([flag], multiple=True, help="declared; not built here"))
    return options


def _answer_version(ctx: click.Context, given: bool) -> None:
    """``-V``/``--version``: declared here so ``--help`` lists it; the entry answers it before parsing."""
    if given:
        print_version()
        ctx.exit(0)


CREDENTIAL_NAMES = (
    "api_key_file", "api_key_env", "api_key_secret", "oauth_token_file", "oauth_token_env", "oauth_token_pointer"
)
"""The credential options ``run`` and ``app-server`` both take (docs/loop.md#credentials), as click names them."""


def _credential_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with the credential options, in the order ``--help`` lists them."""
    options = (
        click.option("--api-key-file", help="API key file, read once"),
        click.option("--api-key-env", help="API key environment variable, read once"),
        click.option("--api-key-secret", help="Secret Service key: the item with service=b10x-harness, name=NAME; read once"),
        click.option("--oauth-token-file", help="OAuth token file, re-read per attempt"),
        click.option("--oauth-token-env", help="OAuth token environment variable"),
        click.option("--oauth-token-pointer", help="RFC 6901 pointer into the OAuth JSON document"),
    )
    for option in reversed(options):
        command = option(command)
    return command


class _LoopGroup(ClosedAtParse, click.Group):
    """The loop's own refusal line and exit for a help that found stdout closed, as its ``--version``
    does (docs/loop.md#loop-exit-codes: refused before start)."""

    def stdout_closed(self) -> int:
        sys.stderr.write("error: stdout was closed before the help was written\n")
        return 1


@click.group(cls=_LoopGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    *VERSION_FLAGS,
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, given: _answer_version(ctx, given),
    help="print the version and exit",
)
def cli() -> None:
    """The b10x loop: one model, one workspace, a published toolset."""


@cli.command(
    "run",
    context_settings={"ignore_unknown_options": False},
    epilog="\b\n" + NOT_BUILT_HEADING + " " + " ".join(NOT_BUILT),
)
@click.option("--input", "input_text", help="first user item, verbatim (may be empty)")
@click.option("--base-url", help="http(s) endpoint base; one trailing / trimmed")
@click.option("--model", help="model name, verbatim")
@click.option("--wire", default="openai-responses", show_default=True, help="openai-responses | anthropic-messages")
@click.option("--workspace", default=".", show_default=True, help="existing directory, canonicalised once")
@click.option("--json", "json_mode", is_flag=True, help="write the record on stdout")
@click.option("--quiet", is_flag=True, help="no plain-mode progress")
@click.option("--execution-path", default="direct", show_default=True, help="direct | metaharness")
@click.option("--context", multiple=True, help="reference file (repeatable)")
@click.option("--no-project-instructions", is_flag=True, help="skip AGENTS.md / CLAUDE.md")
@click.option("--approve", default="auto", show_default=True, help="auto | prompt | deny | all | caller")
@click.option("--approve-up-to", default="low", show_default=True, help="low | medium | high | destructive")
@click.option("--yes", is_flag=True, help="--approve all")
@click.option("--allow-program", multiple=True, help="exact argv[0] run may start (repeatable)")
@click.option("--write-scope", multiple=True, help="GLOB=allowed|partial-only|denied (repeatable)")
@click.option("--scope-announce", default="stated", show_default=True, help="stated | silent")
@_credential_options
@click.option("--temperature", type=float)
@click.option("--top-p", type=float)
@click.option("--reasoning-effort")
@click.option("--max-output-tokens-per-turn", type=int)
@click.option("--max-turns", type=int)
@click.option("--max-output-tokens", type=int)
@click.option("--max-duration-ms", type=int)
@click.option("--prices", help="prices JSON file")
@click.option("--max-cost-microunits", type=int)
@click.option("--no-session", is_flag=True, help="write no session file")
@click.option("--session-dir", help="session directory")
@click.option("--resume", help="session id or latest")
@click.option("--skills-dir", multiple=True, help="directory of <name>/SKILL.md skills (repeatable)")
@click.option("--agents-dir", multiple=True, help="directory of <name>.md agents (repeatable)")
@click.option("--plugin-dir", multiple=True, help="plugin directory: its skills/ and agents/, names qualified (repeatable)")
@click.option("--hooks", help="hooks JSON file: before-call, after-call and stop programs")
@click.pass_context
def run_command(ctx: click.Context, /, **values: Any) -> None:
    """Run the loop once."""
    given = tuple(flag for flag in NOT_BUILT if values.get(flag.lstrip("-").replace("-", "_")) not in (None, (), False))
    flags = RunFlags(
        input=values["input_text"],
        base_url=values["base_url"],
        model=values["model"],
        wire=values["wire"],
        workspace=values["workspace"],
        json=values["json_mode"],
        quiet=values["quiet"],
        execution_path=values["execution_path"],
        context=values["context"],
        no_project_instructions=values["no_project_instructions"],
        approve=values["approve"],
        approve_up_to=values["approve_up_to"],
        yes=values["yes"],
        allow_program=values["allow_program"],
        write_scope=values["write_scope"],
        scope_announce=values["scope_announce"],
        **{name: values[name] for name in CREDENTIAL_NAMES},
        temperature=values["temperature"],
        top_p=values["top_p"],
        reasoning_effort=values["reasoning_effort"],
        max_output_tokens_per_turn=values["max_output_tokens_per_turn"],
        max_turns=values["max_turns"],
        max_output_tokens=values["max_output_tokens"],
        max_duration_ms=values["max_duration_ms"],
        prices=values["prices"],
        max_cost_microunits=values["max_cost_microunits"],
        no_session=values["no_session"],
        session_dir=values["session_dir"],
        resume=values["resume"],
        skills_dir=values["skills_dir"],
        agents_dir=values["agents_dir"],
        plugin_dir=values["plugin_dir"],
        hooks=values["hooks"],
        given_not_built=given,
    )
    ctx.exit(start(flags))


@cli.command("app-server")
@click.option("--base-url", help="http(s) endpoint base; one trailing / trimmed")
@click.option("--model", help="model name, verbatim")
@click.option("--wire", default="openai-responses", show_default=True, help="openai-responses | anthropic-messages")
@_credential_options
@click.option("--max-turns", type=int, help="model turns per turn/start")
@click.option("--max-output-tokens", type=int, help="output tokens per turn/start")
@click.option(
    "--tool-answer-timeout-ms",
    type=int,
    default=TOOL_ANSWER_TIMEOUT_MS,
    show_default=True,
    help="how long a call waits for the client's item/tool/call answer",
)
@click.pass_context
def app_server_command(ctx: click.Context, /, **values: Any) -> None:
    """Serve the loop over one JSON-RPC connection on stdio, the client's dynamic tools its only tools."""
    ctx.exit(serve_app_server(values))


for _option in _not_built_options():
    run_command.params.append(_option)


def _refuse(json_mode: bool, reason: str) -> int:
    from metaharness.shell.loop.runner import stderr_error

    if json_mode:
        sys.stdout.buffer.write(encode_line(refused_line(reason)))
        sys.stdout.buffer.flush()
    stderr_error(reason)
    return 1


def _clock() -> tuple[str, int]:
    """The instruction's clock: ``SOURCE_DATE_EPOCH`` fixes it."""
    fixed = os.environ.get("SOURCE_DATE_EPOCH", "")
    seconds = int(fixed) if fixed.isdigit() else int(time.time())
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ"), seconds


class Prepared(NamedTuple):
    """What a run holds once nothing refused it before start."""

    root: str
    credential: CredentialSource
    contexts: tuple[ContextFile, ...]
    loaded: Loaded
    hooks: tuple[Hook, ...]
    prices: budget.Prices | None
    directory: str | None
    resumed: SessionFile | None
    publication: Publication
    approver: Approver


def _workspace_root(workspace: str) -> Result[str, str]:
    if not os.path.isdir(workspace):
        return Failure(f"--workspace {workspace} is not a directory")
    return Success(os.path.realpath(workspace))


def _credential(plan: RunPlan) -> Result[CredentialSource, str]:
    if plan.credential is None:
        return Success(CredentialSource(None, None))
    return read_credential(plan.credential, os.environ).map(lambda first: CredentialSource(plan.credential, first))


def _context_file(path: str) -> Result[ContextFile, str]:
    if not os.path.isfile(path):
        return Failure(f"--context {path} is not a regular file")
    with open(path, "rb") as handle:
        raw = handle.read(CONTEXT_CAP + 1)
    if len(raw) > CONTEXT_CAP:
        return Failure(f"--context {path} is over the {CONTEXT_CAP} byte bound")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return Failure(f"--context {path} is not UTF-8")
    return Success(ContextFile(path, raw))


def _hooks(path: str | None) -> Result[tuple[Hook, ...], str]:
    if path is None:
        return Success(())
    try:
        with open_regular(path) as handle:  # a FIFO never holds the start: docs/cli.md#bounds-on-what-a-run-reads
            raw = handle.read()
    except OSError as error:
        return Failure(f"--hooks {path} cannot be read: {error.strerror or error}")
    return parse_hooks(path, raw)


def _project_files(root: str) -> tuple[tuple[str, str], ...]:
    found = []
    for name in PROJECT_FILES:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                found.append((name, handle.read().decode("utf-8", errors="replace")))
    return tuple(found)


def _approver(plan: RunPlan, cancel: CancelToken, needs_asking: bool) -> Result[Approver, str]:
    mode = plan.approve
    if mode == "all":
        return Success(AllApprover())
    if mode == "deny":
        return Success(DenyApprover(plan.ceiling))
    if mode == "caller":
        return Success(CallerApprover(sys.stdin.buffer, cancel))
    terminal = None
    if mode == "prompt" or (sys.stdin.isatty() and sys.stderr.isatty()):
        try:
            terminal = (open("/dev/tty", encoding="utf-8"), open("/dev/tty", "w", encoding="utf-8"))  # noqa: SIM115
        except OSError:
            terminal = None
    if terminal is not None:
        return Success(PromptApprover(terminal[0], terminal[1], cancel))
    if mode == "prompt":
        return Failure("--approve prompt needs a terminal, and /dev/tty cannot be opened")
    if needs_asking:
        sys.stderr.write(NO_TERMINAL + "\n")
        sys.stderr.flush()
    return Success(DenyApprover(plan.ceiling))


def _prices(plan: RunPlan) -> Result[budget.Prices | None, str]:
    path = plan.flags.prices
    if path is None:
        if plan.flags.max_cost_microunits is not None:
            return Failure("--max-cost-microunits needs --prices")
        return Success(None)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        return Failure(f"--prices {path} cannot be read: {error.strerror}")
    parsed = budget.parse_prices(raw, path)
    if isinstance(parsed, Failure):
        return parsed
    prices = parsed.unwrap()
    if plan.flags.max_cost_microunits is not None and plan.model not in prices.models:
        return Failure(f"--max-cost-microunits needs a price for `{plan.model}` in --prices {path}")
    return Success(prices)


def _resolve_session(plan: RunPlan, root: str) -> Result[tuple[str | None, SessionFile | None], str]:
    if plan.flags.no_session:
        return Success((None, None))
    directory = session_dir(plan.flags.session_dir, os.environ)
    if isinstance(directory, Failure):
        return directory
    if plan.flags.resume is None:
        return Success((directory.unwrap(), None))
    loaded = load_session(directory.unwrap(), plan.flags.resume)
    if isinstance(loaded, Failure):
        return loaded
    session = loaded.unwrap()
    if session.wire != plan.wire:
        return Failure(f"session {session.id} was recorded on `{session.wire}`; pass --wire {session.wire} to resume it")
    if session.workspace != root:
        sys.stderr.write(f"session {session.id} was recorded in {session.workspace}, not {root}\n")
    return Success((directory.unwrap(), session))


def _prepare(flags: RunFlags, plan: RunPlan, cancel: CancelToken) -> Result[Prepared, str]:
    """Every check before start, in order; the first refusal is the run's one reason."""
    return Result.do(
        Prepared(root, credential, contexts, loaded, hooks, prices, *session, publication, approver)
        for root in _workspace_root(flags.workspace)
        for credential in _credential(plan)
        for contexts in each(flags.context, _context_file)
        for loaded in load_extensions(flags.skills_dir, flags.agents_dir, flags.plugin_dir)
        for hooks in _hooks(flags.hooks)
        for prices in _prices(plan)
        for session in _resolve_session(plan, root)
        for publication in Success(publish(os.access(root, os.W_OK), plan.programs, tuple(s.name for s in loaded.skills)))
        for approver in _approver(plan, cancel, any(needs_approval(e.risk, plan.ceiling) for e in publication.published))
    )


def _retry_wait_scale(value: str | None) -> float:
    """The testing knob's factor; 1 (the real waits) when it is unset or not a non-negative number."""
    try:
        scale = float(value) if value is not None else 1.0
    except ValueError:
        return 1.0
    return scale if scale >= 0 else 1.0


def start(flags: RunFlags) -> int:
    """Refuse before start or run the loop; the exit code (docs/loop.md#loop-exit-codes)."""
    from metaharness.shell.loop.runner import Loop, LoopError, Recorder, stderr_error

    started_at = time.monotonic()
    start_nanos = time.time_ns()
    planned: Result[RunPlan, str] = plan_run(flags)
    if isinstance(planned, Failure):
        return _refuse(flags.json, planned.failure())
    plan = planned.unwrap()
    cancel = CancelToken(flags.max_duration_ms, started_at, _retry_wait_scale(os.environ.get(RETRY_WAIT_SCALE)))
    cancel.install()
    prepared = _prepare(flags, plan, cancel)
    if isinstance(prepared, Failure):
        return _refuse(flags.json, prepared.failure())
    root, credential, contexts, loaded, hooks, prices, directory, resumed, publication, approver = prepared.unwrap()
    instruction = _instruction(flags, plan, root, contexts, loaded, publication)
    recorder = Recorder(flags.json, flags.quiet, sys.stdout.buffer, sys.stderr)
    _announce(recorder.write, plan, root, publication, loaded, instruction.manifest, prices)
    items: list[Item] = list(resumed.items) if resumed is not None else []
    items.append(UserText(plan.input))
    ident = resumed.id if resumed is not None else session_id(start_nanos, os.getpid())
    loop = Loop(
        wire=plan.wire,
        model=plan.model,
        instruction=instruction.text,
        publication=publication,
        scope_rules=plan.scope_rules,
        root=root,
        approver=approver,
        ceiling=plan.ceiling,
        sampling=Sampling(flags.temperature, flags.top_p, flags.reasoning_effort, flags.max_output_tokens_per_turn),
        limits=budget.Limits(
            flags.max_turns, flags.max_output_tokens, flags.max_duration_ms, flags.max_cost_microunits
        ),
        prices=prices,
        items=items,
        session_key=f"b10x-{os.getpid():x}-{start_nanos:x}",
        url=plan.base_url + ENDPOINT_PATHS[plan.wire],
        user_agent=f"b10x-harness/{version()}",
        credential=credential,
        cancel=cancel,
        recorder=recorder,
        skills=loaded.skills,
        hooks=hooks,
    )
    try:
        stop = loop.run()
    except LoopError as error:
        _save(directory, ident, plan, root, loop, resumed, recorder, start_nanos)
        stderr_error(str(error))
        return 1
    recorder.write(Finished(stop=stop, turns=loop.spent.turns))
    _save(directory, ident, plan, root, loop, resumed, recorder, start_nanos)
    return 0 if isinstance(stop, budget.Completed) else 2



def _instruction(
    flags: RunFlags, plan: RunPlan, root: str, contexts: tuple[ContextFile, ...], loaded: Loaded, publication: Publication
) -> Instruction:
    """The loop's instruction for this run, captured now (docs/loop.md#standing-instruction)."""
    captured_at, _ = _clock()
    return render_instruction(
        InstructionFacts(
            tools=publication.names(),
            programs=plan.programs,
            scope_rules=plan.scope_rules,
            scope_stated=flags.scope_announce == "stated",
            via_metaharness=flags.execution_path == "metaharness",
            context_files=contexts,
            project_files=() if flags.no_project_instructions else _project_files(root),
            workspace=root,
            platform=sys.platform,
            captured_at=captured_at,
            skills=loaded.skills,
        )
    )


def _announce(
    write: Callable[[Any], None], plan: RunPlan, root: str, publication: Publication, loaded: Loaded,
    manifest: tuple[ContextEntry, ...], prices: budget.Prices | None,
) -> None:  # fmt: skip
    """The record's opening lines: ``started``, the price table's ``rates`` (and ``unpriced-model``) and a
    ``skill-shadowed`` warning for each shadowed skill (docs/loop.md#the-record)."""
    write(
        Started(
            model=plan.model,
            workspace=root,
            published_tools=publication.names(),
            operations=tuple(e.operation for e in publication.published),
            withheld=publication.withheld,
            skills=tuple(skill.name for skill in loaded.skills),
            agents=tuple(agent.name for agent in loaded.agents),
            profiles=(),
            context=manifest,
            toolchains=(),
            mcp=(),
            credential_source=plan.credential.record_name if plan.credential is not None else "none",
        )
    )
    if prices is not None:
        write(Rates(source=prices.source, as_of=prices.as_of))
        if plan.model not in prices.models:
            write(WarningLine(code="unpriced-model", message=f"no price is known for `{plan.model}`; no cost is reported"))
    for message in loaded.shadowed:
        write(WarningLine(code="skill-shadowed", message=message))

def _save(
    directory: str | None,
    ident: str,
    plan: RunPlan,
    root: str,
    loop: Loop,
    resumed: SessionFile | None,
    recorder: Recorder,
    start_nanos: int,
) -> None:
    if directory is None:
        return
    now = int(time.time())
    session = SessionFile(
        version=1,
        id=ident,
        wire=plan.wire,
        model=plan.model,
        base_url=plan.base_url,
        workspace=root,
        created_unix=resumed.created_unix if resumed is not None else start_nanos // 1_000_000_000,
        updated_unix=now,
        turns=(resumed.turns if resumed is not None else 0) + loop.spent.turns,
        items=tuple(loop.items),
        usage=(resumed.usage if resumed is not None else ()) + tuple(loop.usages),
    )
    try:
        path = save_session(directory, session)
    except OSError as error:
        sys.stderr.write(f"session {ident} could not be written: {error.strerror}\n")
        return
    if recorder.json_mode:
        recorder.write(SessionWritten(id=ident, path=path))


def serve_app_server(values: dict[str, Any]) -> int:
    """Validate like ``run`` (endpoint, model, wire, credentials, bounds), read the credential, then serve.
    A served connection ends the process at once: the reader thread may still hold stdin, which an
    orderly interpreter shutdown would wait on."""
    if values["tool_answer_timeout_ms"] < 1:
        return _refuse(False, f"--tool-answer-timeout-ms must be at least 1; got {values['tool_answer_timeout_ms']}")
    flags = _app_server_flags(values)
    from metaharness.shell.loop.app_server import Connection, Server, TurnCancel

    planned = plan_run(flags)
    if isinstance(planned, Failure):
        return _refuse(False, planned.failure())
    plan = planned.unwrap()
    first = None
    if plan.credential is not None:
        read = read_credential(plan.credential, os.environ)
        if isinstance(read, Failure):
            return _refuse(False, read.failure())
        first = read.unwrap()
    cancel = TurnCancel()
    connection = Connection(version(), sys.stdout.buffer, cancel, values["tool_answer_timeout_ms"])
    captured_at, _ = _clock()
    server = Server(
        wire=plan.wire,
        model=plan.model,
        url=plan.base_url + ENDPOINT_PATHS[plan.wire],
        user_agent=f"b10x-harness/{version()}",
        credential=CredentialSource(plan.credential, first),
        limits=budget.Limits(flags.max_turns, flags.max_output_tokens, None, None),
        captured_at=captured_at,
        connection=connection,
    )
    del first
    code = server.serve(sys.stdin.buffer)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)



def _app_server_flags(values: dict[str, Any]) -> RunFlags:
    """The flags the app server plans under: ``run``'s endpoint, model, wire, credentials and bounds, every
    call approved (the client decides), no session and no project instructions (docs/loop-extensions.md#the-app-server-bridge-b10x-harness-app-server)."""
    return RunFlags(
        input="",
        base_url=values["base_url"],
        model=values["model"],
        wire=values["wire"],
        workspace=".",
        json=False,
        quiet=True,
        execution_path="direct",
        context=(),
        no_project_instructions=True,
        approve="all",
        approve_up_to="destructive",
        yes=True,
        allow_program=(),
        write_scope=(),
        scope_announce="stated",
        **{name: values[name] for name in CREDENTIAL_NAMES},
        temperature=None,
        top_p=None,
        reasoning_effort=None,
        max_output_tokens_per_turn=None,
        max_turns=values["max_turns"],
        max_output_tokens=values["max_output_tokens"],
        max_duration_ms=None,
        prices=None,
        max_cost_microunits=None,
        no_session=True,
        session_dir=None,
        resume=None,
        given_not_built=(),
    )

def run_cli(args: list[str]) -> int:
    """Parse ``args`` and run; parse errors are exit 1 with ``error: <reason>`` (and ``refused`` under ``--json``)."""
    try:
        code = cli.main(args=args, prog_name="b10x-harness", standalone_mode=False)
    except click.exceptions.Exit as done:
        code = done.exit_code
    except click.ClickException as error:
        code = _refuse("--json" in args, error.format_message())
    except click.exceptions.Abort:
        code = 130
    return code if isinstance(code, int) else 0
