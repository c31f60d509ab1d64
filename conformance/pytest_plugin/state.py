"""``MemspecRun``: what one pytest process knows about the memspec run — the run's options as
one :class:`~conformance.engine.config.RunConfig` (read by ``settings``), this process's place
in an xdist run, the drivers it opened, and the results it gathered for the terminal summary
and ``--memspec-expect-update``/``--memspec-expect-prune``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from conformance.pytest_plugin.corpus import shown
from conformance.pytest_plugin.messages import option_names

if TYPE_CHECKING:
    from conformance.drivers.base import Driver
    from conformance.engine.config import RunConfig
    from conformance.machines.profiles import Profile
    from conformance.scenario import Scenario

RUN = pytest.StashKey["MemspecRun"]()


def skip(reason: str) -> NoReturn:
    """Skip the running item, reported at the item's own location (its scenario file), not at
    this line — the form pytest's own skip marks use."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


class MemspecDivergence(Exception):
    """A target answered what the model does not allow (or could not be judged)."""


@dataclass
class Process:
    """This process in an xdist run, or alone (see ``xdist``)."""

    role: str = "main"  # main (no xdist) | controller | worker
    worker_id: str = ""
    force_loadgroup: bool = False  # the controller switched --dist load to loadgroup


@dataclass(frozen=True)
class TokenOrigin:
    """How the token was given: ``source`` for the header, ``hint`` for a rerun command line."""

    source: str = "none"
    hint: str = ""


@dataclass
class Checks:
    """What the items check: the scenarios with their files, and protocol → the clauses its
    state machine checks (for the machines that exist)."""

    corpus: list[tuple[Scenario, str]]
    machines: dict[str, tuple[str, ...]]


@dataclass
class Opened:
    """The target in this process: its drivers, and the protocols that cannot be checked."""

    drivers: dict[str, Driver] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # protocol -> why items skip
    broken: dict[str, str] = field(default_factory=dict)  # protocol -> why opening failed mid-run


@dataclass
class Results:
    """What the items found (a worker sends it to the controller: ``xdist.outcome``/``merge``)."""

    scopes: dict[str, dict[str, None]] = field(default_factory=dict)  # protocol -> keys written
    run_ids: dict[str, None] = field(default_factory=dict)
    replays: list[str] = field(default_factory=list)
    matched: set[int] = field(default_factory=set)  # expectation entries some failure matched
    checked: list[dict[str, Any]] = field(default_factory=list)  # every result, for upkeep
    baseline_lines: list[str] = field(default_factory=list)  # what the upkeep changed


class MemspecRun:
    """What one pytest process knows about the memspec run: the run's options (``config``, its
    target set, its seed and this process's run id settled), how the token was given, what is
    checked, where replays go, the drivers opened and the results."""

    def __init__(
        self,
        config: RunConfig,
        *,
        process: Process,
        token_origin: TokenOrigin,
        checks: Checks,
        replay_dir: Path,
        notes: list[str],
    ) -> None:
        self.config = config
        self.process = process
        self.token_origin = token_origin
        self.checks = checks
        self.replay_dir = replay_dir  # --memspec-replay-dir, made absolute
        self.notes = notes
        self.opened = Opened()
        self.results = Results(run_ids={self.run_id: None})

    @property
    def url(self) -> str:
        assert self.config.target is not None
        return self.config.target.url

    @property
    def run_id(self) -> str:
        assert self.config.run_id is not None
        return self.config.run_id

    @property
    def protocols(self) -> list[str]:
        from conformance.engine.drivers import protocols_for

        return protocols_for(self.config.spec)

    @property
    def profile(self) -> Profile:
        return self.config.machine_profile()

    # -- the target -------------------------------------------------------------------------

    def check_target(self) -> None:
        """Open every protocol once before any item runs.  Nothing usable → UsageError; one
        protocol of ``--memspec-spec all`` unusable → its items are skipped with the reason."""
        from conformance.errors import TargetError

        errors: dict[str, str] = {}
        for protocol in self.protocols:
            try:
                self.opened.drivers[protocol] = self._open(protocol)
            except TargetError as exc:
                errors[protocol] = option_names(str(exc), self.url)
        if errors and (len(errors) == len(self.protocols) or self.config.spec != "all"):
            self.close()
            reasons = list(dict.fromkeys(errors.values()))
            detail = (
                reasons[0]
                if len(reasons) == 1
                else "; ".join(f"{p}: {m}" for p, m in errors.items())
            )
            raise pytest.UsageError(f"memspec: cannot check {self.url}: {detail}")
        for protocol, message in errors.items():
            self.opened.unavailable[protocol] = f"{protocol} not checked: {message}"
        if self.process.role == "controller":
            self.close()  # the workers open their own, with their own run ids

    def _open(self, protocol: str) -> Driver:
        from conformance.session import open_driver

        return open_driver(self.config.context(self.run_id, self.config.seed), protocol)

    def driver(self, protocol: str) -> Driver:
        """The driver of ``protocol`` for this process, opened on first use (a worker opens
        only the protocols of the items it was given — the ledger on one worker only)."""
        from conformance.errors import TargetError

        opened = self.opened
        if protocol in opened.unavailable:
            skip(opened.unavailable[protocol])
        if protocol in opened.broken:
            pytest.fail(opened.broken[protocol], pytrace=False)
        driver = opened.drivers.get(protocol)
        if driver is None:
            try:
                driver = opened.drivers[protocol] = self._open(protocol)
            except TargetError as exc:
                opened.broken[protocol] = (
                    f"memspec: cannot use {self.url}: {option_names(str(exc), self.url)}"
                )
                pytest.fail(opened.broken[protocol], pytrace=False)
        return driver

    def close(self) -> None:
        for protocol, driver in self.opened.drivers.items():
            written = self.results.scopes.setdefault(protocol, {})
            try:
                written.update(dict.fromkeys(driver.scopes_written()))
            finally:
                driver.close()
        self.opened.drivers = {}

    # -- failures ---------------------------------------------------------------------------

    def replay_hint(self, path: str) -> str:
        return f"memspec replay {path} --target {self.url}{self.token_origin.hint}"

    def save_replay(self, kind: str, name: str, scenario: Scenario, outcomes: list[Any]) -> str:
        """Write ``scenario`` with the target's answers recorded; return its path."""
        from conformance.report import replay_name, with_transcript, write_replay

        path = self.replay_dir / replay_name(kind, name)
        write_replay(path, with_transcript(scenario, [o.to_json() for o in outcomes]))
        where = shown(path)
        self.results.replays.append(where)
        return where

    def fail(self, name: str, clauses: list[str], message: str) -> None:
        """xfail when an ``--memspec-expect`` entry names this result, else fail."""
        from conformance.report.expect import match

        expectations = self.config.expectations
        hits = [i for i, e in enumerate(expectations) if match([e], name, clauses)]
        self.results.matched.update(hits)
        if hits:
            entry = expectations[hits[0]]
            pytest.xfail(f"expected divergence ({entry.label}): {entry.reason}")
        raise MemspecDivergence(message)

    # -- reporting --------------------------------------------------------------------------

    def header(self) -> list[str]:
        config, profile = self.config, self.profile
        runs = f", {profile.max_examples} runs"
        ids = f"{self.run_id}<worker id>" if self.process.role == "controller" else self.run_id
        lines = [
            f"memspec: target {self.url} (token: {self.token_origin.source}), spec {config.spec},"
            f" profile {profile.name}{runs}, seed {config.seed}, run id {ids}"
        ]
        lines += [f"memspec: {n}" for n in self.notes]
        return lines

    def record(
        self, name: str, verdict: str, clauses: Any, failed: Any, step: Any, why: str
    ) -> None:
        """One result, as ``--memspec-expect-update`` / ``--memspec-expect-prune`` see it."""
        op = step.op if step is not None else ""
        self.results.checked.append(
            {"name": name, "verdict": verdict, "clauses": list(clauses), "failed": list(failed),
             "op": op, "why": why}
        )  # fmt: skip

    def maintain_expectations(self) -> None:
        """After the run (main process or xdist controller): update / prune the file, as the
        engine does after ``memspec run``."""
        from conformance.engine.pipeline import maintain_expectations
        from conformance.report.expect import Checked

        results = [
            Checked(c["name"], c["verdict"], tuple(c["clauses"]), tuple(c["failed"]), c["op"],
                    c["why"])
            for c in self.results.checked
        ]  # fmt: skip
        self.results.baseline_lines = maintain_expectations(self.config, results)

    def summary(self, *, verbose: bool) -> list[str]:
        results = self.results
        lines = [f"target {self.url}; run id(s): {', '.join(results.run_ids)}"]
        for protocol in self.protocols:
            lines.append(f"{protocol}: {self._scopes_line(protocol, verbose=verbose)}")
        for path in results.replays:
            lines.append(f"replay file: {path}  (rerun: {self.replay_hint(path)})")
        lines += results.baseline_lines
        for i, entry in enumerate(self.config.expectations):
            if i not in results.matched:
                lines.append(
                    f"expectation {entry.label} matched no failure in this run"
                    " — remove it if the store is fixed"
                )
        return lines

    def _scopes_line(self, protocol: str, *, verbose: bool) -> str:
        """What the run wrote into ``protocol`` (or why it was not checked)."""
        keys = list(self.results.scopes.get(protocol, {}))
        if protocol in self.opened.unavailable:
            return self.opened.unavailable[protocol]
        if keys and (verbose or len(keys) <= 3):
            listed = ", ".join(
                k if k.isascii() and k.isprintable() else json.dumps(k) for k in keys
            )
            return f"wrote into {len(keys)} scope key(s): {listed}"
        if keys:
            per_run = ", ".join(
                f"{n} of run {rid}"
                for rid in self.results.run_ids
                if (n := sum(1 for k in keys if f"{rid}-" in k))
            )
            return f"wrote into {len(keys)} scope key(s) ({per_run}); -v lists them"
        return "wrote nothing"
