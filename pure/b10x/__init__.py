"""The b10x adapter's pure stages: launch planning, the record seam and the conformance vectors (spec 40)."""
