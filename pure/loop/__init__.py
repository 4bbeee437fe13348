"""The b10x loop's decisions (docs/loop.md#command-line, #the-record, #the-turn-loop, #approvals, #tools,
#standing-instruction): record, approvals, tools, paths, instruction, budgets."""
