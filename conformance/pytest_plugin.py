"""pytest plugin shipped with memspec (registered through the ``pytest11`` entry point).

It always registers the ``clause`` marker, so any suite can tag tests with the clause ids they
cover.  Everything else happens only when ``--memspec-target URL`` is given: then the session
gets one test item per corpus scenario and one per state machine, run against that URL over
HTTP — the same drivers, oracle and machines as ``memspec run``::

    pytest --memspec-target http://127.0.0.1:8787 --memspec-profile ci --junitxml=out/junit.xml

Items are named ``memspec::<protocol>::<scenario name>`` and ``memspec::<protocol>::<protocol>-
machine``; each carries ``pytest.mark.clause(...)`` with the clause ids it checks and
``pytest.mark.memspec``.  A divergence fails the item with the step, the clauses, what the model
allowed, what the target said and the path of a replay file; a scenario needing a capability
the target lacks is skipped with the reason; a target that cannot be reached at all is one
``pytest.UsageError`` before any item runs.

Sharding with pytest-xdist (``-n N``): every process has its own run id (the controller's run
id plus the worker id), so every worker writes only scope keys of its own.  The ledger has one
account scope that its scenarios reset, so all ledger items must run on one worker: they form
the xdist group ``memspec-ledger``.  Under ``--dist loadgroup`` — and under the default
``--dist load``, which this plugin switches to ``loadgroup`` (the same for every item without a
group) — a worker names the group in each ledger item's node id itself
(``memspec::ledger::<name>@memspec-ledger``, the form xdist's LoadGroupScheduling reads):
pytest-xdist 3.8 derives that suffix from the ``xdist_group`` mark by assigning
``item._nodeid``, which pytest 9.2 no longer reads, so the mark alone would scatter the group.
``loadscope``/``loadfile`` keep the ledger items together by themselves; ``each`` and
``worksteal`` cannot, and are refused while the ledger is checked.  Only the worker that gets
the ledger items ever opens the ledger; the controller checks the target once before any
worker starts.

Without ``--memspec-target`` every hook returns at once and nothing beyond this module and
pytest is imported: the plugin is loaded for every pytest run of every project that installs
memspec.  The plugin never imports ``conformance.embedded``; it reaches stores over HTTP only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from conformance.drivers.base import Driver, Exchange, StepOutcome, TargetConfig
    from conformance.machines.profiles import Profile
    from conformance.report.expect import Expectation
    from conformance.scenario import Scenario

SPECS = ("memory", "ledger", "all")
PROFILES = ("quick", "ci", "deep")
DEFAULT_TOKEN_ENV = "MEMSPEC_TOKEN"
DEFAULT_REPLAY_DIR = "memspec-replays"
LEDGER_GROUP = "memspec-ledger"
#: How much of a JSON body or a model description one line of a failure message shows.
_LINE = 400

_RUN = pytest.StashKey["MemspecRun"]()


# --------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("memspec", "memspec conformance checks (active only with --memspec-target)")
    g.addoption(
        "--memspec-target",
        metavar="URL",
        dest="memspec_target",
        default=None,
        help="check the store at URL: one item per corpus scenario and per state machine",
    )
    g.addoption(
        "--memspec-token-env",
        metavar="VAR",
        dest="memspec_token_env",
        default=None,
        help=f"environment variable holding the bearer token (default {DEFAULT_TOKEN_ENV};"
        " when the default is unset no token is sent)",
    )
    g.addoption(
        "--memspec-token-file",
        metavar="FILE",
        dest="memspec_token_file",
        default=None,
        help="file whose first line is the bearer token",
    )
    g.addoption(
        "--memspec-spec",
        choices=SPECS,
        dest="memspec_spec",
        default="all",
        help="which protocol(s) to check (default all)",
    )
    g.addoption(
        "--memspec-profile",
        choices=PROFILES,
        dest="memspec_profile",
        default="quick",
        help="state-machine exploration profile (default quick; ci is deterministic)",
    )
    g.addoption(
        "--memspec-seed",
        type=int,
        metavar="N",
        dest="memspec_seed",
        default=None,
        help="seed of the state machines (reproduces a machine run)",
    )
    g.addoption(
        "--memspec-examples",
        type=int,
        metavar="N",
        dest="memspec_examples",
        default=None,
        help="number of state-machine runs (default: the profile's)",
    )
    g.addoption(
        "--memspec-allow-dirty",
        action="store_true",
        dest="memspec_allow_dirty",
        default=False,
        help="check the ledger even when it already holds records",
    )
    g.addoption(
        "--memspec-corpus",
        metavar="DIR",
        action="append",
        dest="memspec_corpus",
        default=[],
        help="extra scenarios: DIR/*.json and DIR/<protocol>/*.json, or one file (repeatable)",
    )
    g.addoption(
        "--memspec-expect",
        metavar="FILE",
        dest="memspec_expect",
        default=None,
        help="YAML/JSON list of known divergences {clause|scenario, reason}: they xfail",
    )
    g.addoption(
        "--memspec-expect-update",
        metavar="FILE",
        dest="memspec_expect_update",
        default=None,
        help="record every divergence FILE does not accept yet (reason: TODO); FILE is also"
        " used as --memspec-expect",
    )
    g.addoption(
        "--memspec-expect-prune",
        action="store_true",
        dest="memspec_expect_prune",
        default=False,
        help="drop the expectations this run checked and did not reproduce",
    )
    g.addoption(
        "--memspec-replay-dir",
        metavar="DIR",
        dest="memspec_replay_dir",
        default=DEFAULT_REPLAY_DIR,
        help=f"where replay files of failing items are written (default {DEFAULT_REPLAY_DIR}/)",
    )
    g.addoption(
        "--memspec-timeout",
        type=float,
        metavar="S",
        dest="memspec_timeout",
        default=10.0,
        help="per-request timeout in seconds (default 10)",
    )
    g.addoption(
        "--memspec-with",
        metavar="CAP",
        action="append",
        dest="memspec_with",
        default=[],
        help="declare a target capability present (repeatable)",
    )
    g.addoption(
        "--memspec-without",
        metavar="CAP",
        action="append",
        dest="memspec_without",
        default=[],
        help="declare a target capability absent (repeatable)",
    )


# --------------------------------------------------------------------------- hooks


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "clause(*ids): the spec clause ids (MEM-…, LED-…) this test covers"
    )
    if config.getoption("memspec_target", None) is None:
        return
    config.addinivalue_line(
        "markers", "memspec(protocol, kind): a conformance item added by --memspec-target"
    )
    # Registered here too so that ledger items can carry the mark without pytest-xdist.
    config.addinivalue_line("markers", "xdist_group(name): run these items on one xdist worker")
    config.stash[_RUN] = MemspecRun.from_config(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    run = session.config.stash.get(_RUN, None)
    if run is not None and run.role != "worker":
        run.check_target()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist (controller): hand every worker the run's base id, seed and what was found."""
    run = node.config.stash.get(_RUN, None)
    if run is not None:
        node.workerinput["memspec"] = run.worker_input()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    suite = MemspecSuite.from_parent(session, name="memspec", nodeid="memspec")
    items.extend(session.genitems(suite))


@pytest.hookimpl(tryfirst=True)  # before xdist sends workeroutput back
def pytest_sessionfinish(session: pytest.Session) -> None:
    run = session.config.stash.get(_RUN, None)
    if run is None:
        return
    run.close()
    if run.role == "worker":
        session.config.workeroutput["memspec"] = run.outcome()  # type: ignore[attr-defined]
    else:
        run.maintain_expectations()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist (controller): gather what each worker wrote."""
    run = node.config.stash.get(_RUN, None)
    output = getattr(node, "workeroutput", None) or {}
    if run is not None and isinstance(output.get("memspec"), dict):
        run.merge(output["memspec"])


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    run = config.stash.get(_RUN, None)
    return run.header() if run is not None else None


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    run = config.stash.get(_RUN, None)
    if run is None or run.role == "worker":
        return
    terminalreporter.write_sep("-", "memspec")
    for line in run.summary(verbose=config.getoption("verbose", 0) > 0):
        terminalreporter.write_line(line)


# --------------------------------------------------------------------------- the run


class MemspecRun:
    """What one pytest process knows about the memspec run: options, corpus, drivers."""

    def __init__(self) -> None:
        self.role = "main"  # main (no xdist) | controller | worker
        self.worker_id = ""
        self.url = ""
        self.target: TargetConfig
        self.token_source = "none"
        self.token_hint = ""
        self.spec = "all"
        self.protocols: list[str] = []
        self.profile: Profile
        self.seed = 0
        self.examples: int | None = None  # --memspec-examples, when given
        self.allow_dirty = False
        self.corpus: list[tuple[Scenario, str]] = []
        self.machines: dict[str, tuple[str, ...]] = {}
        self.expectations: list[Expectation] = []
        self.replay_dir = Path(DEFAULT_REPLAY_DIR)
        self.run_base = ""
        self.run_id = ""
        self.notes: list[str] = []
        self.force_loadgroup = False
        self.unavailable: dict[str, str] = {}  # protocol -> why its items are skipped
        self.broken: dict[str, str] = {}  # protocol -> why opening it failed mid-run
        self.drivers: dict[str, Driver] = {}
        self.scopes: dict[str, dict[str, None]] = {}  # protocol -> scope keys written
        self.run_ids: dict[str, None] = {}
        self.replays: list[str] = []
        self.matched: set[int] = set()  # expectation entries some failure matched
        self.expect_file: str | None = None
        self.expect_update = self.expect_prune = False
        self.checked: list[dict[str, Any]] = []  # every result, for --memspec-expect-update/prune
        self.baseline_lines: list[str] = []

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def from_config(cls, config: pytest.Config) -> MemspecRun:
        """Read and check the options (a mistake is a ``pytest.UsageError``), load the corpus."""
        from conformance.drivers.base import RUN_ID, Secret, TargetConfig
        from conformance.machines import pick_seed
        from conformance.machines.profiles import get_profile
        from conformance.report.expect import ExpectError, load_expectations, todo_warning
        from conformance.targets.base import TargetError, check_url, load_token

        run = cls()
        opt = config.getoption
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None:
            run.role = "worker"
            run.worker_id = str(workerinput.get("workerid", ""))
        elif _xdist_controller(config):
            run.role = "controller"
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
        except TargetError as exc:
            raise pytest.UsageError(f"memspec: {exc}") from exc
        timeout = float(opt("memspec_timeout"))
        if not timeout > 0:
            raise pytest.UsageError("memspec: --memspec-timeout must be positive")
        declared, denied = frozenset(opt("memspec_with")), frozenset(opt("memspec_without"))
        if declared & denied:
            raise pytest.UsageError(
                f"memspec: capability declared both present and absent: {sorted(declared & denied)}"
            )
        run.target = TargetConfig(
            run.url, token, timeout, declared=declared, denied=denied, label=run.url
        )
        run.spec = opt("memspec_spec")
        run.protocols = ["memory", "ledger"] if run.spec == "all" else [run.spec]
        profile = get_profile(opt("memspec_profile"))
        examples = opt("memspec_examples")
        if examples is not None:
            if examples < 1:
                raise pytest.UsageError("memspec: --memspec-examples must be at least 1")
            profile = _replace(profile, max_examples=examples)
            run.examples = examples
        run.profile = profile
        run.allow_dirty = bool(opt("memspec_allow_dirty"))
        replay_dir = Path(opt("memspec_replay_dir"))
        run.replay_dir = (
            replay_dir if replay_dir.is_absolute() else config.invocation_params.dir / replay_dir
        )
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
            if warning and workerinput is None:
                run.notes.append(warning)
        run.corpus = _load_corpus(run.protocols, [Path(p) for p in opt("memspec_corpus")])
        run.machines = _machines(run.protocols)

        shared = (workerinput or {}).get("memspec") or {}
        run.seed = int(shared.get("seed", pick_seed(profile, opt("memspec_seed"))))
        run.run_base = str(shared.get("run_base") or _new_run_id())
        run.unavailable = dict(shared.get("unavailable") or {})
        run.run_id = run.run_base + re.sub(r"[^a-z0-9]", "", run.worker_id.lower())
        if not RUN_ID.fullmatch(run.run_id):  # pragma: no cover - worker ids are gw<n>
            run.run_id = _new_run_id()
        run.run_ids[run.run_id] = None
        if run.role == "worker" and shared.get("loadgroup"):
            config.option.loadgroup = True  # MemspecProtocol.collect names the group then
        if run.role == "controller":
            run._arrange_distribution(config)
        return run

    def _arrange_distribution(self, config: pytest.Config) -> None:
        """Keep every ledger item on one xdist worker (see the module docstring)."""
        if "ledger" not in self.protocols:
            return
        dist = getattr(config.option, "dist", "no")
        if dist == "load":
            config.option.dist = "loadgroup"
            self.force_loadgroup = True
            self.notes.append(
                "--dist load switched to loadgroup so that the ledger items run on one worker"
            )
        elif dist in ("each", "worksteal"):
            raise pytest.UsageError(
                f"memspec: --dist {dist} would run the ledger checks on several workers at once"
                " against one account ledger; use --dist loadgroup (the default with -n) or"
                " --memspec-spec memory"
            )

    def worker_input(self) -> dict[str, Any]:
        return {
            "run_base": self.run_base,
            "seed": self.seed,
            "unavailable": dict(self.unavailable),
            "loadgroup": self.force_loadgroup,
        }

    # -- the target -------------------------------------------------------------------------

    def check_target(self) -> None:
        """Open every protocol once before any item runs.  Nothing usable → UsageError; one
        protocol of ``--memspec-spec all`` unusable → its items are skipped with the reason."""
        from conformance.targets.base import TargetError

        errors: dict[str, str] = {}
        for protocol in self.protocols:
            try:
                self.drivers[protocol] = self._open(protocol)
            except TargetError as exc:
                errors[protocol] = _option_names(str(exc), self.url)
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
        from conformance.drivers import driver_factory
        from conformance.drivers.base import RunContext

        ctx = RunContext(
            run_id=self.run_id, target=self.target, allow_dirty=self.allow_dirty, seed=self.seed
        )
        return driver_factory(protocol)(ctx)

    def driver(self, protocol: str) -> Driver:
        """The driver of ``protocol`` for this process, opened on first use (a worker opens
        only the protocols of the items it was given — the ledger on one worker only)."""
        from conformance.targets.base import TargetError

        if protocol in self.unavailable:
            _skip(self.unavailable[protocol])
        if protocol in self.broken:
            pytest.fail(self.broken[protocol], pytrace=False)
        driver = self.drivers.get(protocol)
        if driver is None:
            try:
                driver = self.drivers[protocol] = self._open(protocol)
            except TargetError as exc:
                self.broken[protocol] = (
                    f"memspec: cannot use {self.url}: {_option_names(str(exc), self.url)}"
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
        shown = _shown(path)
        self.replays.append(shown)
        return shown

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

    def outcome(self) -> dict[str, Any]:
        """What a worker sends back to the controller."""
        return {
            "run_id": self.run_id,
            "scopes": {p: list(s) for p, s in self.scopes.items()},
            "replays": list(self.replays),
            "matched": sorted(self.matched),
            "checked": list(self.checked),
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.run_ids[str(data.get("run_id"))] = None
        for protocol, keys in (data.get("scopes") or {}).items():
            self.scopes.setdefault(protocol, {}).update(dict.fromkeys(keys))
        self.replays += list(data.get("replays") or [])
        self.matched.update(int(i) for i in data.get("matched") or [])
        self.checked += list(data.get("checked") or [])

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
                shown = ", ".join(
                    k if k.isascii() and k.isprintable() else json.dumps(k) for k in keys
                )
                lines.append(f"{protocol}: wrote into {len(keys)} scope key(s): {shown}")
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


def _xdist_controller(config: pytest.Config) -> bool:
    option = config.option
    return (
        getattr(option, "dist", "no") != "no"
        and bool(getattr(option, "tx", None))
        and not getattr(option, "collectonly", False)
    )


def _new_run_id() -> str:
    import secrets

    return "memspec-" + secrets.token_hex(4)


def _replace(profile: Profile, **changes: Any) -> Profile:
    import dataclasses

    return dataclasses.replace(profile, **changes)


def _option_names(message: str, url: str) -> str:
    """A driver's message without its leading URL, naming the plugin's options, not the CLI's."""
    return message.removeprefix(f"{url}: ").replace("--allow-dirty", "--memspec-allow-dirty")


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _real_path(source: str) -> Path:
    """The file a corpus path names (bundled ones are shown as ``conformance/corpus/…``)."""
    path = Path(source)
    if path.is_absolute() or path.exists():
        return path
    from conformance.runner import CORPUS_DIR

    try:
        return CORPUS_DIR / path.relative_to("conformance/corpus")
    except ValueError:
        return path


def _load_corpus(protocols: list[str], extra: list[Path]) -> list[tuple[Scenario, str]]:
    """The bundled corpus plus ``--memspec-corpus`` scenarios of the protocols checked."""
    from conformance.runner import load_corpus
    from conformance.scenario import ScenarioError, load_scenario

    try:
        corpus = load_corpus(protocols)
        seen = {item_name(s.name): path for s, path in corpus}
        for root in extra:
            if root.is_file():
                files = [root]
            elif root.is_dir():
                files = sorted(root.glob("*.json"))
                for protocol in protocols:
                    files += sorted((root / protocol).glob("*.json"))
            else:
                raise ScenarioError(f"--memspec-corpus {root}: no such file or directory")
            for path in files:
                scenario = load_scenario(path)
                if scenario.protocol not in protocols:
                    continue
                key = item_name(scenario.name)
                if key in seen:
                    raise ScenarioError(
                        f"{path}: scenario name {scenario.name!r} is already used by {seen[key]}"
                    )
                seen[key] = str(path)
                corpus.append((scenario, _shown(path)))
    except ScenarioError as exc:
        raise pytest.UsageError(f"memspec: corpus: {exc}") from exc
    return corpus


def _machines(protocols: list[str]) -> dict[str, tuple[str, ...]]:
    """protocol → the clauses its state machine checks, for the machines that exist."""
    import importlib

    from conformance.machines import machine_class

    out: dict[str, tuple[str, ...]] = {}
    for protocol in protocols:
        try:
            module = importlib.import_module(machine_class(protocol).__module__)
        except (ImportError, KeyError):
            continue
        out[protocol] = tuple(getattr(module, "MACHINE_CLAUSES", ()))
    return out


# --------------------------------------------------------------------------- nodes


def _skip(reason: str) -> NoReturn:
    """Skip the running item, reported at the item's own location (its scenario file), not at
    this line — the form pytest's own skip marks use."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


class MemspecDivergence(Exception):
    """A target answered what the model does not allow (or could not be judged)."""


class MemspecSuite(pytest.Collector):
    """``memspec``: one child per protocol checked."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        for protocol in self.config.stash[_RUN].protocols:
            yield MemspecProtocol.from_parent(self, name=protocol)


class MemspecProtocol(pytest.Collector):
    """``memspec::<protocol>``: its scenarios in corpus order, then its state machine."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        run = self.config.stash[_RUN]
        protocol = self.name
        # On an xdist worker with --dist loadgroup, ledger items name their group in the node
        # id themselves (``…@memspec-ledger``, the form LoadGroupScheduling reads): pytest-xdist
        # 3.8 derives that suffix from the xdist_group mark by assigning ``item._nodeid``,
        # which pytest 9.2 no longer reads, so the mark alone would scatter the ledger items.
        grouped = (
            protocol == "ledger"
            and run.role == "worker"
            and bool(getattr(self.config.option, "loadgroup", False))
        )
        named = {e.scenario: e for e in run.expectations if e.scenario}

        def node_id(name: str) -> str | None:
            return f"{self.nodeid}::{name}@{LEDGER_GROUP}" if grouped else None

        for scenario, source in run.corpus:
            if scenario.protocol != protocol:
                continue
            name = item_name(scenario.name)
            item = MemspecScenarioItem.from_parent(
                self, name=name, nodeid=node_id(name), scenario=scenario, source=source
            )
            clauses = scenario.all_clauses()
            _mark(item, protocol, "scenario", clauses, named.get(scenario.name), grouped)
            yield item
        if protocol in run.machines:
            name = f"{protocol}-machine"
            machine = MemspecMachineItem.from_parent(
                self, name=name, nodeid=node_id(name), protocol=protocol
            )
            clauses = list(run.machines[protocol])
            _mark(machine, protocol, "machine", clauses, named.get(name), grouped)
            yield machine


def item_name(scenario_name: str) -> str:
    """A scenario's name as a node-id segment (no ``::``, ``[``, ``@`` or spaces)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", scenario_name).strip("_") or "scenario"


def _mark(
    item: pytest.Item,
    protocol: str,
    kind: str,
    clauses: list[str],
    expected: Any,
    grouped: bool,
) -> None:
    if clauses:
        item.add_marker(pytest.mark.clause(*clauses))
    item.add_marker(pytest.mark.memspec(protocol=protocol, kind=kind))
    if protocol == "ledger" and not grouped:  # grouped: the node id already names the group
        item.add_marker(pytest.mark.xdist_group(LEDGER_GROUP))
    if expected is not None:  # a named known divergence: a pass shows as XPASS (stale entry)
        item.add_marker(pytest.mark.xfail(reason=f"expected: {expected.reason}", strict=False))
    item.user_properties.append(("clauses", " ".join(clauses)))


class MemspecItem(pytest.Item):
    protocol = ""

    @property
    def run(self) -> MemspecRun:
        return self.config.stash[_RUN]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, MemspecDivergence):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)


class MemspecScenarioItem(MemspecItem):
    """One corpus scenario, run step by step until its first divergence."""

    def __init__(self, *, scenario: Scenario, source: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.source = source
        self.protocol = scenario.protocol

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return _real_path(self.source), 0, f"memspec {self.protocol} scenario {self.scenario.name}"

    def runtest(self) -> None:
        from conformance.runner import run_scenario

        run = self.run
        result = run_scenario(run.driver(self.protocol), self.scenario, path=self.source)
        self.user_properties.append(("memspec_verdict", result.verdict))
        run.record(self.scenario.name, result.verdict, self.scenario.all_clauses(),
                   result.failed_clauses(), result.failing_step, result.reason)  # fmt: skip
        if result.verdict == "skip":
            _skip(result.reason)
        if result.verdict == "pass":
            return
        step = result.failing_step
        replay = run.save_replay("scenario", self.scenario.name, self.scenario, result.outcomes)
        self.user_properties += [
            ("replay", replay),
            ("failed_clauses", " ".join(result.failed_clauses())),
        ]
        verb = "diverges" if result.verdict == "fail" else "could not be judged"
        where = f" at step {step.index} ({step.op})" if step is not None else f": {result.reason}"
        lines = [f"memspec {self.protocol} scenario {self.scenario.name} {verb}{where}"]
        lines.append(f"  scenario:      {self.source}")
        lines += _step_lines(step, result.failed_clauses())
        lines.append(f"  replay file:   {replay}")
        lines.append(f"  rerun:         {run.replay_hint(replay)}")
        run.fail(self.scenario.name, result.failed_clauses(), "\n".join(lines))


class MemspecMachineItem(MemspecItem):
    """One protocol's differential state machine under the run's profile and seed."""

    def __init__(self, *, protocol: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.protocol = protocol

    def reportinfo(self) -> tuple[Path, int | None, str]:
        import inspect

        from conformance.machines import machine_class

        source = inspect.getsourcefile(machine_class(self.protocol)) or __file__
        return Path(source), 0, f"memspec {self.protocol} state machine"

    def runtest(self) -> None:
        from conformance.machines import run_machine
        from conformance.runner import run_scenario

        run = self.run
        driver = run.driver(self.protocol)
        result = run_machine(self.protocol, driver, run.profile, run.seed)
        run.record(self.name, result.verdict, run.machines.get(self.protocol, ()), result.clauses,
                   result.failure, result.reason)  # fmt: skip
        self.user_properties += [
            ("memspec_verdict", result.verdict),
            ("seed", str(result.seed)),
            ("profile", result.profile),
            ("examples", str(result.examples)),
            ("steps", str(result.steps)),
        ]
        if result.verdict == "skip":
            _skip(result.reason)
        if result.verdict == "pass":
            return
        verb = "found a divergence" if result.verdict == "fail" else "could not judge the target"
        lines = [
            f"memspec {self.protocol} state machine {verb}"
            + ("" if result.failure is not None else f": {result.reason}"),
            f"  exploration:   profile {result.profile}, seed {result.seed},"
            f" {result.examples} runs, {result.steps} steps",
        ]
        step = result.failure
        replay = ""
        if result.replay is not None:
            # Run the shrunk scenario once more on a fresh start: it confirms the failure and
            # records the transcript that goes into the replay file.
            confirm = run_scenario(driver, result.replay)
            if confirm.failing_step is not None:
                step = confirm.failing_step
            replay = run.save_replay(
                "machine", f"{self.name}-seed-{result.seed}", result.replay, confirm.outcomes
            )
            self.user_properties += [
                ("replay", replay),
                ("failed_clauses", " ".join(result.clauses)),
            ]
            again = "yes" if confirm.verdict == "fail" else f"no ({confirm.verdict})"
            lines.append(
                f"  shrunk run:    {len(result.replay.steps)} step(s); reproduced on a fresh"
                f" run: {again}"
            )
        if result.details.get("shrink_cut"):
            lines.append(
                "  note:          shrinking stopped at the profile's shrink budget; the replay"
                " is the smallest failing run found by then"
            )
        elif result.details.get("flaky"):
            lines.append("  note:          the failure did not reproduce on every replay")
        lines += _step_lines(step, list(result.clauses))
        if replay:
            lines.append(f"  replay file:   {replay}")
            lines.append(f"  rerun:         {run.replay_hint(replay)}")
        examples = f" --memspec-examples {run.examples}" if run.examples else ""
        lines.append(
            f"  explore again: pytest --memspec-target {run.url} --memspec-profile"
            f" {run.profile.name}{examples} --memspec-seed {result.seed} -k {self.name}"
        )
        run.fail(self.name, list(result.clauses), "\n".join(lines))


# --------------------------------------------------------------------------- messages


def _trim(text: str, limit: int = _LINE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _said(ex: Exchange | None) -> str:
    if ex is None:
        return "(no request was sent)"
    if ex.status is None:
        return f"no HTTP answer: {ex.transport_error}"
    if ex.body is not None:
        body = _json(ex.body)
    elif ex.raw_excerpt:
        body = f"{ex.body_error or ''} {ex.raw_excerpt!r}"
    else:
        body = ex.body_error or ""
    return _trim(f"{ex.status} {body}".strip())


def _step_lines(step: StepOutcome | None, clauses: list[str]) -> list[str]:
    """The failing step: where, which clauses, the request, what was allowed, what came back."""
    if step is None:
        return [f"  clauses:       {', '.join(clauses) or '(none named)'}"]
    lines = [
        f"  step:          {step.index} ({step.op}) — {step.verdict}: {_trim(step.reason)}",
        f"  clauses:       {', '.join(step.clauses or tuple(clauses)) or '(none named)'}",
    ]
    ex = step.exchange
    if ex is not None:
        request = f"{ex.method} {ex.path}"
        if ex.request_body is not None:
            request += " " + _json(ex.request_body)
        lines.append(f"  request:       {_trim(request)}")
    allowed = [ln for ln in step.expected.splitlines() if ln.strip()] or ["(not stated)"]
    lines.append(f"  model allowed: {_trim(allowed[0])}")
    lines += [f"                 {_trim(ln)}" for ln in allowed[1:8]]
    if len(allowed) > 8:
        lines.append(f"                 … {len(allowed) - 8} more line(s) in the replay file")
    lines.append(f"  target said:   {_said(ex)}")
    return lines
