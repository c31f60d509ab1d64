"""Sharding the memspec items with pytest-xdist (``-n N``).

Every process has its own run id (the controller's run id plus the worker id), so every worker
writes only scope keys of its own.  The ledger has one account scope that its scenarios reset,
so all ledger items must run on one worker: they form the xdist group ``memspec-ledger``.

Under ``--dist loadgroup`` — and under the default ``--dist load``, which this plugin switches
to ``loadgroup`` (the same for every item without a group) — a worker names the group in each
ledger item's node id itself (``memspec::ledger::<name>@memspec-ledger``, the form xdist's
LoadGroupScheduling reads): pytest-xdist 3.8 derives that suffix from the ``xdist_group`` mark
by assigning ``item._nodeid``, which pytest 9.2 no longer reads, so the mark alone would scatter
the group.  ``loadscope``/``loadfile`` keep the ledger items together by themselves; ``each``
and ``worksteal`` cannot, and are refused while the ledger is checked.

Only the worker that gets the ledger items ever opens the ledger; the controller checks the
target once before any worker starts, hands every worker the run's base id, seed and what was
found (``worker_input``), and gathers what each worker wrote (``outcome`` → ``merge``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from conformance.pytest_plugin.options import LEDGER_GROUP
from conformance.pytest_plugin.state import RUN

if TYPE_CHECKING:
    from conformance.pytest_plugin.state import MemspecRun


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist (controller): hand every worker the run's base id, seed and what was found."""
    run = node.config.stash.get(RUN, None)
    if run is not None:
        node.workerinput["memspec"] = worker_input(run)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist (controller): gather what each worker wrote."""
    run = node.config.stash.get(RUN, None)
    output = getattr(node, "workeroutput", None) or {}
    if run is not None and isinstance(output.get("memspec"), dict):
        merge(run, output["memspec"])


def is_controller(config: pytest.Config) -> bool:
    """Whether this process is an xdist controller about to start workers."""
    option = config.option
    return (
        getattr(option, "dist", "no") != "no"
        and bool(getattr(option, "tx", None))
        and not getattr(option, "collectonly", False)
    )


def arrange_distribution(run: MemspecRun, config: pytest.Config) -> None:
    """Controller: keep every ledger item on one worker (see the module docstring)."""
    if "ledger" not in run.protocols:
        return
    dist = getattr(config.option, "dist", "no")
    if dist == "load":
        config.option.dist = "loadgroup"
        run.process.force_loadgroup = True
        run.notes.append(
            "--dist load switched to loadgroup so that the ledger items run on one worker"
        )
    elif dist in ("each", "worksteal"):
        raise pytest.UsageError(
            f"memspec: --dist {dist} would run the ledger checks on several workers at once"
            " against one account ledger; use --dist loadgroup (the default with -n) or"
            " --memspec-spec memory"
        )


def names_group_in_node_id(run: MemspecRun, config: pytest.Config, protocol: str) -> bool:
    """Whether this worker writes ``@memspec-ledger`` into the ledger items' node ids."""
    return (
        protocol == "ledger"
        and run.process.role == "worker"
        and bool(getattr(config.option, "loadgroup", False))
    )


def grouped_node_id(parent_id: str, name: str) -> str:
    return f"{parent_id}::{name}@{LEDGER_GROUP}"


def worker_input(run: MemspecRun) -> dict[str, Any]:
    """What the controller hands every worker."""
    return {
        "run_base": run.run_id,  # the controller's own: the base of every worker's
        "seed": run.config.seed,
        "unavailable": dict(run.opened.unavailable),
        "loadgroup": run.process.force_loadgroup,
    }


def outcome(run: MemspecRun) -> dict[str, Any]:
    """What a worker sends back to the controller."""
    return {
        "run_id": run.run_id,
        "scopes": {p: list(s) for p, s in run.results.scopes.items()},
        "replays": list(run.results.replays),
        "matched": sorted(run.results.matched),
        "checked": list(run.results.checked),
    }


def merge(run: MemspecRun, data: dict[str, Any]) -> None:
    """Controller: add one worker's ``outcome`` to the run's results."""
    results = run.results
    results.run_ids[str(data.get("run_id"))] = None
    for protocol, keys in (data.get("scopes") or {}).items():
        results.scopes.setdefault(protocol, {}).update(dict.fromkeys(keys))
    results.replays += list(data.get("replays") or [])
    results.matched.update(int(i) for i in data.get("matched") or [])
    results.checked += list(data.get("checked") or [])
