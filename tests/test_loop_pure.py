"""The loop's pure stages: record bytes, gates, paths, approvals, instruction, budgets, flag plan, credentials."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from returns.result import Failure, Success

from metaharness.pure.jsonline import compact
from metaharness.pure.loop import budget
from metaharness.pure.loop.approval import (
    Allow,
    Deny,
    Unreadable,
    deny_mode_reason,
    needs_approval,
    read_answer,
)
from metaharness.pure.loop.catalogue import check_arguments, publish, schema_of, subjects_of
from metaharness.pure.loop.credential import credential_from_text, resolve_pointer
from metaharness.pure.loop.gates import Admitted, GateRefusal, admit_call, announce_call
from metaharness.pure.loop.instruction import ContextFile, InstructionFacts, render_instruction
from metaharness.pure.loop.paths import ScopeRule, confine, glob_matches, parse_scope_rule, scope_refusal
from metaharness.pure.loop.plan import RunFlags, plan_run
from metaharness.pure.loop.record import (
    ContextEntry,
    Finished,
    Started,
    ToolRequested,
    UsageLine,
    Withheld,
    encode_line,
    refused_line,
)
from metaharness.pure.wires.neutral import ProviderStop, Usage

# record


def test_started_writes_every_field_in_order_and_omits_empty_operations() -> None:
    line = Started(
        model="m",
        workspace="/w",
        published_tools=("file_read",),
        withheld=(Withheld("run", "no program was allowed; pass --allow-program"),),
        skills=(),
        agents=(),
        profiles=(),
        context=(ContextEntry(id="x", kind="k", trust="t", cache="session", bytes=1, sha256="ab"),),
        toolchains=(),
        mcp=(),
        credential_source="none",
    )
    assert encode_line(line) == (
        b'{"kind":"started","model":"m","workspace":"/w","published_tools":["file_read"],'
        b'"withheld":[{"tool":"run","reason":"no program was allowed; pass --allow-program"}],"skills":[],'
        b'"agents":[],"profiles":[],"context":[{"id":"x","kind":"k","trust":"t","cache":"session","bytes":1,'
        b'"sha256":"ab"}],"toolchains":[],"mcp":[],"credential_source":"none"}\n'
    )


def test_optional_fields_are_omitted_only_when_empty() -> None:
    bare = ToolRequested(call_id="c", name="shell.exec", arguments={"cmd": "id"})
    assert compact(bare) == b'{"kind":"tool-requested","call_id":"c","name":"shell.exec","arguments":{"cmd":"id"}}'
    usage = UsageLine(model="m", input_tokens=1, output_tokens=2, cached_input_tokens=0)
    assert compact(usage) == b'{"kind":"usage","model":"m","input_tokens":1,"output_tokens":2,"cached_input_tokens":0}'
    assert b'"cache_creation_input_tokens":0' in compact(
        UsageLine(model="m", input_tokens=1, output_tokens=2, cached_input_tokens=0, cache_creation_input_tokens=0)
    )


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        (budget.Completed(), b'{"kind":"completed"}'),
        (budget.MaxTurns(1), b'{"kind":"max-turns","limit":1}'),
        (budget.MaxOutputTokens(100, 104), b'{"kind":"max-output-tokens","limit":100,"reported":104}'),
        (budget.MaxCost(500, 512), b'{"kind":"max-cost","limit_micro_usd":500,"spent_micro_usd":512}'),
        (budget.Deadline(30000), b'{"kind":"deadline","limit_ms":30000}'),
        (budget.Cancelled(), b'{"kind":"cancelled","reason":"the caller cancelled"}'),
        (budget.ProviderIncomplete("max_output_tokens"), b'{"kind":"provider-incomplete","reason":"max_output_tokens"}'),
        (
            budget.BudgetUnobservable("max-output-tokens"),
            b'{"kind":"budget-unobservable","name":"max-output-tokens","reason":"the provider reported no usage"}',
        ),
    ],
)
def test_stop_objects(stop: budget.Stop, expected: bytes) -> None:
    assert compact(Finished(stop=stop, turns=2)) == b'{"kind":"finished","stop":' + expected + b',"turns":2}'


def test_refused_line_flattens_line_breaks() -> None:
    assert encode_line(refused_line("a\nb")) == b'{"kind":"refused","reason":"a b"}\n'


# catalogue and gates

PUBLICATION = publish(True, ("cargo", "git"))


def test_publication_withholds_by_reason() -> None:
    assert publish(False, ()).withheld == (
        Withheld("file_write", "the workspace is not writable"),
        Withheld("file_edit", "the workspace is not writable"),
        Withheld("run", "no program was allowed; pass --allow-program"),
    )
    assert PUBLICATION.names() == ("file_read", "dir_list", "search", "find", "file_write", "file_edit", "run")
    assert schema_of("run", ("cargo",))["properties"]["argv"]["prefixItems"] == [{"type": "string", "enum": ["cargo"]}]
    assert schema_of("file_read", ())["properties"]["max_bytes"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 262144,
        "default": 65536,
    }


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [
        ("file_read", {}, "`file_read` arguments: `path` is required"),
        ("file_read", {"path": "a", "mode": 1}, "`file_read` arguments: `mode` is not allowed"),
        ("file_read", {"path": 3}, "`file_read` arguments: `path` must be a string"),
        ("file_read", {"path": "a", "offset": 0}, "`file_read` arguments: `offset` must be an integer of at least 1"),
        ("file_read", {"path": "a", "offset": True}, "`file_read` arguments: `offset` must be an integer of at least 1"),
        ("search", {"pattern": "x", "context": 6}, "`search` arguments: `context` must be an integer from 0 to 5"),
        ("search", {"pattern": "x", "regex": "yes"}, "`search` arguments: `regex` must be a boolean"),
        ("run", {"argv": []}, "`run` arguments: `argv` must be a non-empty list of strings"),
        ("dir_list", [1], "`dir_list` arguments: must be an object"),
        ("file_read", {"path": "a", "max_bytes": 262144}, None),
        ("dir_list", {}, None),
    ],
)
def test_argument_checks(name: str, arguments: Any, problem: str | None) -> None:
    assert check_arguments(name, arguments) == problem


def test_announcements_name_operation_and_subjects_only_when_published() -> None:
    assert compact(announce_call("c", "shell.exec", {"cmd": "id"}, PUBLICATION)) == (
        b'{"kind":"tool-requested","call_id":"c","name":"shell.exec","arguments":{"cmd":"id"}}'
    )
    assert compact(announce_call("c", "run", {"argv": ["git"]}, PUBLICATION)) == (
        b'{"kind":"tool-requested","call_id":"c","name":"run","arguments":{"argv":["git"]},"operation":"shell",'
        b'"subjects":["proc:git"]}'
    )


def test_subjects_use_the_argument_as_spelled() -> None:
    assert subjects_of("file_write", {"path": "./a//b"}) == ("file:./a//b",)
    assert subjects_of("dir_list", {}) == ("file:.",)
    assert subjects_of("run", {"argv": ["cargo", "test"]}) == ("proc:cargo",)


def test_gates_in_order() -> None:
    unpublished = admit_call("shell.exec", {}, PUBLICATION, (), "/w")
    assert unpublished == GateRefusal(
        "unpublished-tool",
        "`shell.exec` is not one of this run's tools; call only what was published",
        "`shell.exec` is not one of this run's tools",
    )
    assert isinstance(unpublished, GateRefusal) and unpublished.warning == "`shell.exec` is not one of this run's tools"
    big = {"path": "a", "text": "x" * 70000}
    refusal = admit_call("file_write", big, PUBLICATION, (), "/w")
    assert isinstance(refusal, GateRefusal) and refusal.text == "the arguments are 70022 bytes, over the 65536 byte bound"
    assert admit_call("run", {"argv": ["rm", "-rf"]}, PUBLICATION, (), "/w") == GateRefusal(
        "program-refused", "`rm` is not a program this run may start; allowed: `cargo`, `git`"
    )
    assert admit_call("file_read", {"path": "../x"}, PUBLICATION, (), "/w") == GateRefusal(
        "path-refused", "`../x` contains `..`; name paths from the workspace root"
    )
    assert admit_call("file_write", {"path": ".git/config", "text": ""}, PUBLICATION, (), "/w") == GateRefusal(
        "scope-refused", "`.git/config` is outside this run's write scope (`.git/**`: denied)"
    )
    admitted = admit_call("file_read", {"path": "/w/src/./a.py"}, PUBLICATION, (), "/w")
    assert isinstance(admitted, Admitted) and admitted.relative == "src/a.py"


# paths


@pytest.mark.parametrize(
    ("path", "result"),
    [
        ("a//b/./c", Success("a/b/c")),
        (".", Success(".")),
        ("/w", Success(".")),
        ("/w/x", Success("x")),
        ("/wx/y", Failure("`/wx/y` is outside the workspace")),
        ("/etc/passwd", Failure("`/etc/passwd` is outside the workspace")),
        ("a/../b", Failure("`a/../b` contains `..`; name paths from the workspace root")),
        ("", Failure("`` is outside the workspace")),
        ("a\0b", Failure("`a\0b` is outside the workspace")),
    ],
)
def test_confine(path: str, result: object) -> None:
    assert confine(path, "/w") == result


def test_globs_and_scope_rules() -> None:
    assert glob_matches("docs/**", "docs/a/b.md") and glob_matches("docs/**", "docs")
    assert glob_matches("*.md", "a.md") and not glob_matches("*.md", "d/a.md")
    assert glob_matches("**/*.md", "a.md") and glob_matches("**/*.md", "d/e/a.md")
    assert glob_matches("a?c", "abc") and not glob_matches("a?c", "a/c")
    rules = (ScopeRule("docs/**", "allowed"), ScopeRule("src/**", "partial-only"), ScopeRule("**", "denied"))
    assert scope_refusal("docs/x", "docs/x", rules, "file_write") is None
    assert scope_refusal("src/x", "src/x", rules, "file_edit") is None
    assert scope_refusal("src/x", "src/x", rules, "file_write") == (
        "`src/x` is outside this run's write scope (`src/**`: partial-only)"
    )
    assert scope_refusal("x", "x", rules, "file_edit") == "`x` is outside this run's write scope (`**`: denied)"
    assert scope_refusal("x", "x", (), "file_write") is None
    assert parse_scope_rule("a=b=allowed") == Success(ScopeRule("a=b", "allowed"))
    assert isinstance(parse_scope_rule("docs/**=maybe"), Failure)


# approvals


def test_approval_rule() -> None:
    assert needs_approval("medium", "low") and needs_approval("high", "medium")
    assert not needs_approval("high", "high") and not needs_approval("low", "low")
    assert deny_mode_reason("low") == (
        "no approver is attached to this run, so calls above the `low` ceiling are refused; retrying cannot help"
    )


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        (b'{"call_id":"c","decision":"allow"}', Allow()),
        (b'{"decision":"allow","call_id":"c"}\r', Allow()),
        (b'{"call_id":"c","decision":"deny","reason":"frame says no"}', Deny("frame says no")),
        (b'{"call_id":"c","decision":"deny"}', Deny("the caller gave no reason")),
        (b'{"call_id":"d","decision":"allow"}', Unreadable("the line answers `d`, not `c`")),
        (b"\xff\xfe", Unreadable("the line is not UTF-8")),
        (b"allow", Unreadable("the line is not JSON")),
        (b'{"call_id":"c","decision":"maybe"}', Unreadable("the decision is not `allow` or `deny` with its own keys")),
        (b'{"call_id":"c","decision":"allow","reason":"x"}', Unreadable("the decision is not `allow` or `deny` with its own keys")),
        (b"x" * 65537, Unreadable("the line is over the 65536 byte bound")),
    ],
)
def test_caller_answers(line: bytes, answer: object) -> None:
    assert read_answer(line, "c") == answer


def test_caller_answer_with_another_key_is_unreadable() -> None:
    answer = read_answer(b'{"call_id":"c","decision":"allow","extra":1}', "c")
    assert isinstance(answer, Unreadable) and answer.why.startswith("the line is not an answer object")


# instruction


def facts(**changes: Any) -> InstructionFacts:
    base: dict[str, Any] = {
        "tools": ("file_read", "run"),
        "programs": ("cargo", "git"),
        "scope_rules": (ScopeRule("docs/**", "allowed"),),
        "scope_stated": True,
        "via_metaharness": True,
        "context_files": (ContextFile("notes/a.txt", b"a < b & c\n"),),
        "project_files": (("AGENTS.md", "Be brief."),),
        "workspace": "/w",
        "platform": "linux",
        "captured_at": "2026-11-30T00:00:00Z",
    }
    base.update(changes)
    return InstructionFacts(**base)


def test_instruction_text_and_manifest() -> None:
    rendered = render_instruction(facts())
    lines = rendered.text.split("\n")
    assert lines[1:5] == [
        "The tools this run has: `file_read`, `run`.",
        "Programs `run` may start: `cargo`, `git`.",
        "Write scope: `docs/**` allowed; `.git/**` denied.",
        ("This run was launched by metaharness, an outer harness that records your tool calls and may decide the "
        "ones that need approval. It grants you nothing beyond these tools."),
    ]
    assert "--- notes/a.txt ---\na &lt; b &amp; c\n" in rendered.text
    assert "--- project instructions: AGENTS.md ---\nBe brief.\n" in rendered.text
    assert rendered.text.endswith("Environment:\nworkspace: /w\nos: linux\ndate: 2026-11-30\n")
    assert [entry.id for entry in rendered.manifest] == [
        "harness.instructions",
        "context.1",
        "project.AGENTS.md",
        "environment.workspace",
    ]
    context = rendered.manifest[1]
    assert (context.kind, context.trust, context.path, context.bytes) == ("context_file", "caller", "notes/a.txt", 10)
    assert context.sha256 == hashlib.sha256(b"a < b & c\n").hexdigest()
    harness = rendered.text[: rendered.manifest[0].bytes].encode()
    assert rendered.manifest[0].sha256 == hashlib.sha256(harness).hexdigest()
    assert rendered.manifest[-1].captured_at == "2026-11-30T00:00:00Z"


def test_silent_scope_and_direct_path_say_nothing() -> None:
    text = render_instruction(facts(scope_stated=False, via_metaharness=False, programs=())).text
    assert "Write scope" not in text and "metaharness" not in text and "Programs" not in text


# budgets


def test_budgets() -> None:
    limits = budget.Limits(max_turns=2, max_output_tokens=10, max_duration_ms=1000, max_cost_micro_usd=5)
    assert budget.stop_before_turn(limits, budget.Spent(turns=2), True, 0) == budget.Cancelled()
    assert budget.stop_before_turn(limits, budget.Spent(turns=2), False, 1000) == budget.Deadline(1000)
    assert budget.stop_before_turn(limits, budget.Spent(turns=2), False, 0) == budget.MaxTurns(2)
    assert budget.stop_before_turn(limits, budget.Spent(turns=1), False, 0) is None
    usage = Usage(10, 12, 0)
    assert budget.stop_after_usage(limits, budget.Spent(output_tokens=12), usage) == budget.MaxOutputTokens(10, 12)
    assert budget.stop_after_usage(limits, budget.Spent(micro_usd=6), Usage(1, 1, 0)) == budget.MaxCost(5, 6)
    assert budget.stop_after_usage(limits, budget.Spent(), None) == budget.BudgetUnobservable("max-output-tokens")
    assert budget.stop_after_usage(budget.Limits(max_cost_micro_usd=1), budget.Spent(), None) == (
        budget.BudgetUnobservable("max-cost")
    )
    assert budget.stop_without_calls(ProviderStop("max-output-tokens")) == budget.ProviderIncomplete("max_output_tokens")
    assert budget.stop_without_calls(ProviderStop("incomplete", "pause_turn")) == budget.ProviderIncomplete("pause_turn")
    assert budget.stop_without_calls(ProviderStop("tool-calls")) == budget.Completed()


def test_cost_is_rounded_up() -> None:
    price = budget.Price(input_usd_per_mtok=3.0, cached_input_usd_per_mtok=0.3, output_usd_per_mtok=15.0)
    assert budget.micro_usd(Usage(42, 8, 7), price) == 228
    assert budget.micro_usd(Usage(1, 0, 0), budget.Price(0.1, 0.0, 0.0)) == 1


# flag plan


def flags(**changes: Any) -> RunFlags:
    base: dict[str, Any] = dict.fromkeys(RunFlags.__struct_fields__)
    base.update(
        input="go",
        base_url="http://127.0.0.1:1/v1/",
        model="m",
        wire="openai-responses",
        workspace=".",
        json=True,
        quiet=False,
        execution_path="direct",
        context=(),
        no_project_instructions=False,
        approve="auto",
        approve_up_to="low",
        yes=False,
        allow_program=(),
        write_scope=(),
        scope_announce="stated",
        no_session=True,
        given_not_built=(),
    )
    base.update(changes)
    return RunFlags(**base)


def test_plan_trims_one_slash_and_defaults() -> None:
    plan = plan_run(flags()).unwrap()
    assert plan.base_url == "http://127.0.0.1:1/v1" and plan.credential is None and plan.approve == "auto"
    assert plan_run(flags(yes=True, approve="deny")).unwrap().approve == "all"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"base_url": None}, "--base-url is required"),
        ({"model": None}, "--model is required"),
        ({"input": None}, "--input is required"),
        ({"given_not_built": ("--driver",)}, "`--driver` is declared but not built in this implementation"),
        ({"api_key_env": "A", "api_key_secret": "k"}, "the credential sources are mutually exclusive: --api-key-env and --api-key-secret"),
        ({"api_key_secret": ""}, "--api-key-secret must not be empty"),
        ({"base_url": "ftp://x"}, "--base-url must be an http:// or https:// URL; got `ftp://x`"),
        ({"base_url": "http://x/v1?beta=true"}, "--base-url must not carry a query or fragment; got `http://x/v1?beta=true`"),
        ({"base_url": "http://[::1"}, "--base-url must be an http:// or https:// URL with a host and port; got `http://[::1` (Invalid IPv6 URL)"),
        ({"base_url": "http://x:99999"}, "--base-url must be an http:// or https:// URL with a host and port; got `http://x:99999` (Port out of range 0-65535)"),
        ({"model": ""}, "--model must not be empty"),
        ({"wire": "grpc"}, "--wire must be one of openai-responses, anthropic-messages; got `grpc`"),
        ({"approve": "caller", "json": False}, "--approve caller requires --json, since the answers are read as JSON lines on stdin"),
        ({"approve_up_to": "max"}, "--approve-up-to must be one of low, medium, high, destructive; got `max`"),
        ({"allow_program": ("/bin/sh",)}, "--allow-program takes a program name without `/`; got `/bin/sh`"),
        ({"api_key_env": "A", "oauth_token_env": "B"}, "the credential sources are mutually exclusive: --api-key-env and --oauth-token-env"),
        ({"api_key_env": "A", "oauth_token_pointer": "/t"}, "--oauth-token-pointer needs --oauth-token-file or --oauth-token-env"),
        ({"resume": "latest", "no_session": True}, "--resume conflicts with --no-session"),
        ({"max_turns": 0}, "--max-turns must be at least 1; got 0"),
    ],
)
def test_plan_refusals(changes: dict[str, Any], reason: str) -> None:
    assert plan_run(flags(**changes)) == Failure(reason)


# credentials


def test_credentials_are_trimmed_or_pointed_at_and_never_echoed() -> None:
    assert credential_from_text("  tok\n", None, "--api-key-file k") == Success("tok")
    assert credential_from_text(" \n", None, "--api-key-file k") == Failure("the credential at --api-key-file k is empty")
    document = '{"tokens":{"access/token":" secret-value "},"list":["a"]}'
    assert credential_from_text(document, "/tokens/access~1token", "f") == Success("secret-value")
    missing = credential_from_text(document, "/tokens/none", "f")
    assert isinstance(missing, Failure) and "secret-value" not in missing.failure()
    assert resolve_pointer({"list": ["a"]}, "/list/0") == "a"
    assert resolve_pointer({"list": ["a"]}, "/list/01") is None
    assert isinstance(credential_from_text("not json secret", "/a", "f"), Failure)
    assert "not json secret" not in credential_from_text("not json secret", "/a", "f").failure()


def test_an_interrupted_wait_is_a_cancel_unless_only_the_deadline_passed() -> None:
    limits = budget.Limits(max_duration_ms=700)
    assert budget.interrupted_stop(limits, True) == budget.Cancelled()
    assert budget.interrupted_stop(limits, False) == budget.Deadline(700)
    assert budget.interrupted_stop(budget.Limits(), False) == budget.Cancelled()
