"""An evaluation plan, its checks, its results and its report (docs/eval.md)."""
