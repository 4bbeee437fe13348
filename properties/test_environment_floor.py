"""For any parent environment the child's environment is exactly the declared floor
(docs/hermetic.md#environment-floor, #credentials)."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from returns.result import Success

from metaharness.pure.environment import (
    CALLER_VARIABLES,
    EnvironmentDeclaration,
    child_environment,
    credential_posture,
    path_floor,
)

LOOK_ALIKES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "OPENAI_API_KEY_2",
    "openai_api_key",
    "CLAUDE_CODE_SAFE_MODE",
    "CODEX_DISABLE_HOOKS",
    "AWS_SECRET_ACCESS_KEY",
    "GITHUB_TOKEN",
    "HTTPS_PROXY",
    "no_proxy",
    "SSH_AUTH_SOCK",
    "SHELL",
    "XDG_CONFIG_HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "TMPDIR",
    "PATH",
    "METAHARNESS_LOOPBACK_KEY",
    "DBUS_SESSION_BUS_ADDRESS",
    "RUSTUP_HOME",
    "AEP_ACTOR",
    *CALLER_VARIABLES,
)
NAMES = st.one_of(st.sampled_from(LOOK_ALIKES), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True))
VALUES = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
CALLERS = st.dictionaries(NAMES, VALUES, max_size=25)


def declared_floor(kind: str, caller: dict[str, str], scratch: str) -> dict[str, str]:
    """The floor of docs/hermetic.md#environment-floor for a run declaring nothing but operator-login, written
    out longhand."""
    floor = {"PATH": path_floor(caller)}
    if kind == "b10x":
        floor["XDG_CONFIG_HOME"] = scratch + "/config"
        return floor
    floor.update({key: caller[key] for key in ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TZ") if key in caller})
    floor["TMPDIR"] = scratch + "/tmp"
    if kind == "claude":
        floor["CLAUDE_CONFIG_DIR"] = scratch + "/claude-home"
    else:
        floor["CODEX_HOME"] = scratch + "/codex-home"
    return floor


@settings(max_examples=200)
@given(
    caller=CALLERS,
    kind=st.sampled_from(["claude", "codex", "b10x"]),
    credentials=st.sampled_from(["operator-login", "none"]),
)
def test_child_environment_is_exactly_the_declared_floor(caller: dict[str, str], kind: str, credentials: str) -> None:
    declaration = EnvironmentDeclaration(kind=kind, credentials=credentials)  # type: ignore[arg-type]
    decided = credential_posture(declaration, caller, True)
    assume(isinstance(decided, Success))
    posture = decided.unwrap()
    result = child_environment(declaration, caller, "/tmp/mh-9", posture)
    assert isinstance(result, Success)
    assert result.unwrap().as_dict() == declared_floor(kind, caller, "/tmp/mh-9")


@settings(max_examples=200)
@given(caller=CALLERS, kind=st.sampled_from(["claude", "codex", "b10x"]), key=VALUES.filter(bool))
def test_api_key_adds_exactly_one_key_variable(caller: dict[str, str], kind: str, key: str) -> None:
    name = "ANTHROPIC_API_KEY" if kind == "claude" else "OPENAI_API_KEY"
    caller = {**caller, name: key}
    declaration = EnvironmentDeclaration(kind=kind, credentials="api-key")  # type: ignore[arg-type]
    posture = credential_posture(declaration, caller, False).unwrap()
    environment = child_environment(declaration, caller, "/tmp/mh-9", posture).unwrap().as_dict()
    assert environment == {**declared_floor(kind, caller, "/tmp/mh-9"), name: key}


@st.composite
def b10x_declarations(draw: st.DrawFn) -> EnvironmentDeclaration:
    credentials = draw(st.sampled_from(["operator-login", "api-key", "none"]))
    secret = draw(st.none() | st.just("openai/main")) if credentials == "api-key" else None
    token_env = draw(st.none() | NAMES) if credentials != "api-key" else None
    return EnvironmentDeclaration(
        kind="b10x",
        credentials=credentials,  # type: ignore[arg-type]
        api_key_secret=secret,
        subscription_token_env=token_env,
        toolchain=draw(st.none() | st.just("stable")),
        actor=draw(st.none() | st.text(min_size=1, max_size=8)),
    )


def b10x_oracle(declaration: EnvironmentDeclaration, caller: dict[str, str], scratch: str) -> dict[str, str]:
    """docs/adapters/b10x.md#environment's table, written out longhand."""
    expected = {"PATH": path_floor(caller), "XDG_CONFIG_HOME": scratch + "/config"}
    if declaration.credentials == "api-key" and declaration.api_key_secret is None:
        expected["OPENAI_API_KEY"] = caller["OPENAI_API_KEY"]
    if declaration.api_key_secret is not None:
        expected.update({k: caller[k] for k in ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR") if k in caller})
    if declaration.subscription_token_env is not None:
        expected[declaration.subscription_token_env] = caller[declaration.subscription_token_env]
    if declaration.toolchain is not None:
        expected.update({k: caller[k] for k in ("RUSTUP_HOME", "CARGO_HOME") if k in caller})
    if declaration.actor is not None:
        expected["AEP_ACTOR"] = declaration.actor
    return expected


@settings(max_examples=300)
@given(caller=CALLERS, declaration=b10x_declarations())
def test_b10x_child_holds_exactly_the_keys_its_declaration_puts_there(
    caller: dict[str, str], declaration: EnvironmentDeclaration
) -> None:
    posture = credential_posture(declaration, caller, False)
    key_missing = declaration.credentials == "api-key" and declaration.api_key_secret is None
    token_missing = declaration.subscription_token_env not in (None, *caller)
    if key_missing and not caller.get("OPENAI_API_KEY"):
        assert posture.failure().code == "api-key-missing"
        return
    if token_missing:
        assert posture.failure().code == "subscription-token-env-unset"
        return
    built = child_environment(declaration, caller, "/tmp/mh-9", posture.unwrap())
    floor = {"PATH", "XDG_CONFIG_HOME"} | ({"AEP_ACTOR"} if declaration.actor is not None else set())
    if declaration.toolchain is not None:
        floor |= {key for key in ("RUSTUP_HOME", "CARGO_HOME") if key in caller}
    if declaration.subscription_token_env in floor:
        assert built.failure().code == "denied-environment"
        return
    assert built.unwrap().as_dict() == b10x_oracle(declaration, caller, "/tmp/mh-9")
