"""``memspec contract``: fuzz a store against the OpenAPI documents of its wire protocols.

Schemathesis generates requests from ``specs/memory-worker.openapi.yaml`` and
``specs/ledger.openapi.yaml`` -- schema-valid ones and schema-invalid ones -- and this module
sends them to the target with the harness's HTTP client (a deadline for the whole exchange,
identity encoding, a cap on the answer's size, strict answer framing) and judges every answer
with schemathesis' checks: no server error, a documented status, the documented content type,
a body matching the documented schema, and invalid input refused.  Deterministic probes add
what generation does not reach: missing and wrong credentials on every data route, oversized,
unsized (streamed) and badly sized bodies, and a body of exactly the largest allowed size.

Every finding is reported under the clause of the contract it breaks (auth, size fence,
validation, answer shapes) with a ``curl`` line that reproduces it (the token written as
``$MEMSPEC_TOKEN``, never its value) and a replay file; the run writes ``contract.json`` to
the report directory and prints a summary.  Exit 0: no finding; 1: findings; 2: usage error or
an unreachable target.

The test controls (``/ledger/_test/*``) are not fuzzed: a store serves them only under
``--test-control``.  Fuzzing writes generated data into the target: point it at a disposable
store.  :func:`finding_records` returns a report's findings as ``(clause, title, detail,
curl)`` records for the ``memspec run`` report.

The parts: ``command`` (one run; the command's options are
``conformance.commands.contract``), ``probes`` (the deterministic probes),
``fuzz`` (the generated cases), ``client`` (the requests through the harness's client, and
their ``curl`` lines), ``model`` (limits,
clauses, findings, the scrubber, ``Run``) and ``report`` (``contract.json``, replays, the
summary, the findings for ``memspec run``).
"""

from __future__ import annotations

from conformance.contract.command import run_contract, served
from conformance.contract.model import (
    FORMAT,
    PROFILES,
    REPLAY_FORMAT,
    REPORT_FILE,
    Finding,
    FindingRecord,
    Run,
    Scrubber,
)
from conformance.contract.report import (
    CONTRACT_CLAUSES,
    as_results,
    finding_records,
    iter_replays,
    print_summary,
    write_report,
)

__all__ = [
    "CONTRACT_CLAUSES",
    "FORMAT",
    "PROFILES",
    "REPLAY_FORMAT",
    "REPORT_FILE",
    "Finding",
    "FindingRecord",
    "Run",
    "Scrubber",
    "as_results",
    "finding_records",
    "iter_replays",
    "print_summary",
    "run_contract",
    "served",
    "write_report",
]
