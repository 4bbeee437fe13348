"""metaharness-eval: packing, running and collecting the governed runs of a plan (docs/eval.md)."""
