"""One run against one already reachable target: :func:`run` takes a :class:`RunConfig` and an
:class:`Observer` and returns a :class:`RunResult`.

The phases, in order: the drivers (one per protocol, the ``--jobs`` lanes, worker processes),
the corpus, the state machines (:mod:`conformance.engine.explore`), the contract, the report;
then, when asked, the concurrent check (:mod:`conformance.engine.concurrent`) and the upkeep of
the expectations file.  The observer hears every phase, scenario and step, then the report.

With ``--jobs`` above 1 and both protocols, each protocol runs on a *track* of its own: its
corpus, then its probes and machine, the two tracks side by side -- so the ledger's machine
(which has one store instance and waits on the store's answers) starts while the memory corpus
still runs, rather than after it.  The tracks share nothing but the target (each protocol its
own lanes and scopes); the results are put back in the order of the run in turn (the corpus in
corpus order, then each protocol's probes), so the report does not depend on the scheduling.
``report.json`` ``phases`` records each phase's wall seconds (overlapping ones included).
"""

from __future__ import annotations

import io
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.drivers.base import Driver
from conformance.engine.concurrent import attach_concurrent
from conformance.engine.config import RunConfig
from conformance.engine.drivers import (
    build_drivers,
    default_procs,
    driver_lanes,
    ledger_lanes,
    protocols_for,
    shared_lanes,
    start_workers,
)
from conformance.engine.explore import Explored, explore_all
from conformance.engine.observer import Observer
from conformance.errors import UsageError
from conformance.machines.profiles import Profile
from conformance.report import RunReport, with_transcript, write_report
from conformance.report.expect import Checked, checked_from_report, maintain
from conformance.report.merge import mark_shard_finished, mark_shard_started, shard_report_options
from conformance.report.model import now_iso
from conformance.runner import ScenarioResult, load_corpus, run_scenarios
from conformance.scenario import Scenario, ScenarioError
from conformance.session import new_run_id
from conformance.shard import base_run_id, select_scenarios, shard_run_id
from conformance.vocabulary import TargetConfig
from conformance.workers import WorkerPool


@dataclass
class RunResult:
    """The run's verdict (``exit_code``: 0 / 1), its report as JSON and as a model, where it was
    written, and the replay of every failing scenario and finding."""

    exit_code: int
    data: dict[str, Any]
    report: RunReport
    report_dir: Path | None
    replays: dict[str, Scenario] = field(default_factory=dict)


def run(config: RunConfig, observer: Observer) -> RunResult:
    """The whole run (see the module's docstring).  A mistake in ``config`` is a
    :class:`~conformance.errors.UsageError`, raised before anything is sent."""
    if config.target is None:
        raise UsageError("no target to run against")
    plan = _plan(config)
    result = _Pipeline(config, config.target, plan, observer).run()
    if config.clients:
        attach_concurrent(result, config, observer)
    if config.expect_file and (config.expect_update or config.expect_prune):
        for line in maintain_expectations(config, checked_from_report(result.data)):
            observer.say(line)
    return result


def maintain_expectations(config: RunConfig, results: list[Checked]) -> list[str]:
    """After a run: ``--expect-update`` / ``--expect-prune`` edit ``config.expect_file`` from
    the run's ``results``; the lines that say what changed (none when neither was asked)."""
    if not config.expect_file or not (config.expect_update or config.expect_prune):
        return []
    out = io.StringIO()
    maintain(
        config.expect_file,
        results,
        update=config.expect_update,
        prune=config.expect_prune,
        out=out,
    )
    return out.getvalue().splitlines()


@dataclass
class _Plan:
    """What the run will do, settled before the first request: its scenarios, profile, seed
    and run ids."""

    protocols: list[str]
    scenarios: list[tuple[Scenario, str]]
    profile: Profile
    seed: int | None
    base: str | None
    run_id: str


def _plan(config: RunConfig) -> _Plan:
    protocols = protocols_for(config.spec)
    scenarios: list[tuple[Scenario, str]] = []
    if config.corpus:
        try:
            scenarios = (
                load_corpus(protocols)
                if config.corpus_dir is None
                else load_corpus(protocols, config.corpus_dir)
            )
        except ScenarioError as exc:
            raise UsageError(f"corpus: {exc}") from exc
    report_dir = config.report_dir
    if report_dir is not None and report_dir.exists() and not report_dir.is_dir():
        raise UsageError(f"--report {report_dir}: exists and is not a directory")
    profile = config.machine_profile()
    shard, seed = config.shard, config.seed
    scenarios = select_scenarios(scenarios, shard)
    if shard.count > 1 and config.machines and seed is None:
        if profile.fixed_seed is None:
            raise UsageError(
                f"--shard with --profile {profile.name} needs --seed N (one seed for all shards)"
            )
        seed = profile.fixed_seed
    shard_options = {"spec": config.spec, "profile": profile.name,
                     "examples": profile.max_examples, "corpus": config.corpus,
                     "machines": config.machines, "count": shard.count}  # fmt: skip
    base = config.run_id or (base_run_id(seed or 0, shard_options) if shard.count > 1 else None)
    run_id = shard_run_id(base, shard) if base else new_run_id()
    return _Plan(protocols, scenarios, profile, seed, base, run_id)


class _Pipeline:
    """One run's moving parts: its drivers and lanes, the report it fills, the replays."""

    def __init__(
        self, config: RunConfig, target: TargetConfig, plan: _Plan, observer: Observer
    ) -> None:
        self.config, self.target, self.plan, self.observer = config, target, plan, observer
        self.started = time.monotonic()
        self.replays: dict[str, Scenario] = {}
        self.notes: list[str] = []
        self.ctx = config.context(plan.run_id, plan.seed)
        self.drivers: dict[str, Driver] = {}
        self.lanes: dict[str, list[Driver]] = {}
        self.pool: WorkerPool | None = None

    def run(self) -> RunResult:
        config, plan = self.config, self.plan
        if config.shard.count > 1 and config.report_dir is not None:
            mark_shard_started(config.report_dir, config.shard, plan.base or plan.run_id)
        jobs = config.jobs
        procs = default_procs(jobs) if config.procs is None else min(config.procs, jobs)
        self._open(procs)
        report = self._new_report(procs)
        extra: list[Driver] = []
        try:
            extra = self._lanes(report)
            if self._on_tracks():
                self._tracks(report)
            else:
                self._corpus(report)
                self._machines(report)
            self._contract(report)
            self._scopes(report)
        finally:
            self.observer.checks_done()
            for driver in [*self.drivers.values(), *extra]:
                driver.close()
            if self.pool is not None:
                self.pool.close()
        return self._write(report)

    def _open(self, procs: int) -> None:
        """The worker processes (first: their interpreters import while the target is probed),
        then one driver per protocol."""
        config = self.config
        wanted = procs if config.jobs > 1 and (config.corpus or config.machines) else 0
        self.pool = start_workers(wanted, self.ctx, self.plan.protocols, self.notes)
        try:
            self.drivers = build_drivers(
                self.ctx, self.plan.protocols, strict=config.spec != "all", notes=self.notes
            )
        except BaseException:
            if self.pool is not None:
                self.pool.close()
            raise
        if config.shard.count > 1 and "ledger" in self.drivers:
            self.notes.append(
                f"shard {config.shard.label}: the ledger needs a store instance of its own per"
                " shard"
            )

    def _new_report(self, procs: int) -> RunReport:
        config, plan = self.config, self.plan
        return RunReport(
            run_id=plan.run_id,
            target=self.target.public(),
            options={
                "spec": config.spec,
                "profile": plan.profile.name if config.machines else None,
                "seed": plan.seed,
                "allow_dirty": config.allow_dirty,
                "expect": config.expect_file,
                "corpus": config.corpus,
                "machines": config.machines,
                **shard_report_options(config.shard, plan.base, plan.profile.max_examples),
                "jobs": config.jobs,
                "window": config.window,
                "procs": procs if self.pool is not None else 0,
            },
            expectations=list(config.expectations),
            expect_file=config.expect_file,
            notes=self.notes,
            level=config.level,
        )

    def _lanes(self, report: RunReport) -> list[Driver]:
        """Every protocol's lanes; returns the drivers opened beyond the first of each."""
        drivers, config = self.drivers, self.config
        for protocol, driver in drivers.items():
            report.capabilities[protocol] = sorted(driver.capabilities())
        lanes = driver_lanes(
            drivers,
            shared_lanes(config.jobs, config.window),
            pool=self.pool,
            ctx=self.ctx,
            notes=self.notes,
        )
        if self.pool is not None and not any(
            getattr(d, "remote", False) for d in lanes.get("memory", [])
        ):
            report.options["procs"] = 0  # the workers did not start: thread lanes (noted)
        if "ledger" in drivers and config.ledger_targets:
            lanes["ledger"] += ledger_lanes(self.ctx, list(config.ledger_targets), self.notes)
        self.lanes = lanes
        for d in [d for ds in lanes.values() for d in ds]:
            if hasattr(d, "ahead"):  # a driver that can send steps ahead (the ledger's)
                d.window = config.window  # type: ignore[attr-defined]
        return [d for ds in lanes.values() for d in ds[1:]]

    def _corpus(self, report: RunReport) -> None:
        if not self.plan.scenarios:
            return
        self.observer.phase_started("corpus")
        started = time.monotonic()
        report.scenarios = self._scenarios(self.lanes, self.plan.scenarios)
        report.phases["corpus"] = time.monotonic() - started
        self._replays_of(report.scenarios)

    def _scenarios(
        self, lanes: dict[str, list[Driver]], scenarios: list[tuple[Scenario, str]]
    ) -> list[ScenarioResult]:
        observer = self.observer
        return run_scenarios(
            lanes,
            scenarios,
            on_step=lambda _r, o: observer.step(o),
            on_result=lambda _r: observer.scenario_done(),
            on_begin=lambda _s: observer.scenario_started(),
        )

    def _replays_of(self, results: list[ScenarioResult]) -> None:
        for r in results:
            if r.verdict in ("fail", "deviate", "indeterminate"):
                steps = [o.to_json() for o in r.outcomes]
                self.replays[f"scenario:{r.name}"] = with_transcript(r.scenario, steps)

    def _on_tracks(self) -> bool:
        """Whether each protocol runs its corpus and its machine on a track of its own, the
        protocols side by side (see the module's docstring)."""
        config = self.config
        return config.jobs > 1 and config.machines and len(self.drivers) > 1

    def _tracks(self, report: RunReport) -> None:
        """Per protocol, its corpus then its probes and machine; the protocols side by side.
        The results go into ``report`` in the order :meth:`_corpus` then :meth:`_machines`
        would have put them."""
        self.observer.phase_started("corpus and machines")
        order = {id(s): i for i, (s, _) in enumerate(self.plan.scenarios)}
        protocols = list(self.drivers)
        # Scenarios of a protocol without a driver are skipped (run_scenarios says why).
        alone = [(s, p) for s, p in self.plan.scenarios if s.protocol not in self.drivers]

        def track(protocol: str) -> tuple[list[ScenarioResult], list[Explored], dict[str, float]]:
            phases: dict[str, float] = {}
            mine = [(s, p) for s, p in self.plan.scenarios if s.protocol == protocol]
            started = time.monotonic()
            results = self._scenarios({protocol: self.lanes.get(protocol, [])}, mine)
            if mine:
                phases[f"{protocol} corpus"] = time.monotonic() - started
            explored = self._explore({protocol: self.drivers[protocol]})
            return results, explored, phases

        with ThreadPoolExecutor(len(protocols), thread_name_prefix="memspec-track") as pool:
            futures = [pool.submit(track, p) for p in protocols]
            while not all(f.done() for f in futures):  # bounded waits: Ctrl-C is seen at once
                wait(futures, timeout=0.2)
            done = [f.result() for f in futures]
        corpus = self._scenarios({}, alone) if alone else []
        for results, _, phases in done:
            corpus += results
            report.phases.update(phases)
        corpus.sort(key=lambda r: order.get(id(r.scenario), len(order)))
        report.scenarios = corpus
        self._replays_of(corpus)
        self._record_explored(report, [e for _, explored, _ in done for e in explored])

    def _machines(self, report: RunReport) -> None:
        if not self.config.machines:
            return
        self._record_explored(report, self._explore(self.drivers))

    def _explore(self, drivers: dict[str, Driver]) -> list[Explored]:
        config = self.config
        return explore_all(
            drivers,
            self.lanes,
            jobs=config.jobs,
            window=config.window,
            profile=self.plan.profile,
            seed=self.plan.seed,
            shard=config.shard,
            expected=list(config.expectations),
            observer=self.observer,
        )

    def _record_explored(self, report: RunReport, explored: list[Explored]) -> None:
        for done in explored:
            report.scenarios.extend(done.probes)
            self.replays.update(done.replays)
            self.notes.extend(done.notes)
            report.phases.update(done.phases)
            if done.result is not None:
                report.machine_clauses[done.protocol] = done.clauses
                report.machines.append(done.result)

    def _contract(self, report: RunReport) -> None:
        config = self.config
        if config.contract is None or config.shard.index != 1:
            return
        self.observer.phase_started("contract")
        from conformance.contract import as_results, run_contract

        contract_data = run_contract(
            self.target,
            spec=config.spec,
            profile=config.contract,
            seed=self.plan.seed,
            report_dir=config.report_dir / "contract" if config.report_dir is not None else None,
            out=io.StringIO(),
            quiet=True,
        )
        report.scenarios.extend(as_results(contract_data))

    def _scopes(self, report: RunReport) -> None:
        for protocol, driver in self.drivers.items():
            written = dict.fromkeys(driver.scopes_written())
            for lane in self.lanes.get(protocol, []):
                if lane is not driver and getattr(lane, "remote", False):
                    written.update(dict.fromkeys(lane.scopes_written()))
            report.scopes_written[protocol] = list(written)

    def _write(self, report: RunReport) -> RunResult:
        config = self.config
        report.duration_s = time.monotonic() - self.started
        report.finished_at = now_iso()
        report_dir = config.report_dir
        if report_dir is not None:
            data = write_report(report, report_dir, self.replays)
            if config.shard.count > 1:
                mark_shard_finished(report_dir, config.shard, self.plan.base or self.plan.run_id)
        else:
            data = report.to_json()
        result = RunResult(data["exit_code"], data, report, report_dir, self.replays)
        self.observer.report_written(result)
        return result
