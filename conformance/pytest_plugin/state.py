"""``MemspecRun``: what one pytest process knows about the memspec run — its settings (read by
``settings``), the drivers it opened, and the results it gathered for the terminal summary and
``--memspec-expect-update``/``--memspec-expect-prune``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from conformance.pytest_plugin.corpus import shown
from conformance.pytest_plugin.messages import option_names

if TYPE_CHECKING:
    from conformance.drivers.base import Driver
    from conformance.machines.profiles import Profile
    from conformance.report.expect import Expectation
    from conformance.scenario import Scenario
    from conformance.vocabulary import TargetConfig

RUN = pytest.StashKey["MemspecRun"]()


def skip(reason: str) -> NoReturn:
    """Skip the running item, reported at the item's own location (its scenario file), not at
    this line — the form pytest's own skip marks use."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


class MemspecDivergence(Exception):
    """A target answered what the model does not allow (or could not be judged)."""


class MemspecRun:
    """What one pytest process knows about the memspec run: options, corpus, drivers."""

    def __init__(self) -> None:
        # -- the process, in an xdist run or not (see ``xdist``)
        self.role = "main"  # main (no xdist) | controller | worker
        self.worker_id = ""
        self.force_loadgroup = False  # the controller switched --dist load to loadgroup
        # -- settings, read once from the options (``settings.from_config``)
        self.url = ""
        self.target: TargetConfig
        self.token_source = "none"
        self.token_hint = ""
        self.spec = "all"
        self.protocols: list[str] = []
        self.profile: Profile
        self.seed = 0
        self.examples: int | None = None  # --memspec-examples, when given
        self.level = "seed"  # --memspec-level: "reference" fails an item on a deviation too
        self.allow_dirty = False
        self.corpus: list[tuple[Scenario, str]] = []
        self.machines: dict[str, tuple[str, ...]] = {}
        self.replay_dir: Path  # --memspec-replay-dir, made absolute
        self.expectations: list[Expectation] = []
        self.expect_file: str | None = None
        self.expect_update = self.expect_prune = False
        self.run_base = ""
        self.run_id = ""
        self.notes: list[str] = []
        # -- the target: drivers opened, and protocols that cannot be checked
        self.drivers: dict[str, Driver] = {}
        self.unavailable: dict[str, str] = {}  # protocol -> why its items are skipped
        self.broken: dict[str, str] = {}  # protocol -> why opening it failed mid-run
        # -- results (a worker sends them to the controller: ``xdist.outcome``/``merge``)
        self.scopes: dict[str, dict[str, None]] = {}  # protocol -> scope keys written
        self.run_ids: dict[str, None] = {}
        self.replays: list[str] = []
        self.matched: set[int] = set()  # expectation entries some failure matched
        self.checked: list[dict[str, Any]] = []  # every result, for --memspec-expect-update/prune
        self.baseline_lines: list[str] = []

    # -- the target -------------------------------------------------------------------------

    def check_target(self) -> None:
        """Open every protocol once before any item runs.  Nothing usable → UsageError; one
        protocol of ``--memspec-spec all`` unusable → its items are skipped with the reason."""
        from conformance.errors import TargetError

        errors: dict[str, str] = {}
        for protocol in self.protocols:
            try:
                self.drivers[protocol] = self._open(protocol)
            except TargetError as exc:
                errors[protocol] = option_names(str(exc), self.url)
        if errors and (len(errors) == len(self.protocols) or self.spec != "all"):
            self.close()
            reasons = list(dict.fromkeys(errors.values()))
            detail = (
                reasons[0]
                if len(reasons) == 1
                else "; ".join(f"{p}: {m}" for p, m in errors.items())
            )
            raise pytest.UsageError(f"memspec: cannot check {self.url}: {detail}")
        for protocol, message in errors.items():
            self.unavailable[protocol] = f"{protocol} not checked: {message}"
        if self.role == "controller":
            self.close()  # the workers open their own, with their own run ids

    def _open(self, protocol: str) -> Driver:
        from conformance.session import open_driver
        from conformance.vocabulary import RunContext

        ctx = RunContext(
            run_id=self.run_id, target=self.target, allow_dirty=self.allow_dirty, seed=self.seed
        )
        return open_driver(ctx, protocol)

    def driver(self, protocol: str) -> Driver:
        """The driver of ``protocol`` for this process, opened on first use (a worker opens
        only the protocols of the items it was given — the ledger on one worker only)."""
        from conformance.errors import TargetError

        if protocol in self.unavailable:
            skip(self.unavailable[protocol])
        if protocol in self.broken:
            pytest.fail(self.broken[protocol], pytrace=False)
        driver = self.drivers.get(protocol)
        if driver is None:
            try:
                driver = self.drivers[protocol] = self._open(protocol)
            except TargetError as exc:
                self.broken[protocol] = (
                    f"memspec: cannot use {self.url}: {option_names(str(exc), self.url)}"
                )
                pytest.fail(self.broken[protocol], pytrace=False)
        return driver

    def close(self) -> None:
        for protocol, driver in self.drivers.items():
            written = self.scopes.setdefault(protocol, {})
            try:
                written.update(dict.fromkeys(driver.scopes_written()))
            finally:
                driver.close()
        self.drivers = {}

    # -- failures ---------------------------------------------------------------------------

    def replay_hint(self, path: str) -> str:
        return f"memspec replay {path} --target {self.url}{self.token_hint}"

    def save_replay(self, kind: str, name: str, scenario: Scenario, outcomes: list[Any]) -> str:
        """Write ``scenario`` with the target's answers recorded; return its path."""
        from conformance.report import with_transcript
        from conformance.scrub import dumps

        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "replay"
        path = self.replay_dir / f"{kind}-{safe}.json"
        replay = with_transcript(scenario, [o.to_json() for o in outcomes])
        path.parent.mkdir(parents=True, exist_ok=True)
        # Scrubbed like every other output (the token in any escaped form, lone surrogates).
        text = dumps(replay.model_dump(mode="json", exclude_none=True), indent=2)
        path.write_text(text + "\n", encoding="utf-8")
        where = shown(path)
        self.replays.append(where)
        return where

    def fail(self, name: str, clauses: list[str], message: str) -> None:
        """xfail when an ``--memspec-expect`` entry names this result, else fail."""
        from conformance.report.expect import match

        hits = [i for i, e in enumerate(self.expectations) if match([e], name, clauses)]
        self.matched.update(hits)
        if hits:
            entry = self.expectations[hits[0]]
            pytest.xfail(f"expected divergence ({entry.label}): {entry.reason}")
        raise MemspecDivergence(message)

    # -- reporting --------------------------------------------------------------------------

    def header(self) -> list[str]:
        runs = f", {self.profile.max_examples} runs"
        ids = f"{self.run_id}<worker id>" if self.role == "controller" else self.run_id
        lines = [
            f"memspec: target {self.url} (token: {self.token_source}), spec {self.spec},"
            f" profile {self.profile.name}{runs}, seed {self.seed}, run id {ids}"
        ]
        lines += [f"memspec: {n}" for n in self.notes]
        return lines

    def record(
        self, name: str, verdict: str, clauses: Any, failed: Any, step: Any, why: str
    ) -> None:
        """One result, as ``--memspec-expect-update`` / ``--memspec-expect-prune`` see it."""
        op = step.op if step is not None else ""
        self.checked.append(
            {"name": name, "verdict": verdict, "clauses": list(clauses), "failed": list(failed),
             "op": op, "why": why}
        )  # fmt: skip

    def maintain_expectations(self) -> None:
        """After the run (main process or xdist controller): update / prune the file."""
        import io

        from conformance.report.expect import Checked, maintain

        if not self.expect_file or not (self.expect_update or self.expect_prune):
            return
        results = [
            Checked(c["name"], c["verdict"], tuple(c["clauses"]), tuple(c["failed"]), c["op"],
                    c["why"])
            for c in self.checked
        ]  # fmt: skip
        out = io.StringIO()
        maintain(
            self.expect_file, results, update=self.expect_update, prune=self.expect_prune, out=out
        )
        self.baseline_lines = out.getvalue().splitlines()

    def summary(self, *, verbose: bool) -> list[str]:
        lines = [f"target {self.url}; run id(s): {', '.join(self.run_ids)}"]
        for protocol in self.protocols:
            keys = list(self.scopes.get(protocol, {}))
            if protocol in self.unavailable:
                lines.append(f"{protocol}: {self.unavailable[protocol]}")
            elif keys and (verbose or len(keys) <= 3):
                listed = ", ".join(
                    k if k.isascii() and k.isprintable() else json.dumps(k) for k in keys
                )
                lines.append(f"{protocol}: wrote into {len(keys)} scope key(s): {listed}")
            elif keys:
                per_run = ", ".join(
                    f"{n} of run {rid}"
                    for rid in self.run_ids
                    if (n := sum(1 for k in keys if f"{rid}-" in k))
                )
                lines.append(
                    f"{protocol}: wrote into {len(keys)} scope key(s) ({per_run}); -v lists them"
                )
            else:
                lines.append(f"{protocol}: wrote nothing")
        for path in self.replays:
            lines.append(f"replay file: {path}  (rerun: {self.replay_hint(path)})")
        lines += self.baseline_lines
        for i, entry in enumerate(self.expectations):
            if i not in self.matched:
                lines.append(
                    f"expectation {entry.label} matched no failure in this run"
                    " — remove it if the store is fixed"
                )
        return lines
