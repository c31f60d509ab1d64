"""What a contract run is made of: its limits and profiles, the probes' valid bodies, the
clause each kind of finding is reported under, a finding, the token scrubber, and ``Run``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from conformance.vocabulary import Secret

if TYPE_CHECKING:
    from conformance.contract.client import Http
    from conformance.vocabulary import Exchange


FORMAT = "memspec-contract/1"
REPLAY_FORMAT = "memspec-contract-replay/1"
REPORT_FILE = "contract.json"
REPLAY_DIR = "contract-replays"
TOKEN_PLACEHOLDER = "$MEMSPEC_TOKEN"
MAX_BODY = 512 * 1024
SPECS_DIR = Path(__file__).resolve().parents[2] / "specs"
SPEC_FILES = {"memory": "memory-worker.openapi.yaml", "ledger": "ledger.openapi.yaml"}

# Generated examples per operation and generation mode, and a time budget for all generated
# cases (a slow target gets fewer examples, never a longer run).
PROFILES: dict[str, int] = {"quick": 4, "ci": 25, "deep": 150}
BUDGETS_S: dict[str, float] = {"quick": 5.0, "ci": 120.0, "deep": 1200.0}


class OutOfTime(Exception):
    """The operation's share of the time budget is spent."""


# Valid bodies for the deterministic probes (the route is exercised, the probe changes only
# the credentials or the framing).
MEMORY_ROUTES: dict[str, dict[str, Any]] = {
    "/retrieve": {"scopeKey": "memspec-contract:probe", "query": "probe", "limit": 1},
    "/write": {"scopeKey": "memspec-contract:probe", "records": []},
    "/list": {"scopeKey": "memspec-contract:probe", "limit": 1},
    "/forget": {"scopeKey": "memspec-contract:probe", "id": "mem:memspec-contract:probe:0"},
}
LEDGER_METHODS: dict[str, dict[str, Any]] = {
    "memory/save_memory_record": {"body": ""},  # blank: refused, nothing written
    "memory/list_memory_records": {"scopeKey": "account:local"},
    "memory/delete_memory_record": {"recordId": "memspec-contract-probe"},
    "memory/supersede_memory_record": {"recordId": "memspec-contract-probe", "body": "x"},
    "memory/approve_memory_record": {"recordId": "memspec-contract-probe"},
    "memory/reject_memory_record": {"recordId": "memspec-contract-probe"},
    "memory/list_memory_records_as_of": {
        "scopeKey": "account:local",
        "at": "2020-01-01T00:00:00.000Z",
    },
    "memory/get_consolidation_settings": {"scopeKey": "account:local"},
    "memory/update_consolidation_settings": {"scopeKey": "account:local"},
}

# The clause each kind of finding is reported under, per protocol.
AUTH = {"memory": "MEM-WIRE.3", "ledger": "LED-WIRE.1"}
ORDER = {"memory": "MEM-WIRE.4", "ledger": "LED-WIRE.1"}
LENGTH = {"memory": "MEM-WIRE.5", "ledger": "LED-WIRE.1"}
SIZE = {"memory": "MEM-WIRE.6", "ledger": "LED-WIRE.1"}
ERROR_SHAPE = {"memory": "MEM-WIRE.8", "ledger": "LED-WIRE.2"}
VALIDATION_MEMORY = {
    "/retrieve": "MEM-WIRE.11",
    "/write": "MEM-WIRE.12",
    "/list": "MEM-WIRE.14",
    "/forget": "MEM-WIRE.15",
}
ANSWER_MEMORY = {
    "/healthz": "MEM-WIRE.1",
    "/retrieve": "MEM-WIRE.16",
    "/write": "MEM-WIRE.13",
    "/list": "MEM-WIRE.16",
    "/forget": "MEM-WIRE.15",
}


class FindingRecord(NamedTuple):
    """One finding as the ``memspec run`` report takes it."""

    clause: str
    title: str
    detail: str
    curl: str


@dataclass
class Finding:
    clause: str
    title: str
    detail: str
    curl: str
    protocol: str
    route: str
    check: str
    replay: str | None = None
    count: int = 1

    def record(self) -> FindingRecord:
        return FindingRecord(self.clause, self.title, self.detail, self.curl)


_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescape(text: str) -> str:
    """JSON string escapes a target may use to smuggle the token past a plain search."""

    def one(m: re.Match[str]) -> str:
        return chr(int(m.group(1), 16))

    return _JSON_ESCAPE.sub(one, text).replace("\\/", "/")


class Scrubber:
    """Removes the token from anything a target can make us print or write."""

    def __init__(self, token: Secret | None) -> None:
        self._token = token.reveal() if token else ""

    def __call__(self, text: str) -> str:
        # Lone surrogates (from generated data or a target) could not be printed or written.
        text = text.encode("utf-8", "replace").decode("utf-8")
        if not self._token:
            return text
        out = text.replace(self._token, TOKEN_PLACEHOLDER)
        if self._token in _unescape(out) or self._token.lower() in out.lower():
            out = _unescape(out)
            out = re.sub(re.escape(self._token), TOKEN_PLACEHOLDER, out, flags=re.IGNORECASE)
        return out

    def deep(self, value: Any) -> Any:
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self(str(k)): self.deep(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.deep(v) for v in value]
        return value


@dataclass
class Run:
    http: Http
    scrub: Scrubber
    findings: list[Finding] = field(default_factory=list)
    exchanges: dict[int, Exchange] = field(default_factory=dict)
    operations: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(
        self,
        ex: Exchange,
        *,
        clause: str,
        title: str,
        detail: str,
        protocol: str,
        route: str,
        check: str,
    ) -> None:
        """One finding per clause, route and check; repeats are counted and their details
        appended (bounded), not listed again."""
        for f in self.findings:
            if (f.clause, f.route, f.check) == (clause, route, check):
                f.count += 1
                extra = self.scrub(detail)
                if extra not in f.detail and len(f.detail) < 1200:
                    f.detail = f"{f.detail}; {extra}"[:1400]
                return
        finding = Finding(
            clause=clause,
            title=self.scrub(title),
            detail=self.scrub(detail),
            curl=self.scrub(self.http.curl(ex)),
            protocol=protocol,
            route=route,
            check=check,
        )
        self.findings.append(finding)
        self.exchanges[id(finding)] = ex

    def count(self, label: str, key: str) -> None:
        op = self.operations.setdefault(label, {})
        op[key] = op.get(key, 0) + 1
