"""Benchmark-only instruments of a lane (``benchmarks.bench_harness``): every request a lane's
target client sends (:class:`Recorder`), the time spent in the model and oracle
(:class:`OracleTimer`), and :func:`install` -- the hook a worker process runs on its lanes
(``WorkerSetup.hook``) so that its lanes' requests come back to the benchmark.  Nothing here
loads the bundled store."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.oracle.memory import MemoryOracle
from conformance.targets.base import HttpTarget
from conformance.vocabulary import Exchange


@dataclass
class Sent:
    kind: str  # "request" | "raw" | "ahead" (kwargs["requests"], written in one write)
    method: str
    path: str
    kwargs: dict[str, Any]

    @property
    def count(self) -> int:
        """How many requests this is."""
        return len(self.kwargs["requests"]) if self.kind == "ahead" else 1


class Recorder:
    """Wraps a target's ``request``/``raw``/``write_ahead``/``read_ahead``: keeps every request
    (those written ahead as one group, as they were written) and the time spent in HTTP."""

    def __init__(self, target: HttpTarget) -> None:
        self.sent: list[Sent] = []
        self.http_s = 0.0
        self._request = target.request
        self._raw = target.raw
        self._write_ahead = target.write_ahead
        self._read_ahead = target.read_ahead
        target.request = self.request  # type: ignore[method-assign]
        target.raw = self.raw  # type: ignore[method-assign]
        target.write_ahead = self.write_ahead  # type: ignore[method-assign]
        target.read_ahead = self.read_ahead  # type: ignore[method-assign]

    def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Exchange:
        self.sent.append(Sent("request", method, path, {"args": args, **kwargs}))
        t = time.perf_counter()
        try:
            return self._request(method, path, *args, **kwargs)
        finally:
            self.http_s += time.perf_counter() - t

    def raw(self, method: str, path: str, **kwargs: Any) -> Exchange:
        self.sent.append(Sent("raw", method, path, kwargs))
        t = time.perf_counter()
        try:
            return self._raw(method, path, **kwargs)
        finally:
            self.http_s += time.perf_counter() - t

    def write_ahead(self, requests: list[tuple[str, str, Any]]) -> bool:
        t = time.perf_counter()
        try:
            written = self._write_ahead(requests)
        finally:
            self.http_s += time.perf_counter() - t
        if written:  # else nothing went out: the requests sent one at a time are recorded
            self.sent.append(Sent("ahead", "", "", {"requests": list(requests)}))
        return written

    def read_ahead(self) -> Exchange:
        t = time.perf_counter()
        try:
            return self._read_ahead()
        finally:
            self.http_s += time.perf_counter() - t


class OracleTimer:
    """Times ``MemoryOracle.allowed`` and ``judge`` (the model runs inside them)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> OracleTimer:
        for name in ("allowed", "judge"):
            original = MemoryOracle.__dict__.get(name)
            if original is None:
                continue
            self._saved[name] = original
            setattr(MemoryOracle, name, self._timed(original))
        return self

    def _timed(self, fn: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t

        return timed

    def __exit__(self, *exc: object) -> None:
        for name, original in self._saved.items():
            setattr(MemoryOracle, name, original)


def install(drivers: list[Any]) -> Callable[[], dict[str, Any]]:
    """The worker's hook: record every lane's requests and time its oracle; the function
    returned hands it all back (per lane, in lane order) when the worker stops."""
    recs = [Recorder(d.target) for d in drivers]
    timer = OracleTimer().__enter__()
    cpu0 = time.process_time()

    def collect() -> dict[str, Any]:
        timer.__exit__()
        return {
            "sent": [r.sent for r in recs],
            "http_s": sum(r.http_s for r in recs),
            "oracle_s": timer.seconds,
            "slept_s": sum(d.spacing_slept_s for d in drivers),
            "cpu_s": time.process_time() - cpu0,
        }

    return collect
