"""Provider wires (spec 60 §7): the neutral model port, the SSE framer and the two projections, all sans-I/O."""
