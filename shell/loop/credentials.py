"""Credential sources (docs/loop.md#credentials): API keys read once at start, OAuth tokens at start and per attempt.

A value never reaches the record, stderr, a session file or a ``run`` child; messages name the source.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from returns.result import Failure, Result, Success

from metaharness.pure.loop.credential import RUNTIME_DIR_VARIABLE, SESSION_BUS_VARIABLE, credential_from_text
from metaharness.pure.loop.plan import CredentialChoice
from metaharness.shell.loop.secret_store import read_secret_store

SUFFIXES = {"file": "-file", "environment": "-env", "secret-store": "-secret"}


def _where(choice: CredentialChoice) -> str:
    flag = "--api-key" if choice.kind == "api-key" else "--oauth-token"
    return f"{flag}{SUFFIXES[choice.origin]} {choice.name}"


def read_credential(choice: CredentialChoice, environment: Mapping[str, str]) -> Result[str, str]:
    """The credential's value now, or why it cannot be had (no value in the text)."""
    where = _where(choice)
    if choice.origin == "environment":
        if choice.name not in environment:
            return Failure(f"{where} names a variable that is not set")
        text = environment[choice.name]
    elif choice.origin == "secret-store":
        stored = read_secret_store(choice.name, environment)
        if isinstance(stored, Failure):
            return stored
        text = stored.unwrap()
    else:
        try:
            with open(choice.name, "rb") as handle:
                raw = handle.read()
        except OSError as error:
            return Failure(f"{where} cannot be read: {error.strerror}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return Failure(f"{where} is not UTF-8")
    return credential_from_text(text, choice.pointer, where)


class CredentialSource:
    """Yields the credential for each attempt: the start value for API keys, a fresh read for OAuth."""

    def __init__(self, choice: CredentialChoice | None, first: str | None) -> None:
        self.choice = choice
        self._api_key = first if choice is not None and choice.kind == "api-key" else None

    def current(self) -> Result[str | None, str]:
        """The value to present on this attempt (``None`` without a source)."""
        if self.choice is None:
            return Success(None)
        if self.choice.kind == "api-key":
            return Success(self._api_key)
        fresh: Result[str | None, str] = read_credential(self.choice, os.environ)
        return fresh

    def hidden_variables(self) -> tuple[str, ...]:
        """Environment names a ``run`` child must not inherit: the key's variable, or under the secret store
        the two variables that lead to the session bus, so a child is not handed the way to the key."""
        if self.choice is not None and self.choice.origin == "environment":
            return (self.choice.name,)
        if self.choice is not None and self.choice.origin == "secret-store":
            return (SESSION_BUS_VARIABLE, RUNTIME_DIR_VARIABLE)
        return ()
