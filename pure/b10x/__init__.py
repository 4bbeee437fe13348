"""The b10x adapter's pure stages: launch planning, the record seam and the conformance vectors
(docs/adapters/b10x.md)."""
