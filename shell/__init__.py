"""The imperative half of metaharness: gathers facts, calls the pure stages, performs what they decided."""
