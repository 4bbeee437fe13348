"""The confinement planner's decisions and the stream amendment, as pure functions (docs/confinement.md)."""

from __future__ import annotations

import msgspec
import pytest
from returns.result import Failure, Success

from metaharness.pure.claude.vendor import WIRE_PATHS as CLAUDE_WIRE
from metaharness.pure.codex.vendor import WIRE_PATHS as CODEX_WIRE
from metaharness.pure.confinement import (
    BRIDGE_PORT,
    ConfinementFacts,
    ModelRoute,
    SystemEntry,
    ToolGrant,
    bridge_url,
    bridged_environment,
    confined_hermetic,
    install_root,
    model_route,
    named_paths,
    plan_confinement,
    pointed_at_bridge,
    render_bwrap,
    render_tool_entry,
    shebang_interpreter,
    tool_entry_environment,
    tool_entry_variables,
)
from metaharness.pure.environment import ChildEnvironment, CredentialPosture
from metaharness.pure.events import (
    Census,
    Deny,
    EventValue,
    Exited,
    Hermetic,
    RouteTraffic,
    RowHow,
    RowWhy,
    SessionEnded,
    Stream,
    StreamClosed,
    ToolDecided,
    ToolRequested,
    ToolResult,
    WarningRaised,
    encode_event,
    read_event,
)
from metaharness.pure.hermetic import MemoryHit, MemoryWalk
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write


@pytest.mark.parametrize(
    ("kind", "credentials", "endpoint", "expected"),
    [
        ("claude", "loopback", None, ModelRoute("https://api.anthropic.com", CLAUDE_WIRE, "/c")),
        ("codex", "loopback", "http://127.0.0.1:9/", ModelRoute("http://127.0.0.1:9", CODEX_WIRE, "/c")),
        ("claude", "none", "http://gw:8/base", ModelRoute("http://gw:8", ("/base/v1/messages", "/base/v1/messages/count_tokens"))),
        ("codex", "none", "http://127.0.0.1:9", ModelRoute("http://127.0.0.1:9", CODEX_WIRE)),
        ("claude", "api-key", None, ModelRoute("https://api.anthropic.com", CLAUDE_WIRE)),
        ("claude", "operator-login", None, ModelRoute("https://api.anthropic.com", CLAUDE_WIRE)),
        ("codex", "api-key", None, ModelRoute("https://api.openai.com", CODEX_WIRE)),
        ("b10x", "none", "http://127.0.0.1:9/v1", ModelRoute("http://127.0.0.1:9", ("/v1/responses",))),
        ("claude", "none", None, None),
        ("codex", "none", None, None),
    ],
)  # fmt: skip
def test_the_model_route_of_each_credential_mode(kind, credentials, endpoint, expected) -> None:
    assert model_route(kind, credentials, endpoint, "/c" if credentials == "loopback" else None, False) == Success(expected)


def test_a_chatgpt_plan_login_on_codex_has_no_route() -> None:
    refused = model_route("codex", "operator-login", None, None, login_is_api_key=False)
    assert isinstance(refused, Failure) and refused.failure().code == "confine-route-unavailable"
    assert refused.failure().message.endswith("; pass --confine off (the child then reaches the vendor unconfined), or log "
                                              "in with an API key, or pass --credentials api-key with OPENAI_API_KEY or "
                                              "CODEX_API_KEY set")  # fmt: skip
    keyed = model_route("codex", "operator-login", None, None, login_is_api_key=True)
    assert keyed == Success(ModelRoute("https://api.openai.com", CODEX_WIRE))


def test_the_b10x_anthropic_wire_asks_for_messages() -> None:
    route = model_route("b10x", "none", "http://h:1/api", None, False, "anthropic-messages").unwrap()
    assert route == ModelRoute("http://h:1", ("/api/messages",))
    assert bridge_url("http://h:1/api") == f"http://127.0.0.1:{BRIDGE_PORT}/api"


def test_install_roots_and_interpreters() -> None:
    assert install_root("/opt/vendors/node_modules/@openai/codex/bin/codex.js", {}) == ("/opt/vendors/node_modules",)
    venv = {"/opt/venv": "/usr/local/python/3.11/bin"}
    assert install_root("/opt/venv/bin/b10x-harness", venv) == ("/opt/venv", "/usr/local/python/3.11")
    assert install_root("/usr/bin/node", {}) == ("/usr/bin/node",)
    assert shebang_interpreter(b"#!/usr/bin/env node\n") == ("env", "node")
    assert shebang_interpreter(b"#!/opt/venv/bin/python3\n") == ("/opt/venv/bin/python3",)
    assert shebang_interpreter(b"\x7fELF") == ()


def test_a_started_program_is_handed_the_absolute_paths_after_its_name() -> None:
    assert named_paths(["/opt/venv/bin/python", "/home/op/hooks/../hooks/check.py", "--strict", "rel/policy.json"]) == (
        "/home/op/hooks/check.py",
    )
    assert named_paths(["/usr/local/bin/policy-check"]) == ()


def view(route: ModelRoute | None = None, caller_uid: int = 1000) -> ConfinementFacts:
    scratch = "/tmp/metaharness-x"
    return ConfinementFacts(
        bwrap="/usr/bin/bwrap", bwrap_version="0.8.0",
        system=(SystemEntry("/usr"), SystemEntry("/bin", "usr/bin")), home="/home/op", hidden=("/home/op/.claude",),
        closure=("/opt/node_modules", "/opt/node_modules/.bin", "/home/op/.local/bin"),
        writable=(f"{scratch}/work", f"{scratch}/tmp"), governing=(f"{scratch}/hooks/pretooluse",),
        init=("/opt/venv/bin/python", "-m", "metaharness.shell.confine_init"), scratch=scratch, cwd=f"{scratch}/work", command=("claude", "-p", "x"),
        route=route, caller_uid=caller_uid,
    )  # fmt: skip


def test_the_rendered_view_in_order() -> None:
    argv = render_bwrap(plan_confinement(view(ModelRoute("http://e:1", CLAUDE_WIRE))).unwrap(), info_fd=5)
    assert argv[:11] == ("/usr/bin/bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--cap-drop", "ALL",
                         "--setenv", "PYTHONCOERCECLOCALE", "0", "--info-fd", "5")  # fmt: skip
    text = " ".join(argv)
    assert text.index("--ro-bind /usr /usr") < text.index("--symlink usr/bin /bin") < text.index("--tmpfs /tmp")
    assert text.index("--tmpfs /tmp") < text.index("--tmpfs /home/op") < text.index("--ro-bind /opt/node_modules")
    assert "/opt/node_modules/.bin" not in text
    assert text.index("--bind /tmp/metaharness-x/work") < text.index("--ro-bind /tmp/metaharness-x/hooks/pretooluse")
    assert argv[argv.index("--chdir") + 3 :] == (
        "/opt/venv/bin/python", "-m", "metaharness.shell.confine_init", "--bridge", str(BRIDGE_PORT), "--socket",
        "/tmp/metaharness-x/route.sock", "--", "claude", "-p", "x",
    )  # fmt: skip
    assert "--uid" not in argv
    assert render_bwrap(plan_confinement(view(caller_uid=0)).unwrap())[6:10] == ("--uid", "1000", "--gid", "1000")


def test_no_route_means_no_bridge_and_no_socket() -> None:
    argv = render_bwrap(plan_confinement(view()).unwrap())
    assert "--bridge" not in argv and not any(word.endswith("route.sock") for word in argv)


def test_a_closure_root_that_exposes_a_custody_tree_is_refused() -> None:
    refused = plan_confinement(msgspec.structs.replace(view(), closure=("/home/op",)))
    assert isinstance(refused, Failure) and refused.failure().code == "confine-read-exposes"


def test_the_attestation_gains_h12_and_h13() -> None:
    hermetic = Hermetic(
        mode="off", decisions="frame",
        imposed=(RowHow(row="H6", how="the child held a per-run placeholder"), RowHow(row="H8", how="hook")),
        declared=(), unavailable=(), ambient_inputs=("the git status", "the network is not isolated"),
        installed_plugins=(),
    )  # fmt: skip
    confinement = plan_confinement(view(ModelRoute("http://e:1", CLAUDE_WIRE))).unwrap()
    confined = confined_hermetic(hermetic, confinement, loopback=True, kind="claude")
    how = {entry.row: entry.how for entry in confined.imposed}
    assert how["H6"].endswith("; the custody file is outside the child's view")
    assert how["H8"].endswith("; the hook program and settings are read-only in the child's view")
    assert how["H12"].startswith("bwrap 0.8.0: read-only system, program closure /opt/node_modules, /home/op/.local/bin")
    assert how["H12"].endswith("; the caller's home and /tmp hidden")
    assert how["H13"] == "own network namespace; the model route to http://e:1 through /tmp/metaharness-x/route.sock"
    assert confined.ambient_inputs == ("the git status",)
    off = confined_hermetic(hermetic, None, loopback=True, kind="claude")
    assert [(why.row, why.why) for why in off.unavailable] == [
        ("H12", "--confine off: the child sees the caller's filesystem"),
        ("H13", "--confine off: the child sees the caller's network"),
        ("H14", "--confine off: the tools run beside the harness"),
    ]


def test_the_scratch_root_hooks_folder_and_slash_are_read_only_after_the_binds() -> None:
    """The renamed-``hooks/`` attack: the scratch root is an empty tmpfs holding only its mount points,
    ``hooks/`` is bound whole, then the scratch root and ``/`` are remounted read-only, last."""
    facts = msgspec.structs.replace(view(), resolver="/tmp/metaharness-x/resolv.conf")
    argv = render_bwrap(plan_confinement(facts).unwrap())
    text = " ".join(argv)
    assert text.index("--tmpfs /tmp ") < text.index("--tmpfs /tmp/metaharness-x ") < text.index("--bind /tmp/metaharness-x/work")
    assert text.index("--ro-bind /tmp/metaharness-x/hooks /tmp/metaharness-x/hooks") < text.index("--ro-bind /tmp/metaharness-x/hooks/pretooluse")
    assert "--ro-bind /tmp/metaharness-x/resolv.conf /etc/resolv.conf" in text
    assert text.endswith("--remount-ro /tmp/metaharness-x --remount-ro / --chdir /tmp/metaharness-x/work -- " + " ".join(argv[argv.index("--chdir") + 3 :]))


def tools_view() -> ConfinementFacts:
    grant = ToolGrant(writable=("/tmp/metaharness-x/work", "/tmp/metaharness-x/tmp"), reads=("/tmp/metaharness-x/catalogue.json",),
                      masked=("/tmp/metaharness-x/tmp/cc-socks",))  # fmt: skip
    return msgspec.structs.replace(view(ModelRoute("http://e:1", CLAUDE_WIRE)), tools=grant, reads=("/opt/rust",))


def test_the_tools_layer_holds_the_tree_and_tmpdir_and_nothing_else_of_the_scratch_root() -> None:
    layer = plan_confinement(tools_view()).unwrap().tools
    assert layer is not None and layer.entry == "/tmp/metaharness-x/layer/tools"
    script = render_tool_entry(layer).decode()
    assert script.startswith("#!/bin/sh\nexec '/usr/bin/bwrap' '--unshare-all' '--unshare-user' '--die-with-parent'")
    assert script.endswith("'--remount-ro' '/' '--' /bin/bash -c \"$1\"\n")
    bound = [mount.destination for mount in layer.mounts if mount.operation in ("bind", "ro-bind")]
    assert [path for path in bound if path.startswith("/tmp/metaharness-x")] == [
        "/tmp/metaharness-x/catalogue.json", "/tmp/metaharness-x/work", "/tmp/metaharness-x/tmp",
    ]  # fmt: skip
    assert {"/usr", "/opt/node_modules", "/home/op/.local/bin", "/opt/rust"} <= set(bound)
    assert [m.operation for m in layer.mounts if m.destination in ("/proc", "/tmp", "/home/op")] == ["tmpfs"] * 3
    assert "--ro-bind /proc/cpuinfo /proc/cpuinfo" in " ".join(render_bwrap(plan_confinement(tools_view()).unwrap()) + (render_tool_entry(layer).decode().replace("'", ""),))
    assert "--share-net" not in script and "route.sock" not in script
    assert script.index("'--bind' '/tmp/metaharness-x/tmp'") < script.index("'--tmpfs' '/tmp/metaharness-x/tmp/cc-socks'")
    argv_form = msgspec.structs.replace(layer, form="argv")
    assert render_tool_entry(argv_form).decode().endswith("'--' \"$@\"\n")


def test_h14_says_how_each_kind_s_tools_enter_the_inner_layer() -> None:
    hermetic = Hermetic(mode="off", decisions="frame", imposed=(RowHow(row="H3", how="environment constructed: PATH"),),
                        declared=(), unavailable=(), ambient_inputs=(), installed_plugins=())  # fmt: skip
    with_tools = plan_confinement(tools_view()).unwrap()
    claude = confined_hermetic(hermetic, with_tools, loopback=False, kind="claude")
    how = {entry.row: entry.how for entry in claude.imposed}
    assert how["H14"] == (
        "CLAUDE_CODE_SHELL_PREFIX starts every Bash command and MCP server in the tools' layer: own PID, mount and "
        "network namespace (no route), writable /tmp/metaharness-x/work, /tmp/metaharness-x/tmp, nothing else of the "
        "scratch root"
    )
    assert how["H3"] == "environment constructed: PATH, CLAUDE_CODE_SHELL_PREFIX"
    bare = plan_confinement(view()).unwrap()
    for kind in ("codex", "b10x"):
        unconfined_tools = confined_hermetic(hermetic, bare, loopback=False, kind=kind)
        assert [why.row for why in unconfined_tools.unavailable] == ["H14"]
        assert "H14" not in {entry.row for entry in unconfined_tools.imposed}
    assert tool_entry_variables("claude", (("PATH", "/bin"),), with_tools) == (
        ("CLAUDE_CODE_SHELL_PREFIX", "/tmp/metaharness-x/layer/tools"), ("PATH", "/bin"),
    )  # fmt: skip
    assert tool_entry_variables("codex", (("PATH", "/bin"),), bare) == (("PATH", "/bin"),)
    environment = ChildEnvironment((("PATH", "/bin"),), CredentialPosture((), None, (), "", ""))
    entered = tool_entry_environment("claude", environment, with_tools)
    assert entered.variables == tool_entry_variables("claude", (("PATH", "/bin"),), with_tools)
    assert entered.posture == environment.posture


def test_the_bridge_replaces_the_vendor_api() -> None:
    assert pointed_at_bridge("claude", (("PATH", "/bin"),)) == (
        ("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{BRIDGE_PORT}"), ("PATH", "/bin"),
    )  # fmt: skip
    assert dict(pointed_at_bridge("codex", ()))["OPENAI_BASE_URL"] == f"http://127.0.0.1:{BRIDGE_PORT}/v1"
    environment = ChildEnvironment((("PATH", "/bin"),), CredentialPosture((), None, (), "", ""))
    bridged = bridged_environment("codex", environment)
    assert bridged.variables == pointed_at_bridge("codex", (("PATH", "/bin"),)) and bridged.posture == environment.posture


CENSUS = Census(allowed=0, denied=1, replaced=0, abstained=0, by_seam={"hook": 1}, by_decider={"frame": 1})


def ended() -> SessionEnded:
    fields = {name: None for name in SessionEnded.__struct_fields__ if name not in ("census", "route", "rows")}
    return SessionEnded(**fields, census=CENSUS)


def result(call: str, is_error: bool) -> ToolResult:
    return ToolResult(exit_code=None, outcome_source=None, call_id=call, is_error=is_error, content=None, bytes=None,
                      tool_use_result=None)  # fmt: skip


def written(payloads: list, route: RouteTraffic | None = None) -> list[bytes]:
    writer, out = StreamWriter(Stream("r"), Amendment()), []
    for payload in payloads:
        writer, lines = write(writer, EventValue(payload), route)
        out += [line.encoded for line in lines]
    return out


def test_a_denied_call_with_an_error_result_passes_through_byte_for_byte() -> None:
    payloads = [ToolDecided(call_id="c1", decision=Deny(reason="no"), decided_by="frame", seam="hook", latency_ms=1),
                result("c1", True), ended(), StreamClosed(events=3, reason="completed", run_id="r", process=Exited(code=0))]  # fmt: skip
    assert written(payloads) == [encode_event(seq, "r", p) for seq, p in enumerate(payloads, start=1)]


def test_a_bypassed_decision_is_warned_counted_and_renumbered() -> None:
    payloads = [ToolDecided(call_id="c1", decision=Deny(reason="no"), decided_by="frame", seam="hook", latency_ms=1),
                result("c1", False), ended(), StreamClosed(events=3, reason="completed", run_id="r", process=Exited(code=0))]  # fmt: skip
    lines = [read_event(line).unwrap() for line in written(payloads, RouteTraffic(requests=2, bytes_up=3, bytes_down=4))]
    assert [line.seq for line in lines] == [1, 2, 3, 4, 5]
    warning = lines[2].payload
    assert warning.code == "DECISION_BYPASSED" and "c1" in warning.message
    assert lines[3].payload.census.bypassed == 1
    assert lines[3].payload.route == RouteTraffic(requests=2, bytes_up=3, bytes_down=4)
    assert lines[4].payload.events == 4


def test_a_successful_result_before_the_deny_is_a_bypass_too() -> None:
    payloads = [result("c2", False),
                ToolDecided(call_id="c2", decision=Deny(reason="late"), decided_by="embedder", seam="hook", latency_ms=9),
                ended()]  # fmt: skip
    lines = [read_event(line).unwrap() for line in written(payloads)]
    assert [line.seq for line in lines] == [1, 2, 3, 4]
    assert lines[2].payload.code == "DECISION_BYPASSED" and lines[3].payload.census.bypassed == 1
    assert lines[3].payload.route is msgspec.UNSET


def test_h7_on_codex_and_h11_under_cwd_in_the_view() -> None:
    hermetic = Hermetic(
        mode="off", decisions="frame", imposed=(), declared=(), ambient_inputs=(), installed_plugins=(),
        unavailable=(RowWhy(row="H7", why="the child runs in /home/op/repo"), RowWhy(row="H11", why="discoverable")),
    )  # fmt: skip
    confinement = plan_confinement(view()).unwrap()
    above = MemoryWalk(start="/home/op/repo", hits=(MemoryHit("/home/op/AGENTS.md", "AGENTS.md"),), root_names=())
    confined = confined_hermetic(hermetic, confinement, loopback=False, kind="codex", memory=above)
    assert [(why.row, why.why) for why in confined.unavailable][:1] == [
        ("H7", "the child runs in /home/op/repo; in the view that grant is the tree and TMPDIR")
    ]
    (h11,) = [entry for entry in confined.imposed if entry.row == "H11"]
    assert h11.how.startswith("the ancestor walk from /home/op/repo found /home/op/AGENTS.md, not in the view")
    assert [entry.row for entry in confined.imposed] == ["H11", "H12", "H13"]
    bound = MemoryWalk(start="/home/op/repo", hits=(MemoryHit("/opt/node_modules/AGENTS.md", "AGENTS.md"),),
                       root_names=())  # fmt: skip
    kept = confined_hermetic(hermetic, confinement, loopback=False, kind="claude", memory=bound)
    assert [why.row for why in kept.unavailable] == ["H7", "H11", "H14"] and kept.unavailable[0].why.endswith("/home/op/repo")


def requested(call: str, input: dict[str, str] | None = None) -> ToolRequested:
    return ToolRequested(call_id=call, name="file_write", input=input or {}, decision_required=True, deadline_ms=None,
                         seam="caller")  # fmt: skip


def test_a_call_id_presented_again_with_another_input_starts_afresh() -> None:
    payloads = [requested("call_0"), result("call_0", False), requested("call_0", {"path": "other"}),
                ToolDecided(call_id="call_0", decision=Deny(reason="mutated"), decided_by="adapter", seam="caller",
                            latency_ms=0), ended()]  # fmt: skip
    assert written(payloads) == [encode_event(seq, "r", p) for seq, p in enumerate(payloads, start=1)]


def test_the_same_call_presented_again_does_not_reset_the_bypass() -> None:
    payloads = [requested("c3"), result("c3", False), requested("c3"),
                ToolDecided(call_id="c3", decision=Deny(reason="no"), decided_by="embedder", seam="caller", latency_ms=0),
                ended()]  # fmt: skip
    lines = [read_event(line).unwrap() for line in written(payloads)]
    assert lines[4].payload.code == "DECISION_BYPASSED" and lines[5].payload.census.bypassed == 1


def test_a_denied_calls_success_after_the_terminal_record_is_forged_and_a_bypass() -> None:
    """Hostile: the first line after the terminal record is a denied call's success; it is named RECORD_FORGED and,
    as any later one would be, DECISION_BYPASSED (docs/events.md#census: a reader's census counts it)."""
    payloads = [requested("c4"),
                ToolDecided(call_id="c4", decision=Deny(reason="no"), decided_by="frame", seam="caller", latency_ms=0),
                ended(), result("c4", False)]  # fmt: skip
    lines = [read_event(line).unwrap() for line in written(payloads)]
    codes = [line.payload.code for line in lines[3:] if isinstance(line.payload, WarningRaised)]
    assert codes == ["DECISION_BYPASSED", "RECORD_FORGED"] and [line.seq for line in lines] == [1, 2, 3, 4, 5, 6]


def test_a_denied_call_recorded_again_with_another_input_still_counts_its_success_as_a_bypass() -> None:
    """Hostile, inside the desk's window: a hook denies a call, the record then shows the id with another input
    (seam ``none``: REQUEST_MUTATED, nothing decided) and a success; the deny is not forgotten, so it is a bypass."""
    payloads = [requested("c5"),
                ToolDecided(call_id="c5", decision=Deny(reason="no"), decided_by="frame", seam="caller", latency_ms=0),
                ToolRequested(call_id="c5", name="file_write", input={"path": "other"}, decision_required=False,
                              deadline_ms=None, seam="none"),
                result("c5", False), ended()]  # fmt: skip
    lines = [read_event(line).unwrap() for line in written(payloads)]
    assert lines[4].payload.code == "DECISION_BYPASSED" and lines[5].payload.census.bypassed == 1
