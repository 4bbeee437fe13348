"""Independent provider fixtures: loopback servers shaped after the real APIs, sharing no code with the wires."""
