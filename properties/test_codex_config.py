"""Property: the hand-rendered ``config.toml`` parses back to exactly what the launch decided, for any
effort text, endpoint host and mode (docs/adapters/codex.md: strings escape ``\\`` and ``"``)."""

from __future__ import annotations

import tomllib

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.codex.launch import CodexRunSpec, plan_codex_launch, render_config
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate

FACTS = {"/operator/.local/bin/codex": ProgramCandidate(regular=True, executable=True)}


@settings(max_examples=150)
@given(
    effort=st.one_of(st.none(), st.text(max_size=30)),
    port=st.integers(min_value=1, max_value=65535),
    decisions=st.sampled_from(["frame", "ask", "observe"]),
    cwd=st.one_of(st.none(), st.just("/home/op/repo")),
    loopback=st.booleans(),
)
def test_config_round_trips_and_never_shadows_the_hook(effort, port, decisions, cwd, loopback):
    if loopback:
        declaration = EnvironmentDeclaration(
            kind="codex", credentials="loopback", loopback_port=str(port), loopback_placeholder="mh-run-x"
        )
    else:
        declaration = EnvironmentDeclaration(
            kind="codex", credentials="none", model_endpoint=f"http://127.0.0.1:{port}"
        )
    spec = CodexRunSpec(prompt="p", decisions=decisions, effort=effort, cwd=cwd, environment=declaration)
    launch = plan_codex_launch(spec, {"HOME": "/operator"}, "/scratch/run", FACTS).unwrap()
    parsed = tomllib.loads(render_config(launch.config))
    assert parsed["approval_policy"] == "never"
    assert parsed["sandbox_mode"] == ("read-only" if cwd is None else "workspace-write")
    assert parsed.get("model_reasoning_effort") == effort
    assert parsed["mcp_servers"] == {}
    (group,) = parsed["hooks"]["PreToolUse"]
    assert group == {"hooks": [{"type": "command", "command": "'/scratch/run/hooks/pretooluse'", "timeout": 60}]}
    (name,) = parsed["model_providers"]
    assert parsed["model_provider"] == name
    assert parsed["model_providers"][name]["base_url"] == f"http://127.0.0.1:{port}/v1"
    assert parsed["model_providers"][name]["wire_api"] == "responses"
    assert ("env_key" in parsed["model_providers"][name]) == loopback
    # under --cwd the workspace grant narrows to the tree and TMPDIR, never /tmp, where the scratch root lies
    assert parsed.get("sandbox_workspace_write") == (None if cwd is None else {"exclude_slash_tmp": True})
    forbidden = ("danger-full-access", "writable_roots", "projects", "untrusted")
    assert not any(word in render_config(launch.config).replace(effort or "", "") for word in forbidden)
