"""The time limits metaharness keeps: every deadline, timeout, grace, margin and poll interval a stage or
the shell waits by, named once with its reason, as ``pure/bounds.py`` does for sizes.

A leaf: it imports nothing. A budget a test would wait out on the real clock is also a parameter of the
function that uses it (docs/DEVELOPING.md#timers-in-tests); the value here is the default.
"""

from __future__ import annotations

# Decisions (docs/decisions.md#deadlines)

VENDOR_BUDGET_MS = 30000
"""The vendor's budget for one decision when its seam declares none (docs/decisions.md#deadlines)."""

DECISION_MARGIN_MS = 5000
"""metaharness decides this long before the vendor's budget ends, so an expired deadline is metaharness's
refusal and never an ambiguity with the vendor's own timeout (docs/decisions.md#deadlines)."""

MAX_DECISION_DEADLINE_S = 595
"""The longest ``--decision-deadline``: a hook budget of 600 s, Claude Code's own default for a command hook."""

HOOK_TIMEOUT_S = 60
"""The ``timeout`` the vendor adapters declare on their hook (docs/decisions.md#deadlines)."""

BACKSTOP_MARGIN_S = 3
"""The hook gives up this long before the vendor's timeout: 60 − 3 = 57 s (docs/adapters/common.md#vendor-decisions)."""

DOORBELL_TIMEOUT_S = 10
"""A metaharness that has read no doorbell for this long (gone, or stalled) costs a deny, never a vendor-killed
hook; long enough that a loaded machine's scheduling or a briefly slow reader of the stream is not a deny
(docs/adapters/common.md#vendor-decisions)."""

CALLBACK_TIMEOUT_S = 60
"""Claude Code's hook callback's declared timeout; metaharness's own deadline is 5 s shorter
(docs/decisions.md#deadlines)."""

# Stopping a child (docs/hermetic.md#exit-codes)

STOP_RETRY_S = 0.05
"""How soon a stop is tried again while no live loop's SIGTERM handler is installed."""

SEND_WAIT_S = 5
"""How long a line to Claude Code's stdin may wait for room before metaharness stops writing to it."""

GRACE_S = 5.0
"""Seconds between a stop's signal and the SIGKILL that follows it, when the child is still there."""

PIPE_DRAIN_S = 2.0
"""How long the child's pipes are still read after it exited, its group killed, before they count
as ended."""

EVAL_STOP_GRACE_S = 10.0
"""How long a timed-out eval run has between SIGTERM and SIGKILL (it winds up its own child first)."""

EVAL_TASK_TIMEOUT_S = 1800.0
"""An eval task's ``timeout`` when the plan gives none (docs/eval.md)."""

# Probing a vendor binary (docs/adapters/common.md#doctor; a run's own --version probe too)

PROBE_S = 10
"""A ``--version`` or ``--help`` probe of ``b10x-harness`` or ``claude``, which answer in well under a second."""

SLOW_PROBE_S = 30
"""A probe of ``codex`` or ``gemini``: npm's node launcher starts before the CLI itself (codex's native
binary, gemini's large bundle), seconds on a loaded machine."""

TRIAL_S = 5
"""The substrate's trial under ``--confine``: each trial argv (bubblewrap's namespaces) must end within this."""

ENDPOINT_CONNECT_S = 5.0
"""How long the connect to ``--model-endpoint`` may take before the endpoint counts as unreachable."""

RAY_CONNECT_S = 10
"""How long the connect to ``--ray HOST:PORT`` may take before no Ray cluster answers there
(``ray.init`` would wait for minutes)."""

# Watching a child

ROLLOUT_POLL_S = 0.025
"""How often codex's rollout is polled: every 25 ms (docs/adapters/codex.md)."""

NAMESPACE_WAIT_S = 60
"""How long the view's effect checks wait for the harness to appear below the view's init."""

NAMESPACE_SAMPLE_S = 0.01
"""How often the tools' effect check looks for the harness below the view's init, and reads its environment
again while it is still empty (between the harness's spawn and its exec)."""

SCRIPTED_SETTLE_S = 0.1
"""Conformance C3's scripted child pauses this long after its announcing line, so the run reads it
(codex: its 25 ms poll) before the hook rings."""

# The model route (docs/adapters/common.md#loopback-proxy)

CHILD_READ_S = 60
"""Seconds a child has to send one whole request (head and body) after connecting."""

UPSTREAM_CONNECT_S = 30
"""Seconds the route's connect to the upstream endpoint may take."""

UPSTREAM_IDLE_S = 300
"""Seconds the upstream may stay silent mid-response (a model thinking) before the exchange is ended."""

ROUTE_SETTLE_S = 2.0
"""How long the route's count waits for a request still being relayed when it is read."""

# b10x-harness, the project's own loop (docs/loop.md)

LOOP_CONNECT_S = 15.0
"""The loop's connect to its provider."""

LOOP_READ_S = 180.0
"""The loop's wait for the provider's next bytes while a turn streams."""

RETRY_AFTER_CAP_MS = 30_000
"""The longest ``Retry-After`` the loop honours; a longer one waits this long."""

LOOP_HOOK_TIMEOUT_S = 30.0
"""A ``--hooks`` program's time to answer before it is killed (docs/loop-extensions.md)."""

TOOL_RUN_TIMEOUT_S = 600.0
"""The longest one ``run`` tool call may take (less when the turn's deadline is nearer)."""

TOOL_ANSWER_TIMEOUT_MS = 600_000
"""The app-server bridge's default wait for the client's ``item/tool/call`` answer."""

ANSWER_POLL_S = 0.025
"""How often the bridge's waiting tool call looks for a cancelled turn or its deadline."""

LINE_POLL_S = 0.1
"""How often the bridge's turn loop wakes with no line read, to notice the server is ending."""

# The emulator and the viewer

SLOW_FRAME_DELAY_MS = 500
"""The emulator's pause before each frame of a ``slow`` answer."""

EMULATOR_POLL_S = 0.05
"""How often the emulator's server looks for its stop signal between requests."""

VIEW_REFRESHES_PER_S = 4
"""How often ``metaharness-view`` redraws a run in flight."""
