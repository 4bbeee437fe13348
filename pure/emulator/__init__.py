"""The deterministic provider emulator's decisions (spec 60 §8): request facts, scenario replies, the
SSE and JSON renderings of both wires, and the record line. The shell only moves bytes."""
