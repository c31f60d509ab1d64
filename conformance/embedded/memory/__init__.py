"""The bundled store's Memory Worker: the routes and their answers (:mod:`.http`), the SQLite
store behind them (:mod:`.store`) and its schema (:mod:`.schema`)."""
