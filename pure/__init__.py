"""The pure half of metaharness: every decision as a function over frozen structs.

Nothing here reads a file, a clock, the environment or a socket; facts come in as arguments and
refusals leave as values (``returns.result.Result`` carrying a :class:`~metaharness.pure.refusal.Refusal`).
"""
