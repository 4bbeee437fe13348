"""The b10x loop's imperative shell: transport, tools, approver, credentials, sessions, the turn driver."""
