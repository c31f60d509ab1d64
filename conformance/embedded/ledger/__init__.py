"""The bundled store's ledger binding: the entry points and methods (:mod:`.service`), the state
and the lifecycle steps the methods share (:mod:`.core`), the ``_test/*`` controls
(:mod:`.controls`), the consolidation gate (:mod:`.consolidation`), params (:mod:`.params`),
times (:mod:`.time`), wire shapes and the packet (:mod:`.records`) and SQLite (:mod:`.store`);
one call by name for both of its forms (:mod:`.dispatch`) and the JSON-RPC over WebSocket form
(:mod:`.jsonrpc`)."""
