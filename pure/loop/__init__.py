"""The b10x loop's decisions (spec 60 §1–§6): record, approvals, tools, paths, instruction, budgets."""
