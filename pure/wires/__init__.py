"""Provider wires (docs/loop.md#provider-wires): the neutral model port, the SSE framer and the two projections,
all sans-I/O."""
