"""The deterministic provider emulator's decisions (docs/loop.md#emulator): request facts, scenario replies, the
SSE and JSON renderings of both wires, and the record line. The shell only moves bytes."""
