"""Planning a b10x launch (docs/adapters/b10x.md#launch, #frame-admissibility): argv order, constructed environment,
scratch files, refusals."""

from __future__ import annotations

import msgspec
import pytest

from metaharness.pure.b10x.admissibility import check_frame_admissible
from metaharness.pure.b10x.launch import (
    B10xLaunchFacts,
    launch_fixture,
    plan_b10x_launch,
    resolve_b10x_program,
    verified_versions,
)
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import ProgramCandidate
from metaharness.pure.frames import seal_frame
from metaharness.pure.jsonline import sha256_hex
from metaharness.pure.options import RunOptions

PROGRAM = "/opt/b10x/bin/b10x-harness"
BASE = RunOptions(
    kind="b10x",
    decisions="observe",
    prompt="observe this run",
    model="b10x-emulated",
    model_endpoint="https://example.invalid/v1",
    credentials="none",
)
FACTS = B10xLaunchFacts(caller_env={"HOME": "/operator"}, caller_cwd="/", scratch="/scratch/run", program=PROGRAM)


def plan(options: RunOptions = BASE, facts: B10xLaunchFacts = FACTS):
    return plan_b10x_launch(options, facts)


def test_vector_one_observe_launch() -> None:
    fixture = launch_fixture(plan().unwrap())
    assert fixture == {
        "program": PROGRAM,
        "args": [
            "run", "--execution-path", "metaharness", "--json", "--approve-up-to", "high", "--no-session",
            "--workspace", "/scratch/run/work", "--base-url", "https://example.invalid/v1", "--model",
            "b10x-emulated", "--input", "observe this run",
        ],
        "env": {"PATH": "/operator/.local/bin:/usr/local/bin:/usr/bin:/bin", "XDG_CONFIG_HOME": "/scratch/run/config"},
        "cwd": "/scratch/run/work",
        "files": [],
    }


@pytest.mark.parametrize(
    ("wire", "model"),
    [(None, "gpt-6.2-sol"), ("openai-responses", "gpt-6.2-sol"), ("anthropic-messages", "claude-opus-5-5")],
)
def test_without_model_the_loop_gets_the_wire_default(wire, model) -> None:
    args = plan(msgspec.structs.replace(BASE, model=None, model_wire=wire)).unwrap().args
    assert args[args.index("--model") + 1] == model


def test_the_own_loop_is_verified_at_its_own_version_only() -> None:
    assert verified_versions(None) == ("0.22.0",)
    assert verified_versions("0.1.0") == ("0.22.0", "0.1.0")


def test_vector_two_context_files_before_input() -> None:
    brief, plan_md = b"# Brief\n\nShip the parser.\n", b"- step one\n- step two\n"
    context = (
        ContextFileRead("docs/brief.md", brief, sha256_hex(brief)),
        ContextFileRead("notes/plan.md", plan_md, sha256_hex(plan_md)),
    )
    options = msgspec.structs.replace(BASE, cwd="/scratch/run/work", context=("docs/brief.md", "notes/plan.md"))
    launch = plan(options, msgspec.structs.replace(FACTS, context=context)).unwrap()
    fixture = launch_fixture(launch)
    assert fixture["args"][-6:] == [
        "--context", "/scratch/run/context/1/docs/brief.md", "--context", "/scratch/run/context/2/notes/plan.md",
        "--input", "observe this run",
    ]
    assert fixture["files"] == [
        {"path": "/scratch/run/context/1/docs/brief.md", "sha256": "74608a6e8df25f2add98a17f8dbb04af6f4f81a7d12de2cb9d68aed2a29d1793", "bytes": 26},
        {"path": "/scratch/run/context/2/notes/plan.md", "sha256": "5cbcd5460516ddf3d9d11d6bfc3625b921d16a3c5d2eac25c73695df40fd1063", "bytes": 22},
    ]
    assert [c["channel"] for c in fixture["context_files"]] == ["loop-context", "loop-context"]
    assert launch.cwd == "/scratch/run/work"
    assert "/scratch/run/work" not in launch.directories


def test_caller_seam_launch_and_every_row_in_order() -> None:
    options = msgspec.structs.replace(
        BASE,
        decisions="frame",
        frame="f.json",
        model_wire="anthropic-messages",
        prompt=None,
        credentials="api-key",
        hooks="h.json",
        toolchain="stable",
        driver="d",
        write_scope=(("docs/**", "allowed"), (".env", "denied")),
        scope_announce="silent",
        prices="p.json",
        substrate_embedded=True,
        cgroup_root="/cg",
        allow_program=("cargo", "git"),
        max_turns=3,
        plugin_dir=("plug/one",),
        actor="ci",
    )
    facts = msgspec.structs.replace(
        FACTS, caller_env={"HOME": "/operator", "OPENAI_API_KEY": "sk", "CARGO_HOME": "/c", "LANG": "C"}, caller_cwd="/home/op"
    )
    launch = plan(options, facts).unwrap()
    assert launch.args == (
        "run", "--execution-path", "metaharness", "--json", "--approve-up-to", "low", "--approve", "caller",
        "--no-session", "--workspace", "/scratch/run/work", "--base-url", "https://example.invalid/v1",
        "--model", "b10x-emulated", "--wire", "anthropic-messages", "--api-key-env", "OPENAI_API_KEY",
        "--hooks", "/home/op/h.json", "--toolchain", "stable", "--driver", "/home/op/d",
        "--write-scope", "docs/**=allowed", "--write-scope", ".env=denied", "--scope-announce", "silent",
        "--prices", "/home/op/p.json", "--substrate-embedded", "--cgroup-root", "/cg",
        "--allow-program", "cargo", "--allow-program", "git", "--max-turns", "3",
        "--plugin-dir", "/scratch/run/plugins/1/one", "--input", "",
    )
    assert launch.environment.as_dict() == {
        "AEP_ACTOR": "ci",
        "CARGO_HOME": "/c",
        "OPENAI_API_KEY": "sk",
        "PATH": "/operator/.local/bin:/usr/local/bin:/usr/bin:/bin",
        "XDG_CONFIG_HOME": "/scratch/run/config",
    }
    assert launch.answers_on_stdin and launch.plugin_copies[0].source == "/home/op/plug/one"


def test_secret_store_forwards_only_the_bus_variables() -> None:
    options = msgspec.structs.replace(BASE, credentials="api-key", api_key_secret="openai")
    facts = msgspec.structs.replace(FACTS, caller_env={"HOME": "/h", "OPENAI_API_KEY": "sk", "XDG_RUNTIME_DIR": "/run/u"})
    launch = plan(options, facts).unwrap()
    assert ("--api-key-secret", "openai") == launch.args[launch.args.index("--api-key-secret") :][:2]
    assert set(launch.environment.as_dict()) == {"PATH", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"}


def test_no_home_path_floor() -> None:
    launch = plan(facts=msgspec.structs.replace(FACTS, caller_env={})).unwrap()
    assert launch.environment.as_dict()["PATH"] == "/usr/local/bin:/usr/bin:/bin"


def test_subscription_token_file_is_absolute_and_pointer_follows() -> None:
    options = msgspec.structs.replace(BASE, subscription_token_file="tok.json", subscription_token_pointer="/a/b")
    launch = plan(options, msgspec.structs.replace(FACTS, caller_cwd="/w")).unwrap()
    assert launch.args[13:19] == ("--oauth-token-file", "/w/tok.json", "--oauth-token-pointer", "/a/b", "--input", "observe this run")


def test_refusals() -> None:
    missing_key = plan(msgspec.structs.replace(BASE, credentials="api-key")).failure()
    assert missing_key.code == "api-key-missing"
    unset = plan(msgspec.structs.replace(BASE, subscription_token_env="TOKEN")).failure()
    assert unset.code == "subscription-token-env-unset"
    too_long = plan(msgspec.structs.replace(BASE, prompt="x" * 131072)).failure()
    assert too_long.code == "argument-too-long"
    assert too_long.message.startswith("the prompt is 131073 bytes with its terminating NUL")
    assert too_long.message.endswith("no context file was declared")


def test_program_resolution_on_the_child_path() -> None:
    env = {"HOME": "/operator"}
    found = resolve_b10x_program(env, {"/usr/bin/b10x-harness": ProgramCandidate(True, True)})
    assert found.unwrap() == "/usr/bin/b10x-harness"
    first = resolve_b10x_program(
        env,
        {
            "/operator/.local/bin/b10x-harness": ProgramCandidate(True, False),
            "/usr/local/bin/b10x-harness": ProgramCandidate(True, True),
            "/usr/bin/b10x-harness": ProgramCandidate(True, True),
        },
    )
    assert first.unwrap() == "/usr/local/bin/b10x-harness"
    refused = resolve_b10x_program(env, {}).failure()
    assert refused.code == "program-not-found" and "/operator/.local/bin:/usr/local/bin:/usr/bin:/bin" in refused.message


def _frame(operations, subjects=None):
    raw = {
        "format": "metaharness.frame/1",
        "workflow": {"id": "w", "version": "1"},
        "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [], "obligations": [], "reaching": [], "next": [],
        "handoff": {"handoff": "none"},
        "operations": [{"op": op} for op in operations],
    }
    if subjects is not None:
        raw["subjects"] = [{"subject": glob, "operations": [{"op": op} for op in ops]} for glob, ops in subjects]
    return seal_frame(raw).unwrap()


READS = ["file.read", "dir.list", "search"]


@pytest.mark.parametrize(
    ("operations", "subjects", "tail"),
    [
        (["file.read", "search"], None, "dir.list in its operations"),
        (READS, [("file:src/**", ["file.read"]), ("**", READS)], "dir.list in subject rule 1 (file:src/**)"),
        (READS, [("file:src/**", READS)], "file.read for subjects no rule matches (the last rule must be ** or file:**)"),
        (READS, [], "file.read for subjects no rule matches (the last rule must be ** or file:**)"),
    ],
)
def test_frame_inadmissible(operations, subjects, tail) -> None:
    frame = _frame(operations, subjects)
    refusal = check_frame_admissible(frame).failure()
    assert refusal.code == "frame-inadmissible"
    assert refusal.message.startswith(f"the frame {frame.digest} does not admit {tail}: the loop runs reads unasked")


def test_frame_admissible() -> None:
    frame = _frame([*READS, "file.write"], [("file:note.md", [*READS, "file.write"]), ("file:**", READS)])
    assert check_frame_admissible(frame).unwrap() is frame
    assert check_frame_admissible(_frame(READS)).unwrap()


def test_attestation_of_a_scratch_launch() -> None:
    from metaharness.pure.hermetic import memory_walk

    walk = memory_walk("/tmp", {"/tmp": (), "/": ("AGENTS.md",)}, scratch_parent=True)
    frame = _frame(READS)
    launch = plan(facts=msgspec.structs.replace(FACTS, frame=frame, memory=walk)).unwrap()
    hermetic = launch.attestation
    imposed = {row.row: row.how for row in hermetic.imposed}
    assert imposed["H7"] == "the child runs in /scratch/run/work, which metaharness created"
    assert imposed["H10"] == f"frame {frame.digest}"
    assert imposed["H3"] == "environment constructed: PATH, XDG_CONFIG_HOME"
    assert [row.row for row in hermetic.unavailable] == ["H9", "H11"]
    assert hermetic.unavailable[1].why == "the ancestor walk from /tmp found /AGENTS.md"


def test_plan_refuses_an_inadmissible_frame() -> None:
    launch = plan(facts=msgspec.structs.replace(FACTS, frame=_frame(["file.read"])))
    assert launch.failure().code == "frame-inadmissible"


def test_operator_cwd_makes_h7_unavailable() -> None:
    launch = plan(msgspec.structs.replace(BASE, cwd="repo"), msgspec.structs.replace(FACTS, caller_cwd="/home/op")).unwrap()
    assert launch.cwd == "/home/op/repo"
    assert {row.row: row.why for row in launch.attestation.unavailable}["H7"] == (
        "the child runs in /home/op/repo, which metaharness did not create, and can write to it"
    )
