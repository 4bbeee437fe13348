"""Conformance data of the b10x adapter (spec 40 §10); see vectors/b10x/README.md."""
