"""The b10x adapter's shell: the live run loop, doctor and conformance I/O (spec 40)."""
