"""Target clients: one per protocol, HTTP only, each with the target's capabilities."""
