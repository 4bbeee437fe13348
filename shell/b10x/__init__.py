"""The b10x adapter's shell: the live run loop, doctor and conformance I/O (docs/adapters/b10x.md)."""
