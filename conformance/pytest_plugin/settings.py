"""Reading the ``--memspec-*`` options into a ``MemspecRun``: every mistake is one
``pytest.UsageError`` (``memspec: …``) before any item runs.

The run's options become one :class:`~conformance.engine.config.RunConfig`, its fields read
through the option schema (:func:`conformance.engine.options.pytest_config_fields`); what the
schema leaves to the front end (the target and its token, the expectations file, the seed and
run id an xdist controller hands its workers) is read here and set on it."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.pytest_plugin.corpus import load_corpus, machines
from conformance.pytest_plugin.options import DEFAULT_TOKEN_ENV
from conformance.pytest_plugin.state import Checks, MemspecRun, Process, TokenOrigin
from conformance.pytest_plugin.xdist import arrange_distribution, is_controller

if TYPE_CHECKING:
    from conformance.engine.config import RunConfig
    from conformance.report.expect import Expectation
    from conformance.vocabulary import Secret, TargetConfig


def from_config(config: pytest.Config) -> MemspecRun:
    """Read and check the options, load the corpus, and place this process in an xdist run."""
    from conformance.engine.drivers import protocols_for

    opt = config.getoption
    workerinput = getattr(config, "workerinput", None)
    shared = (workerinput or {}).get("memspec") or {}
    process = _process(config, workerinput)
    target, origin = _read_target(opt)
    notes: list[str] = []
    run_config = _run_config(opt, target, shared, process, notes=notes)
    protocols = protocols_for(run_config.spec)
    checks = Checks(
        load_corpus(protocols, [Path(p) for p in opt("memspec_corpus")]), machines(protocols)
    )
    replay_dir = Path(opt("memspec_replay_dir"))
    if not replay_dir.is_absolute():
        replay_dir = config.invocation_params.dir / replay_dir
    run = MemspecRun(
        run_config,
        process=process,
        token_origin=origin,
        checks=checks,
        replay_dir=replay_dir,
        notes=notes,
    )
    run.opened.unavailable = dict(shared.get("unavailable") or {})
    if process.role == "worker" and shared.get("loadgroup"):
        config.option.loadgroup = True  # MemspecProtocol.collect names the group then
    if process.role == "controller":
        arrange_distribution(run, config)
    return run


def _process(config: pytest.Config, workerinput: dict[str, Any] | None) -> Process:
    if workerinput is not None:
        return Process("worker", str(workerinput.get("workerid", "")))
    return Process("controller" if is_controller(config) else "main")


def _run_config(
    opt: Any, target: TargetConfig, shared: dict[str, Any], process: Process, *, notes: list[str]
) -> RunConfig:
    """The run's options through the schema, checked; the seed and run id settled (a worker's
    from its controller); the expectations read (a worker adds no note about them)."""
    from conformance.engine.config import RunConfig
    from conformance.engine.options import pytest_config_fields, pytest_flags, pytest_twins
    from conformance.errors import UsageError
    from conformance.machines import pick_seed

    values = {o.key: opt(o.plugin_key) for o in pytest_twins()}
    asked = RunConfig(**pytest_config_fields(values), target=target)
    try:
        profile = asked.machine_profile()  # checks --memspec-examples
    except UsageError as exc:
        raise pytest.UsageError(f"memspec: {pytest_flags(str(exc))}") from exc
    expectations = _read_expectations(opt, asked, notes=notes, quiet=process.role == "worker")
    return dataclasses.replace(
        asked,
        **expectations,
        seed=int(shared.get("seed", pick_seed(profile, asked.seed))),
        run_id=_run_id(shared.get("run_base"), process.worker_id),
    )


def _read_target(opt: Any) -> tuple[TargetConfig, TokenOrigin]:
    """URL, token (from a file, a named variable, or ``$MEMSPEC_TOKEN``), timeout, capabilities."""
    from conformance.errors import TargetError
    from conformance.session import check_capabilities
    from conformance.targets.jsonrpc import check_target_url
    from conformance.vocabulary import TargetConfig

    try:
        url = check_target_url(opt("memspec_target"))
        token, shown = _read_token(opt)
        timeout = float(opt("memspec_timeout"))
        if not timeout > 0:
            raise TargetError("--memspec-timeout must be positive")
        declared, denied = frozenset(opt("memspec_with")), frozenset(opt("memspec_without"))
        check_capabilities(declared, denied)
    except TargetError as exc:
        raise pytest.UsageError(f"memspec: {exc}") from exc
    return TargetConfig(url, token, timeout, declared=declared, denied=denied, label=url), shown


def _read_token(opt: Any) -> tuple[Secret | None, TokenOrigin]:
    """The token, and how it was given (``TargetError`` when it cannot be read)."""
    from conformance.errors import TargetError
    from conformance.targets.base import load_token
    from conformance.vocabulary import Secret

    env, file = opt("memspec_token_env"), opt("memspec_token_file")
    if env is not None and file is not None:
        raise TargetError("give --memspec-token-env or --memspec-token-file, not both")
    if file is not None:
        return load_token(None, file), TokenOrigin(f"file {file}", f" --token-file {file}")
    if env is not None:
        return load_token(env, None), TokenOrigin(f"${env}", f" --token-env {env}")
    value = os.environ.get(DEFAULT_TOKEN_ENV, "").strip()
    if value:
        return Secret(value), TokenOrigin(
            f"${DEFAULT_TOKEN_ENV}", f" --token-env {DEFAULT_TOKEN_ENV}"
        )
    return None, TokenOrigin(f"none (${DEFAULT_TOKEN_ENV} is unset)")


def _read_expectations(
    opt: Any, asked: RunConfig, *, notes: list[str], quiet: bool
) -> dict[str, Any]:
    """``--memspec-expect``/``-update``/``-prune``: the RunConfig fields they fill; a TODO
    warning goes into ``notes`` (``quiet``, a worker: no warning)."""
    from conformance.report.expect import ExpectError, load_expectations, todo_warning

    update, expect = opt("memspec_expect_update"), opt("memspec_expect")
    if update and expect and Path(update) != Path(expect):
        raise pytest.UsageError("memspec: --memspec-expect and --memspec-expect-update differ")
    expect_file = update or expect
    if asked.expect_prune and not expect_file:
        raise pytest.UsageError("memspec: --memspec-expect-prune needs an expectations file")
    expectations: list[Expectation] = []
    if expect_file and (not update or Path(expect_file).exists()):
        try:
            expectations = load_expectations(expect_file)
        except ExpectError as exc:
            raise pytest.UsageError(f"memspec: --memspec-expect: {exc}") from exc
        warning = todo_warning(expect_file, expectations)
        if warning and not quiet:
            notes.append(warning)
    return {
        "expectations": tuple(expectations),
        "expect_file": expect_file,
        "expect_update": bool(update),
    }


def _run_id(base: Any, worker_id: str) -> str:
    """This process's run id: the controller's base id (or a new one) plus the worker's id."""
    from conformance.engine.config import is_run_id
    from conformance.session import new_run_id

    run_id = str(base or new_run_id()) + re.sub(r"[^a-z0-9]", "", worker_id.lower())
    if not is_run_id(run_id):  # pragma: no cover - worker ids are gw<n>
        run_id = new_run_id()
    return run_id
