"""Conformance data of the b10x adapter (docs/adapters/b10x.md#conformance-vectors); see vectors/b10x/README.md."""
