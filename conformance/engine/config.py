"""``RunConfig``: everything one run is told, in one frozen value; the defaults of the options
that set it; and the checks that are about the run, not about how it was asked for."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.errors import UsageError
from conformance.shard import WHOLE, Shard
from conformance.sources import DEFAULT_LEVEL

if TYPE_CHECKING:
    from conformance.machines.profiles import Profile
    from conformance.report.expect import Expectation
    from conformance.vocabulary import RunContext, TargetConfig

DEFAULT_REPORT_DIR = "memspec-report"

#: Lanes in one run.  Enough to hide a distant target's round trip behind the others' work
#: without flooding it (each lane is one connection with one request in flight: ten requests at
#: a time is light for any deployed HTTP service), and matched to the ``ci`` profile: 200
#: examples per machine are 20 batches of 10, which 10 lanes take in two windows (8 would take
#: three, the last half empty).  On loopback the run is CPU-bound and more lanes cost nothing
#: but a thread each (they share one process and its GIL).
DEFAULT_JOBS = 10
MAX_JOBS = 64

#: Steps a machine may have in flight on one connection (``--window``).  Deep enough that a
#: store 25 ms away answers a window while the harness prepares the next one; the ledger's
#: answers are small (a listing holds at most 50 records), so a window's answers fit the
#: socket buffers and the store never blocks on them.
DEFAULT_WINDOW = 32
MAX_WINDOW = 256

#: At most this many worker processes (``--procs``).
MAX_PROCS = 16

#: At most this many concurrent clients (``--clients``).
MAX_CLIENTS = 64

_RUN_ID = re.compile(r"memspec-[a-z0-9]{4,20}")


def is_run_id(text: str) -> bool:
    """Whether ``text`` is a run id a run may be given (``memspec-[a-z0-9]{4,20}``)."""
    return _RUN_ID.fullmatch(text) is not None


@dataclass(frozen=True)
class RunConfig:  # long: every run option flat; options.py fills fields by Option.field
    """One run: the target, what to check, how hard, where the report goes.

    ``target`` is an already reachable store (``None`` until the front end opened it);
    ``ledger_targets`` further instances of the same ledger store.  ``procs``: worker processes
    the memory lanes live in (``None``: one per core, at most two).  ``clients``: also run the
    concurrent check with that many clients.  ``expect_update``/``expect_prune``: after the
    run, maintain ``expect_file``."""

    target: TargetConfig | None = None
    ledger_targets: tuple[TargetConfig, ...] = ()
    spec: str = "all"
    profile: str = "quick"
    seed: int | None = None
    examples: int | None = None
    corpus: bool = True
    machines: bool = True
    corpus_dir: Path | None = None
    expectations: tuple[Expectation, ...] = ()
    expect_file: str | None = None
    expect_update: bool = False
    expect_prune: bool = False
    report_dir: Path | None = None
    allow_dirty: bool = False
    shard: Shard = WHOLE
    run_id: str | None = None
    jobs: int = 1
    window: int = 1
    procs: int | None = None
    contract: str | None = None
    level: str = DEFAULT_LEVEL
    clients: int | None = None

    def __post_init__(self) -> None:
        if self.run_id is not None and not is_run_id(self.run_id):
            raise UsageError(f"--run-id {self.run_id!r}: expected memspec-[a-z0-9]{{4,20}}")
        if self.clients is not None and not 1 <= self.clients <= MAX_CLIENTS:
            raise UsageError(f"--clients must be 1-{MAX_CLIENTS}")

    def on(self, target: TargetConfig, ledger_targets: list[TargetConfig]) -> RunConfig:
        """This run against ``target`` (and further ledger instances)."""
        return dataclasses.replace(self, target=target, ledger_targets=tuple(ledger_targets))

    def context(self, run_id: str, seed: int | None) -> RunContext:
        """What the drivers of this run share, under ``run_id`` and ``seed`` (the run's own, once
        settled); the target must be set."""
        from conformance.vocabulary import RunContext

        if self.target is None:
            raise UsageError("no target to run against")
        return RunContext(
            run_id=run_id, target=self.target, allow_dirty=self.allow_dirty, seed=seed
        )

    def machine_profile(self) -> Profile:
        """The exploration profile, with ``examples`` runs when given (at least 1)."""
        from conformance.machines.profiles import get_profile

        profile = get_profile(self.profile)
        if self.examples is None:
            return profile
        if self.examples < 1:
            raise UsageError("--examples must be at least 1")
        return dataclasses.replace(profile, max_examples=self.examples)
