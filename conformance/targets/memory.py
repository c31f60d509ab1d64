"""The Memory Worker target: ``/healthz``, ``/retrieve``, ``/write``, ``/list``, ``/forget``.

Capabilities a memory target can have (probed where the protocol allows, else declared):

``raw_http``       raw socket requests (``http://`` targets) — the Content-Length fence cases
``auth``           the run holds the target's bearer token
``memory.list``    ``POST /list`` exists (§26) — probed: an empty body is 400, not 404
``memory.forget``  ``POST /forget`` exists (§26) — probed the same way
``memory.cap``     ``/write`` honours ``cap`` (§27–29) — probed with a *valid* cap: an empty
                   batch with ``cap: 1`` (a no-op) answers 200 with an ``evicted`` count (§28);
                   an older store, ignoring the unknown field, answers without one.  A 400 to
                   that valid cap counts as having caps too, so the cap scenarios run and show
                   the refusal.  Never probed with an invalid value: a store wrongly accepting
                   ``cap: 0`` must fail the cap's validation, not read as lacking caps; a store
                   answering ``evicted`` but ignoring ``cap`` is judged by its evictions

Probing never writes: every probe is a request the protocol refuses before touching storage,
or an empty batch into a key unique to the run.
"""

from __future__ import annotations

from typing import Any

from conformance.errors import TargetError
from conformance.jsonutil import short_json
from conformance.scrub import shown
from conformance.targets.base import AUTH, Auth, HttpTarget, token_refused
from conformance.vocabulary import Exchange, TargetConfig

DATA_ROUTES = ("/retrieve", "/write", "/list", "/forget")
LIST = "memory.list"
FORGET = "memory.forget"
CAP = "memory.cap"


class MemoryTarget(HttpTarget):
    """A Memory Worker reached over HTTP."""

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        self._caps: frozenset[str] | None = None

    def healthz(self) -> Exchange:
        return self.request("GET", "/healthz", auth=False)

    def post(self, path: str, body: Any, *, auth: Auth = True) -> Exchange:
        return self.request("POST", path, body, auth=auth)

    def probe(self, probe_scope: str) -> frozenset[str]:
        """Check the target answers and accepts the token; find its capabilities.

        Raises :class:`TargetError` when ``/healthz`` does not answer 200 with ``{"ok": true}``
        or when the token is refused (401 on a data route) — a run would judge nothing.
        ``probe_scope`` is a scope key unique to this run (the cap probe sends it an empty batch).
        """
        if self._caps is not None:
            return self._caps
        hz = self.healthz()
        if hz.status is None and not hz.unsendable:
            hz = self.healthz()  # once more: a first request may meet a cold start
        if hz.status is None:
            raise TargetError(f"{self.url}: {hz.transport_error}")
        # any 2xx is a success: the seed names no success status (MEM-WIRE.22)
        if (
            not 200 <= hz.status < 300
            or not isinstance(hz.body, dict)
            or hz.body.get("ok") is not True
        ):
            said = short_json(hz.body) if hz.body is not None else repr(hz.raw_excerpt)
            raise TargetError(
                f"{self.url}/healthz answered {hz.status} {shown(said)} — not a Memory Worker"
            )
        caps = set(self.base_capabilities())
        if AUTH in caps:
            check = self.post("/retrieve", {})
            if check.status is None:
                raise TargetError(f"{self.url}: {check.transport_error}")
            if check.status == 401:
                raise token_refused(self.config, "POST /retrieve")
            for route, cap in (("/list", LIST), ("/forget", FORGET)):
                ex = self.post(route, {})
                if ex.status is not None and ex.status != 404:
                    caps.add(cap)
            ex = self.post("/write", {"scopeKey": probe_scope, "records": [], "cap": 1})
            if ex.status == 400 or (
                ex.status is not None
                and 200 <= ex.status < 300
                and isinstance(ex.body, dict)
                and "evicted" in ex.body
            ):
                caps.add(CAP)
        self._caps = self.resolve_capabilities(frozenset(caps))
        return self._caps
