"""memspec conformance: targets, scenarios, oracle, state machines, reports, CLI, bundled store."""
