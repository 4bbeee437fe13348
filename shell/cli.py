"""The ``metaharness`` console script: eight verbs, their options, and the refusal line (docs/cli.md).

Each verb parses its options with click and hands off to one function, imported only when that verb
runs (so ``capabilities`` starts without the adapters, the wires or an HTTP client); every refusal is the one
stderr line ``metaharness: <code>: <message>`` with exit 2, a parse error included (code ``usage``,
no usage dump), and any unexpected exception is turned into such a line rather than a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click
from click.core import ParameterSource

from metaharness.pure.command_words import WRITE_SCOPES, split_command_words
from metaharness.pure.kind import KINDS, Kind
from metaharness.pure.modes import HERMETIC_MODES
from metaharness.pure.refusal import Refusal
from metaharness.shell.parse_output import ClosedAtParse
from metaharness.shell.refusals import refuse
from metaharness.shell.run_signals import release_signals

if TYPE_CHECKING:
    from metaharness.pure.modes import Credentials

AUDIT_NOT_BUILT = Refusal(
    "audit-not-built",
    "audit is not built in this milestone: it needs the launch facts a transcript metaharness did not "
    "launch cannot carry (the planned cwd, the declared credentials, the imposed rows). It is declared "
    "here so the verb surface does not change when it arrives",
)

INTERRUPTED = Refusal("signalled", "SIGINT arrived before metaharness finished")
OUTPUT_CLOSED = Refusal("stdout-closed", "stdout's reader closed it before the verb's output was written whole, so the rest was lost")

_KIND = click.Choice(KINDS)
_CONTEXT = {"help_option_names": ["-h", "--help"]}


class _WriteScope(click.ParamType[tuple[str, str], Any]):
    """``GLOB=SCOPE`` with SCOPE one of ``allowed``, ``partial-only``, ``denied`` (docs/cli.md#run)."""

    name = "GLOB=SCOPE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        glob, equals, scope = str(value).rpartition("=")
        if not equals or not glob or scope not in WRITE_SCOPES:
            self.fail(f"{value!r} is not GLOB=SCOPE with SCOPE one of {', '.join(WRITE_SCOPES)}", param, ctx)
        return (glob, scope)


class _Duration(click.ParamType[float, Any]):
    """Seconds (``600``) or a number with a unit (``90s``, ``10m``, ``1h``), above zero."""

    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from returns.result import Failure

        from metaharness.pure.duration import parse_duration

        if isinstance(value, float):
            return value
        parsed = parse_duration(str(value))
        if isinstance(parsed, Failure):
            self.fail(parsed.failure(), param, ctx)
        return parsed.unwrap()


class _Deadline(_Duration):
    """A ``--decision-deadline``: a duration of at most ``MAX_DECISION_DEADLINE_S`` (docs/decisions.md#deadlines)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from metaharness.pure.budgets import MAX_DECISION_DEADLINE_S

        seconds = super().convert(value, param, ctx)
        if seconds > MAX_DECISION_DEADLINE_S:
            self.fail(f"{value!r} is past the longest decision deadline, {MAX_DECISION_DEADLINE_S}s (a 600s hook budget)",
                      param, ctx)  # fmt: skip
        return seconds


class _MarketplacePlugin(click.ParamType[str, Any]):
    """``REPO@NAME@PIN``: exactly three non-empty segments (docs/cli.md#run)."""

    name = "REPO@NAME@PIN"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        segments = str(value).split("@")
        if len(segments) != 3 or not all(segments):
            self.fail(f"{value!r} is not REPO@NAME@PIN, exactly three non-empty segments", param, ctx)
        return str(value)


class _TrailingWordsCommand(click.Command):
    """A verb whose words after ``--`` are handed on verbatim (``-- AUDITOR_ARGS…``, ``-- ARGS…``),
    and whose ``--hermetic`` takes the next word only when it is exactly a mode (docs/cli.md#run)."""

    def __init__(self, *args: Any, optional_hermetic: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.optional_hermetic = optional_hermetic

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        valued = frozenset(
            flag
            for param in self.params
            if isinstance(param, click.Option) and not param.is_flag and param.name != "hermetic"
            for flag in param.opts
        )
        optional = {"--hermetic": (frozenset(HERMETIC_MODES), "on")} if self.optional_hermetic else {}
        words, trailing = split_command_words(args, valued, optional)
        ctx.meta["trailing_words"] = trailing
        return super().parse_args(ctx, list(words))


class _VerbGroup(ClosedAtParse, click.Group):
    """The verbs in the order of docs/cli.md#verbs's table."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def invoke(self, ctx: click.Context) -> Any:
        """An interrupt while a verb works is its one refusal line (click would add a blank line); a reader
        that closed stdout before the verb's product was written whole is ``stdout-closed`` (click would exit 1)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            return refuse(INTERRUPTED)
        except BrokenPipeError:
            from metaharness.shell.standard_streams import drop_stdout

            drop_stdout()
            return refuse(OUTPUT_CLOSED)


@click.group(cls=_VerbGroup, context_settings=_CONTEXT)
@click.version_option(package_name="metaharness", prog_name="metaharness", message="%(prog)s %(version)s")
def cli() -> None:
    """Launch coding agents under governance and tell the truth about what held."""


def _given(ctx: click.Context) -> frozenset[str]:
    """The options that appeared on the command line, named without dashes (docs/cli.md)."""
    return frozenset(
        next(flag for flag in param.opts if flag.startswith("--"))[2:]
        for param in ctx.command.params
        if isinstance(param, click.Option)
        and param.name is not None
        and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE
    )


@cli.command(cls=_TrailingWordsCommand, optional_hermetic=True, context_settings=_CONTEXT)
@click.argument("kind", type=_KIND)
@click.option("-p", "--prompt", metavar="TEXT", help="The task: the user turn (claude, codex) or loop --input (b10x).")
@click.option("--decisions", type=click.Choice(("frame", "ask", "observe")), default="frame", show_default=True)
@click.option("--frame", metavar="FILE", help="A metaharness.frame/1 document, resolved by the library.")
@click.option("--actor", metavar="ACTOR", help="The child's AEP_ACTOR.")
@click.option("--model", metavar="NAME", help="The model; required on b10x.")
@click.option("--effort", metavar="LEVEL", help="Reasoning effort (claude, codex).")
@click.option("--max-turns", type=click.IntRange(min=1), metavar="N", help="Turn ceiling (claude, b10x).")
@click.option(
    "--credentials",
    type=click.Choice(("operator-login", "api-key", "loopback", "none")),
    default="operator-login",
    show_default=True,
)
@click.option("--api-key-secret", metavar="NAME", help="b10x: the secret-store key the loop reads.")
@click.option("--model-endpoint", metavar="URL", help="claude/codex: a gateway root; b10x: the loop's --base-url.")
@click.option("--model-wire", type=click.Choice(("openai-responses", "anthropic-messages")), help="b10x: the wire.")
@click.option("--subscription-token-file", metavar="FILE", help="b10x: loop --oauth-token-file.")
@click.option("--subscription-token-env", metavar="NAME", help="b10x: loop --oauth-token-env.")
@click.option("--subscription-token-pointer", metavar="PTR", help="b10x: loop --oauth-token-pointer (RFC 6901).")
@click.option("--tool-surface", type=click.Choice(("native", "owned")), default="native", show_default=True)
@click.option("--allow-program", multiple=True, metavar="P", help="A program the run tool may start (repeatable).")
@click.option("--catalogue", metavar="FILE", help="The caller's tools instead of the vendor's.")
@click.option("--context", multiple=True, metavar="FILE", help="A file the run is handed (repeatable).")
@click.option("--plugin-dir", multiple=True, metavar="DIR", help="A plugin directory, copied (repeatable).")
@click.option("--plugin", multiple=True, type=_MarketplacePlugin(), help="A marketplace plugin (claude).")
@click.option("--cwd", metavar="DIR", help="Run the child in this existing directory.")
@click.option("--scratch-cwd", is_flag=True, help="--cwd is the embedder's disposable copy.")
@click.option(
    "--hermetic",
    type=click.Choice(HERMETIC_MODES),
    default="off",
    show_default=True,
    help="off, on or strict; bare --hermetic is on.",
)
@click.option("--audit", is_flag=True, help="Print the audit report and exit by it.")
@click.option("--spec", metavar="FILE", help="The document handed to the auditor.")
@click.option("--auditor", metavar="PREFIX", help="The auditor's argv prefix.")
@click.option("--strict-version", is_flag=True, help="Refuse an off-pin binary before the spawn.")
@click.option("--retain-dir", metavar="DIR", help="Copy the raw record and generated files to DIR/<run id>/.")
@click.option("--timeout", type=_Duration(), help="Stop the run as on SIGTERM after DURATION (600, 10m, 1h).")
@click.option("--decision-deadline", type=_Deadline(), help="How long an asked call waits for its answer (25s, 5m).")
@click.option("--events", metavar="FILE", help="Also write the whole stream to FILE, created new (0600).")
@click.option("--quiet", is_flag=True, help="No progress lines on a terminal's stderr.")
@click.option("--hooks", metavar="FILE", help="b10x: loop --hooks.")
@click.option("--driver", metavar="PATH", help="b10x: loop --driver.")
@click.option("--toolchain", metavar="NAME", help="b10x: loop --toolchain.")
@click.option("--prices", metavar="FILE", help="b10x: loop --prices.")
@click.option("--write-scope", multiple=True, type=_WriteScope(), help="b10x: GLOB=SCOPE, first match wins.")
@click.option("--scope-announce", type=click.Choice(("stated", "silent")), default="stated", show_default=True)
@click.option("--substrate", metavar="SOCKET", help="b10x: loop --substrate.")
@click.option("--substrate-embedded", is_flag=True, help="b10x: loop --substrate-embedded.")
@click.option("--cgroup-root", metavar="DIR", help="b10x: loop --cgroup-root.")
@click.option("--confine", type=click.Choice(("on", "off")), default="on", show_default=True,
              help="Run the child in a bubblewrap view whose one way out is the model route.")  # fmt: skip
@click.option("--confine-read", multiple=True, metavar="DIR", help="A directory the view binds read-only (repeatable).")
@click.pass_context
def run(ctx: click.Context, /, **values: Any) -> int:
    """Launch a harness of KIND under governance; words after -- are appended to the auditor's argv."""
    from returns.result import Failure

    from metaharness.pure.options import RunOptions, check_run_options
    from metaharness.shell.auditor import gather_audit_facts

    repeated = {  # click hands a repeatable option over as a list; RunOptions holds a tuple
        param.name: tuple(values[param.name]) for param in ctx.command.params if param.multiple and param.name
    }
    options = RunOptions(**{**values, **repeated}, auditor_args=ctx.meta["trailing_words"], given=_given(ctx))
    checked = check_run_options(options, gather_audit_facts(options, os.environ.get("PATH", "")))
    if isinstance(checked, Failure):
        return refuse(checked.failure())
    from metaharness.shell.run import execute_run

    return execute_run(checked.unwrap())


@cli.command(context_settings=_CONTEXT)
@click.argument("kind", type=_KIND)
@click.option("--render", is_flag=True, help="One line per operation instead of the JSON descriptor.")
def capabilities(kind: Kind, render: bool) -> int:
    """Print the adapter's capabilities descriptor for KIND (no model, network or credential)."""
    from metaharness.pure.capabilities import descriptor_json, descriptor_lines

    text = descriptor_lines(kind) if render else descriptor_json(kind)
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()
    return 0


@cli.command(context_settings=_CONTEXT)
@click.argument("kind", type=_KIND)
@click.option("--contract", is_flag=True, help="Print only the compact contract_result line.")
def conformance(kind: Kind, contract: bool) -> int:
    """Run KIND's deterministic conformance vectors."""
    from metaharness.shell.conformance import run_conformance

    return run_conformance(kind, contract)


@cli.command(context_settings=_CONTEXT)
@click.argument("kind", type=_KIND)
@click.option(
    "--credentials",
    type=click.Choice(("operator-login", "api-key", "loopback", "none")),
    default="operator-login",
    show_default=True,
    help="Check the credential a run with this mode would use.",
)
@click.option("--model-endpoint", metavar="URL", help="Check that the endpoint a run would use accepts a connection.")
def doctor(kind: Kind, credentials: Credentials, model_endpoint: str | None) -> int:
    """Resolve KIND's binary as the spawn will, check its version and flags, the credential and the endpoint."""
    from metaharness.shell.doctor import run_doctor

    return run_doctor(kind, credentials, model_endpoint)


@cli.command(cls=_TrailingWordsCommand, context_settings=_CONTEXT)
@click.option("--transcript", metavar="FILE", help="The transcript to audit.")
@click.option("--events", metavar="FILE", help="The metaharness.event/1 stream of the run.")
@click.option("--spec", metavar="FILE", help="The document handed to the auditor.")
@click.option("--auditor", metavar="PREFIX", help="The auditor's argv prefix.")
def audit(**_values: Any) -> int:
    """Audit a transcript metaharness did not launch (not built in this milestone)."""
    return refuse(AUDIT_NOT_BUILT)


@cli.command(context_settings=_CONTEXT)
@click.argument("events", nargs=-1, required=True, metavar="EVENTS [EVENTS]")
@click.option("--to", "target", metavar="FORMAT", default="trace-ir", show_default=True, help="Only trace-ir.")
@click.option("--out", metavar="FILE", help="Write the trace-ir/1 document here instead of stdout.")
@click.option("--html", metavar="FILE", help="Also write the run page here (required with two inputs).")
@click.option("--from", "source", type=_KIND, help="Each input is a retained vendor record of KIND.")
@click.option("--report", "reports", multiple=True, metavar="FILE", help="A run's stderr, for its audited lines.")
def project(
    events: tuple[str, ...], target: str, out: str | None, html: str | None, source: Kind | None,
    reports: tuple[str, ...],
) -> int:
    """Project one or two event streams into trace-ir/1 and the run page."""
    from metaharness.shell.project import run_project

    return run_project(events, target=target, out=out, html=html, source=source, reports=reports)


@cli.command("mcp-serve", context_settings=_CONTEXT)
@click.option("--workspace", metavar="DIR", default=".", show_default=True, help="The tree the tools work in.")
@click.option("--writable", is_flag=True, help="Publish the writing tools.")
@click.option("--allow-program", multiple=True, metavar="PROGRAM", help="A program the run tool may start.")
@click.option("--catalogue", metavar="FILE", help="Serve this catalogue instead of the owned surface.")
def mcp_serve(workspace: str, writable: bool, allow_program: tuple[str, ...], catalogue: str | None) -> int:
    """Serve the owned tool surface or a catalogue as an MCP server on stdio."""
    from metaharness.shell.mcp_serve import serve

    return serve(workspace=workspace, writable=writable, allow_program=allow_program, catalogue=catalogue)


@cli.command(context_settings=_CONTEXT)
@click.argument("kind", type=_KIND)
@click.argument("record")
@click.option("--run", "run_id", metavar="ID", default="replay", show_default=True, help="The run id.")
@click.option("--decisions", type=click.Choice(("observe", "frame")), default="observe", show_default=True)
@click.option("--frame", metavar="FILE", help="A metaharness.frame/1 document deciding each call.")
@click.option("--hermetic", type=click.Choice(HERMETIC_MODES), default="off", show_default=True)
@click.option("--harness-version", metavar="V", help="The harness version to record.")
@click.option("--model", metavar="NAME", help="The model, when the record states none.")
@click.option("--transcript-path", metavar="PATH", help="The transcript path to record (default RECORD).")
@click.option("--answers", metavar="FILE", help="b10x: where the caller-seam lines are written.")
def replay(**values: Any) -> int:
    """Map a retained vendor record of KIND offline into metaharness.event/1."""
    from metaharness.shell.replay import run_replay

    return run_replay(**values)


def run_cli(args: Sequence[str]) -> int:
    """Run the CLI over ``args`` and return the exit code; parse errors are ``usage`` refusals."""
    try:
        result = cli.main(list(args), prog_name="metaharness", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError:
        return refuse(Refusal("usage", f"a verb is required: one of {', '.join(cli.commands)}"))
    except click.exceptions.UsageError as error:
        return refuse(Refusal("usage", error.format_message()))
    except click.exceptions.ClickException as error:
        return refuse(Refusal("usage", error.format_message()))
    except (click.exceptions.Abort, KeyboardInterrupt):
        return refuse(INTERRUPTED)
    return result if isinstance(result, int) else 0


def main() -> NoReturn:
    """The ``metaharness`` console script: never a traceback, every failure a refusal line. ``run``
    keeps the signals held since start-up for its own stages; any other verb gets the defaults back,
    after refusing ``signalled`` when one arrived during start-up."""
    if sys.argv[1:2] != ["run"]:
        held = release_signals()
        if held:
            sys.exit(refuse(Refusal("signalled", f"{signal.Signals(held[0]).name} arrived before metaharness finished")))
    try:
        code = run_cli(sys.argv[1:])
    except Exception as error:  # noqa: BLE001 - docs/cli.md: never a traceback, whatever failed
        code = refuse(Refusal("internal-error", f"{type(error).__name__}: {error}"))
    sys.exit(code)
