"""Reading the ``--memspec-*`` options into a ``MemspecRun``: every mistake is one
``pytest.UsageError`` (``memspec: …``) before any item runs."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.pytest_plugin.corpus import load_corpus, machines
from conformance.pytest_plugin.options import DEFAULT_TOKEN_ENV
from conformance.pytest_plugin.state import MemspecRun
from conformance.pytest_plugin.xdist import arrange_distribution, is_controller

if TYPE_CHECKING:
    from conformance.vocabulary import Secret


def from_config(config: pytest.Config) -> MemspecRun:
    """Read and check the options, load the corpus, and place this process in an xdist run."""
    from conformance.machines import pick_seed

    run = MemspecRun()
    opt = config.getoption
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        run.role = "worker"
        run.worker_id = str(workerinput.get("workerid", ""))
    elif is_controller(config):
        run.role = "controller"
    _read_target(run, opt)
    run.spec = opt("memspec_spec")
    run.protocols = ["memory", "ledger"] if run.spec == "all" else [run.spec]
    _read_profile(run, opt)
    run.allow_dirty = bool(opt("memspec_allow_dirty"))
    replay_dir = Path(opt("memspec_replay_dir"))
    run.replay_dir = (
        replay_dir if replay_dir.is_absolute() else config.invocation_params.dir / replay_dir
    )
    _read_expectations(run, opt, quiet=workerinput is not None)
    run.corpus = load_corpus(run.protocols, [Path(p) for p in opt("memspec_corpus")])
    run.machines = machines(run.protocols)

    shared = (workerinput or {}).get("memspec") or {}
    run.seed = int(shared.get("seed", pick_seed(run.profile, opt("memspec_seed"))))
    _name_run(run, shared.get("run_base"))
    run.unavailable = dict(shared.get("unavailable") or {})
    if run.role == "worker" and shared.get("loadgroup"):
        config.option.loadgroup = True  # MemspecProtocol.collect names the group then
    if run.role == "controller":
        arrange_distribution(run, config)
    return run


def _read_target(run: MemspecRun, opt: Any) -> None:
    """URL, token (from a file, a named variable, or ``$MEMSPEC_TOKEN``), timeout, capabilities."""
    from conformance.errors import TargetError
    from conformance.session import check_capabilities
    from conformance.targets.base import check_url, load_token
    from conformance.vocabulary import Secret, TargetConfig

    try:
        run.url = check_url(opt("memspec_target"))
        env, file = opt("memspec_token_env"), opt("memspec_token_file")
        if env is not None and file is not None:
            raise TargetError("give --memspec-token-env or --memspec-token-file, not both")
        token: Secret | None
        if file is not None:
            token = load_token(None, file)
            run.token_source, run.token_hint = f"file {file}", f" --token-file {file}"
        elif env is not None:
            token = load_token(env, None)
            run.token_source, run.token_hint = f"${env}", f" --token-env {env}"
        else:
            value = os.environ.get(DEFAULT_TOKEN_ENV, "").strip()
            token = Secret(value) if value else None
            if token:
                run.token_source = f"${DEFAULT_TOKEN_ENV}"
                run.token_hint = f" --token-env {DEFAULT_TOKEN_ENV}"
            else:
                run.token_source = f"none (${DEFAULT_TOKEN_ENV} is unset)"
        timeout = float(opt("memspec_timeout"))
        if not timeout > 0:
            raise TargetError("--memspec-timeout must be positive")
        declared, denied = frozenset(opt("memspec_with")), frozenset(opt("memspec_without"))
        check_capabilities(declared, denied)
    except TargetError as exc:
        raise pytest.UsageError(f"memspec: {exc}") from exc
    run.target = TargetConfig(
        run.url, token, timeout, declared=declared, denied=denied, label=run.url
    )


def _read_profile(run: MemspecRun, opt: Any) -> None:
    from conformance.machines.profiles import get_profile

    profile = get_profile(opt("memspec_profile"))
    run.level = str(opt("memspec_level") or "seed")
    examples = opt("memspec_examples")
    if examples is not None:
        if examples < 1:
            raise pytest.UsageError("memspec: --memspec-examples must be at least 1")
        profile = dataclasses.replace(profile, max_examples=examples)
        run.examples = examples
    run.profile = profile


def _read_expectations(run: MemspecRun, opt: Any, *, quiet: bool) -> None:
    """``--memspec-expect``/``-update``/``-prune``; ``quiet`` (a worker): no TODO warning."""
    from conformance.report.expect import ExpectError, load_expectations, todo_warning

    update, run.expect_prune = opt("memspec_expect_update"), bool(opt("memspec_expect_prune"))
    if update and opt("memspec_expect") and Path(update) != Path(opt("memspec_expect")):
        raise pytest.UsageError("memspec: --memspec-expect and --memspec-expect-update differ")
    run.expect_file, run.expect_update = update or opt("memspec_expect"), bool(update)
    if run.expect_prune and not run.expect_file:
        raise pytest.UsageError("memspec: --memspec-expect-prune needs an expectations file")
    if run.expect_file and (not update or Path(run.expect_file).exists()):
        try:
            run.expectations = load_expectations(run.expect_file)
        except ExpectError as exc:
            raise pytest.UsageError(f"memspec: --memspec-expect: {exc}") from exc
        warning = todo_warning(run.expect_file, run.expectations)
        if warning and not quiet:
            run.notes.append(warning)


def _name_run(run: MemspecRun, base: Any) -> None:
    """The run id: the controller's base id (or a new one) plus this worker's id."""
    from conformance.session import new_run_id
    from conformance.vocabulary import RUN_ID

    run.run_base = str(base or new_run_id())
    run.run_id = run.run_base + re.sub(r"[^a-z0-9]", "", run.worker_id.lower())
    if not RUN_ID.fullmatch(run.run_id):  # pragma: no cover - worker ids are gw<n>
        run.run_id = new_run_id()
    run.run_ids[run.run_id] = None
