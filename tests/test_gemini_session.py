"""The gemini session's pure stages with unit facts (docs/adapters/gemini.md#correlation, #record-mapping, #seam):
a hook call matched to the record's ``tool_use`` by name and canonical input in either order, the answer bodies,
the record mapping and the launch planner's settings and refusals."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from codex_process import well_formed

from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.events import Abstain, Allow, Deny, EventValue, Exited, Hermetic, Replace, Stream, Transcript
from metaharness.pure.gemini.hook import BLOCKING_EXIT, gemini_hook_answer, render_gemini_hook
from metaharness.pure.gemini.launch import GeminiRunSpec, plan_gemini_launch
from metaharness.pure.gemini.record import RecordFacts
from metaharness.pure.gemini.session import (
    STEPS,
    Session,
    answered,
    hook_request,
    open_session,
    read_line,
    wind_up,
    with_version,
)
from metaharness.pure.hook_channel import HookAnswer
from metaharness.pure.stream_writer import write_line

HERMETIC = Hermetic(mode="off", decisions="observe", imposed=(), declared=(), unavailable=(), ambient_inputs=(),
                    installed_plugins=())  # fmt: skip
FACTS = RecordFacts(transcript=Transcript(path="/s/stream.jsonl", digest=None, bytes=None), hermetic=HERMETIC,
                    cwd="/w", model="gemini-2.5-pro", harness_version="0.61.0")  # fmt: skip
WRITE = {"file_path": "note.md", "content": "x\n"}


def line(**record: Any) -> bytes:
    return json.dumps(record).encode()


def tool_use(tool_id: str, name: str = "write_file", parameters: Any = WRITE) -> bytes:
    return line(type="tool_use", timestamp="2026-12-01T00:00:01.000Z", tool_name=name, tool_id=tool_id,
                parameters=parameters)  # fmt: skip


def hook(name: str = "write_file", tool_input: Any = WRITE) -> bytes:
    return json.dumps({"session_id": "s", "cwd": "/w", "hook_event_name": "BeforeTool", "tool_name": name,
                       "tool_input": dict(reversed(list(tool_input.items())))}).encode()  # fmt: skip


class Run:
    """A session driven by hand; effects collected, hook answers delivered at once."""

    def __init__(self, mode: str = "observe") -> None:
        self.session: Session = open_session(FACTS, "r", mode, None)  # type: ignore[arg-type]
        self.lines: list[bytes] = []
        self.stream = Stream("r")
        self.answers: list[HookAnswer] = []
        self.number = 0

    def perform(self, taken: tuple[Session, tuple[Any, ...]]) -> None:
        self.session, effects = taken
        for effect in effects:
            if isinstance(effect, EventValue):
                self.write(effect)
            elif isinstance(effect, HookAnswer):
                self.answers.append(effect)
                self.perform(answered(self.session, True))

    def write(self, value: EventValue) -> None:
        self.stream, line = write_line(self.stream, value)
        self.lines.append(line)

    def record(self, raw: bytes) -> None:
        self.number += 1
        self.perform(read_line(self.session, self.number, raw))

    def hook(self, key: str, raw: bytes) -> None:
        self.perform(hook_request(self.session, key, raw))

    def close(self) -> list[dict]:
        self.perform(STEPS.end_of_record(self.session))
        self.session, effects, _ = wind_up(self.session, process=Exited(code=0))
        for effect in effects:
            if isinstance(effect, EventValue):
                self.write(effect)
        return well_formed(self.lines)


def of(events: list[dict], name: str) -> list[dict]:
    return [event for event in events if event["event"] == name]


def ended() -> bytes:
    return line(type="result", status="success", stats={"input_tokens": 5, "output_tokens": 2, "cached": 1})


def test_the_version_a_probe_beside_the_spawn_answered_is_the_one_session_started_states() -> None:
    run = Run()
    run.session = with_version(open_session(msgspec.structs.replace(FACTS, harness_version=None), "r", "observe", None),
                               "0.61.1")  # fmt: skip
    run.record(line(type="init", session_id="s", model="gemini-2.5-pro"))
    run.record(ended())
    (started,) = of(run.close(), "session.started")
    assert started["harness_version"] == "0.61.1"


def test_a_hook_call_after_its_announcement_takes_the_record_id() -> None:
    run = Run()
    run.record(line(type="init", session_id="s", model="gemini-2.5-pro"))
    run.record(tool_use("write_file__a"))
    run.hook("K1", hook())
    run.record(line(type="tool_result", tool_id="write_file__a", status="success"))
    run.record(ended())
    events = run.close()
    (requested,) = of(events, "tool.requested")
    assert requested["call_id"] == "write_file__a" and requested["seam"] == "hook"
    assert [e["call_id"] for e in of(events, "tool.result")] == ["write_file__a"]
    assert [answer.key for answer in run.answers] == ["K1"]
    assert not of(events, "warning")


def test_a_hook_call_before_its_announcement_is_presented_at_once_and_the_record_follows_its_id() -> None:
    run = Run()
    run.record(line(type="init", session_id="s"))
    run.hook("K1", hook())
    run.record(tool_use("write_file__a"))
    run.record(line(type="tool_result", tool_id="write_file__a", status="success"))
    run.record(ended())
    events = run.close()
    (requested,) = of(events, "tool.requested")
    assert requested["call_id"] == "hook:K1" and requested["seam"] == "hook"
    assert [e["call_id"] for e in of(events, "tool.result")] == ["hook:K1"]
    assert not of(events, "warning")


def test_twin_calls_pair_oldest_first_and_a_differing_input_never_pairs() -> None:
    run = Run()
    run.record(line(type="init", session_id="s"))
    run.record(tool_use("write_file__a"))
    run.record(tool_use("write_file__b"))
    run.record(tool_use("write_file__c", parameters={"file_path": "other.md", "content": "x\n"}))
    run.hook("K1", hook())
    run.hook("K2", hook())
    for tool_id in ("write_file__a", "write_file__b", "write_file__c"):
        run.record(line(type="tool_result", tool_id=tool_id, status="success"))
    run.record(ended())
    events = run.close()
    hooked = [e["call_id"] for e in of(events, "tool.requested") if e["seam"] == "hook"]
    assert hooked == ["write_file__a", "write_file__b"]
    (gap,) = [e for e in of(events, "warning") if e["code"] == "COVERAGE_GAP"]
    assert "write_file__c" in gap["message"]
    (unhooked,) = [e for e in of(events, "tool.requested") if e["seam"] == "none"]
    assert unhooked["call_id"] == "write_file__c"


def test_an_unreadable_hook_request_is_denied() -> None:
    run = Run("observe")
    run.record(line(type="init", session_id="s"))
    run.hook("K1", b"not json")
    (answer,) = run.answers
    assert json.loads(answer.body)["decision"] == "deny"


def test_the_record_maps_text_results_and_the_end() -> None:
    run = Run()
    run.record(line(type="init", session_id="s", model="m"))
    run.record(line(type="message", role="user", content="do it"))
    run.record(line(type="message", role="assistant", content="half ", delta=True))
    run.record(line(type="message", role="assistant", content="done", delta=True))
    run.record(tool_use("run_shell_command__1", "run_shell_command", {"command": "ls | wc -l"}))
    run.record(line(type="tool_result", tool_id="run_shell_command__1", status="error",
                    error={"type": "policy_violation", "message": "Tool execution blocked: no"}))  # fmt: skip
    run.record(line(type="result", status="error", error={"type": "FatalTurnLimitedError"}, stats={}))
    events = run.close()
    started = of(events, "session.started")[0]
    assert (started["adapter"], started["model"], started["harness_version"], started["cwd"]) == (
        "gemini", "m", "0.61.0", None)
    assert [e["text"] for e in of(events, "text")] == ["half done"]
    (requested,) = of(events, "tool.requested")
    assert requested["subjects"] == ["proc:sh"] and requested["operations"] == ["shell"]
    (result,) = of(events, "tool.result")
    assert result["is_error"] is True and result["content"] == "Tool execution blocked: no"
    end = of(events, "session.ended")[0]
    assert end["is_error"] is True and end["terminal_reason"] == "FatalTurnLimitedError"
    assert end["final_answer"] == {"text": "half done", "turn_id": None}
    assert events[-1]["reason"] == "error"
    assert of(events, "opaque")[0]["vendor_type"] == "message"


def test_the_hook_answers_in_gemini_shape() -> None:
    assert json.loads(gemini_hook_answer(Allow())) == {"decision": "allow"}
    assert json.loads(gemini_hook_answer(Deny(reason="no"))) == {"decision": "deny", "reason": "no"}
    assert json.loads(gemini_hook_answer(Deny(reason=" ")))["reason"].startswith("metaharness denied this call")
    replaced = json.loads(gemini_hook_answer(Replace(input={"command": "true"})))
    assert replaced["hookSpecificOutput"] == {"hookEventName": "BeforeTool", "tool_input": {"command": "true"}}
    assert gemini_hook_answer(Abstain()) == b""
    program = render_gemini_hook("/s", 60)
    assert program.count(f"exit {BLOCKING_EXIT}") == 1 and "IFS= read -r -t 47 -u 3 woken" in program
    assert '{"decision":"deny"' in program and "hookSpecificOutput" not in program


CANDIDATES = {"/h/.local/bin/gemini": ProgramCandidate(regular=True, executable=True)}


def planned(entries: tuple[str, ...] = (), **spec: Any) -> Any:
    base: dict[str, Any] = {"prompt": "do it", "cwd": "/w",
                            "environment": EnvironmentDeclaration(kind="gemini", credentials="none",
                                                                  model_endpoint="http://127.0.0.1:5")}  # fmt: skip
    caller = {"PATH": "/bin", "HOME": "/h", "GEMINI_CLI_SYSTEM_SETTINGS_PATH": "/x", "GOOGLE_API_KEY": "k"}
    return plan_gemini_launch(GeminiRunSpec(**{**base, **spec}), caller, "/s", CANDIDATES,
                              workspace_entries=entries)  # fmt: skip


def test_the_launch_writes_one_settings_file_and_a_constructed_environment() -> None:
    launch = planned().unwrap()
    settings = launch.settings
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert settings["advanced"] == {"ignoreLocalEnv": True} and settings["context"] == {"memoryBoundaryMarkers": []}
    assert settings["hooksConfig"] == {"enabled": True} and settings["mcpServers"] == {}
    assert settings["general"] == {"maxAttempts": 1, "retryFetchErrors": False}
    (group,) = settings["hooks"]["BeforeTool"]
    assert group["hooks"] == [{"type": "command", "command": "'/s/hooks/pretooluse'", "timeout": 60000}]
    assert launch.args[0] == "-p" and launch.args[2:] == (
        "--model", "gemini-2.5-pro", "--output-format", "stream-json", "--skip-trust", "--approval-mode", "yolo")
    environment = dict(launch.environment.variables)
    assert environment["GEMINI_CLI_HOME"] == "/s/gemini-home"
    assert environment["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:5"
    assert environment["GEMINI_API_KEY"] == "metaharness-model-endpoint"
    assert environment["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] == "/s/gemini-system/settings.json"
    assert environment["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"] == "/s/gemini-system/system-defaults.json"
    assert "GOOGLE_API_KEY" not in environment and "/x" not in environment.values()
    assert [item.path for item in launch.files] == ["/s/gemini-home/.gemini/settings.json", "/s/hooks/pretooluse"]


def test_a_work_tree_with_its_own_gemini_folder_is_shadowed() -> None:
    refusal = planned(entries=(".gemini",)).failure()
    assert refusal.code == "shadowed" and "/w/.gemini" in refusal.message


def test_a_short_hook_timeout_reaches_both_the_settings_and_the_backstop() -> None:
    launch = planned(hook_timeout_s=4).unwrap()
    assert launch.settings["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] == 4000
    hook_file = next(item for item in launch.files if item.path.endswith("pretooluse"))
    assert b"IFS= read -r -t 1 -u 3 woken || deny" in hook_file.data and hook_file.mode == 0o700


def test_capabilities_state_the_pin_the_modes_and_the_rendering() -> None:
    from metaharness.pure.capabilities import descriptor_json

    document = json.loads(descriptor_json("gemini"))
    assert document["adapter"] == {"id": "gemini", "class": "harness"}
    assert document["versions_pinned"] == ["0.61.0"]
    assert document["decision_modes"] == {"ask": "delivered", "frame": "delivered", "observe": "delivered"}
    assert document["rendering"]["shell"] == "run_shell_command" and document["rendering"]["mcp.call"] is None
