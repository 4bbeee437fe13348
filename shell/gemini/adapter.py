"""Gemini CLI's live parts behind ``metaharness.shell.adapters.LiveAdapter``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaharness.pure.refusal import Refusal

if TYPE_CHECKING:
    from metaharness.pure.options import RunOptions
    from metaharness.shell.adapters import ScriptedChild, VectorReport


class GeminiLive:
    """gemini's run and doctor; its conformance vectors are not built yet, and its C3 scripts no child."""

    def run(self, options: RunOptions) -> int:
        from metaharness.shell.gemini.run import run_gemini

        return run_gemini(options)

    def doctor(self) -> int:
        from metaharness.shell.gemini.doctor import run_gemini_doctor

        return run_gemini_doctor()

    def vectors(self) -> VectorReport | Refusal:
        return Refusal("not-built", "conformance vectors for gemini are not built in this build: they wait for "
                                    "vectors/gemini/ (docs/adapters/gemini.md#conformance)")

    def scripted_child(self) -> ScriptedChild | None:
        return None


LIVE = GeminiLive()
