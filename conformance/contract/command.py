"""One ``memspec contract`` run against one reachable target (the command and its options:
``conformance.commands.contract``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from conformance.contract.client import Http, unanswered
from conformance.contract.fuzz import fuzz_operation, operations
from conformance.contract.model import BUDGETS_S, PROFILES, Run, Scrubber
from conformance.contract.probes import probe_auth, probe_fence
from conformance.contract.report import build_report, print_summary, write_report
from conformance.errors import TargetUnreachable
from conformance.vocabulary import TargetConfig


def served(http: Http, protocol: str) -> str | None:
    """None when the target serves the protocol, else why not (for a note)."""
    if protocol == "memory":
        ex = http.send("GET", "/healthz", framing="none", auth=False)
    else:
        ex = http.send(
            "POST", "/ledger/memory/get_consolidation_settings", b'{"scopeKey":"account:local"}'
        )
    error = unanswered(ex)
    if error is not None:
        return error
    if ex.status in (404, 501, 503):
        return f"answers {ex.status}"
    return None


def run_contract(
    config: TargetConfig,
    *,
    spec: str = "all",
    profile: str = "quick",
    examples: int | None = None,
    seed: int | None = None,
    report_dir: Path | None = None,
    out: Any = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """Probe and fuzz one reachable target; write the report; return its JSON."""
    out = out or sys.stdout
    started = time.monotonic()
    http = Http(config)
    try:
        scrub = Scrubber(config.token)
        run = Run(http, scrub)
        per_op = examples if examples is not None else PROFILES[profile]
        protocols = ["memory", "ledger"] if spec == "all" else [spec]
        first = http.send("GET", "/healthz", framing="none", auth=False)
        if first.status is None and (
            first.timed_out or (first.transport_error or "").startswith("cannot connect")
        ):
            raise TargetUnreachable(f"{config.label or config.url}: {first.transport_error}")
        checked: list[str] = []
        for protocol in protocols:
            why = served(http, protocol)
            if why is not None and spec == "all":
                run.notes.append(f"{protocol} not checked: the target {why}")
                continue
            checked.append(protocol)
        cases = [
            (protocol, op, negative)
            for protocol in checked
            for op in operations(protocol)
            for negative in (False, True)
            if not (negative and op.label == "GET /healthz")  # no input to get wrong
        ]
        for protocol in checked:
            if not quiet:
                print(f"memspec contract: {protocol}: auth and size-fence probes", file=sys.stderr)
            probe_auth(run, protocol, config.token)
            probe_fence(run, protocol)
        budget_end = time.monotonic() + BUDGETS_S.get(profile, BUDGETS_S["deep"])
        for i, (protocol, op, negative) in enumerate(cases):
            if not quiet and not negative:
                print(f"memspec contract: {protocol}: {op.label}", file=sys.stderr)
            share = max(0.0, budget_end - time.monotonic()) / (len(cases) - i)
            fuzz_operation(run, protocol, op, negative, per_op, seed, time.monotonic() + share)
        if not checked:
            raise TargetUnreachable("the target serves neither protocol: " + "; ".join(run.notes))
        data = build_report(run, config, checked, profile, per_op, seed, time.monotonic() - started)
        if report_dir is not None:
            write_report(run, data, report_dir)
        print_summary(data, out, report_dir)
        return data
    finally:
        http.close()
