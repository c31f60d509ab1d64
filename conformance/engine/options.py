"""The run and target options, each declared once, and both their front ends built from it.

:data:`TARGET` (where the store is and how to reach it) and :data:`RUN` (what one run does)
hold one :class:`Option` each.  :func:`add_target_options` / :func:`add_run_options` build the
``memspec`` options from them (``--jobs``); :func:`add_pytest_options` builds the pytest
plugin's (``--memspec-spec``) from those that have a :class:`Plugin` twin, plus
:data:`PLUGIN_ONLY`.  :func:`config_fields` maps the values a front end read back (keyed by
:attr:`Option.key`) onto :class:`~conformance.engine.config.RunConfig` fields
(:func:`pytest_config_fields`: the pytest side's, over :func:`pytest_twins`).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.engine.config import (
    DEFAULT_JOBS,
    DEFAULT_REPORT_DIR,
    DEFAULT_WINDOW,
    MAX_JOBS,
    MAX_PROCS,
    MAX_WINDOW,
)
from conformance.sources import DEFAULT_LEVEL, LEVELS

#: The variable the plugin reads the token from when no ``--memspec-token-*`` option is given.
DEFAULT_TOKEN_ENV = "MEMSPEC_TOKEN"
DEFAULT_REPLAY_DIR = "memspec-replays"
SPECS = ("memory", "ledger", "all")
#: The names of :data:`conformance.machines.profiles.PROFILES`, not imported from there: the
#: pytest options are built in every pytest session, and must load nothing heavy
#: (``tests/plugin`` checks the two agree).
PROFILES = ("quick", "ci", "deep")

_SAME: Any = object()


@dataclass(frozen=True)
class Plugin:
    """An option's pytest twin: what differs from the ``memspec`` side (``_SAME``: nothing)."""

    help: str
    default: Any = _SAME
    metavar: Any = _SAME
    #: the twin's name when it is not ``--memspec-`` + the ``memspec`` flag
    name: str = ""


@dataclass(frozen=True)
class Option:
    """One option: its ``memspec`` flags, parser, default, help; its pytest twin, if any."""

    flags: tuple[str, ...]
    help: str
    dest: str = ""
    type: Callable[[str], Any] | None = None
    default: Any = None
    choices: Sequence[str] | None = None
    metavar: str | None = None
    action: str | None = None  # "store_true" | "append"
    #: the RunConfig field the value fills ("": none, the front end reads it itself)
    field: str = ""
    #: options sharing a name here are mutually exclusive
    exclusive: str = ""
    plugin: Plugin | None = None

    @property
    def name(self) -> str:
        return self.flags[0]

    @property
    def key(self) -> str:
        """The ``argparse`` dest of the ``memspec`` side."""
        return self.dest or self.name.lstrip("-").replace("-", "_")

    @property
    def plugin_name(self) -> str:
        assert self.plugin is not None
        return self.plugin.name or "--memspec-" + self.name.lstrip("-")

    @property
    def plugin_key(self) -> str:
        return self.plugin_name.lstrip("-").replace("-", "_")


def _bounded(flag: str, low: int, high: int) -> Callable[[str], int]:
    """A parser for a whole number from ``low`` to ``high`` (``argparse`` shows its message)."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number, not {text!r}") from None
        if not low <= n <= high:
            raise argparse.ArgumentTypeError(f"{flag} must be from {low} to {high}, not {n}")
        return n

    return parse


TOKEN_ENV_HELP = (
    f"environment variable holding the bearer token (default {DEFAULT_TOKEN_ENV};"
    " when the default is unset no token is sent)"
)

TARGET: tuple[Option, ...] = (
    Option(("--target",), "base URL of the store (default: start the bundled store)",
           metavar="URL", plugin=Plugin(
               "check the store at URL: one item per corpus scenario and per state machine")),
    Option(("--token-env",), "environment variable holding the bearer token", metavar="VAR",
           exclusive="token", plugin=Plugin(TOKEN_ENV_HELP)),
    Option(("--token-file",), "file whose first line is the bearer token", metavar="FILE",
           exclusive="token", plugin=Plugin("file whose first line is the bearer token")),
    Option(("--target-profile",),
           "TOML file: [target] url/token_env/token_file/timeout_s, [capabilities]",
           metavar="FILE"),
    Option(("--with",), "declare a capability present (repeatable)", dest="with_caps",
           metavar="CAP", action="append", default=[],
           plugin=Plugin("declare a target capability present (repeatable)")),
    Option(("--without",), "declare a capability absent (repeatable)", dest="without_caps",
           metavar="CAP", action="append", default=[],
           plugin=Plugin("declare a target capability absent (repeatable)")),
    Option(("--timeout",),
           "deadline in seconds for each whole request, answer included (default 10)",
           type=float, metavar="S",
           plugin=Plugin("per-request timeout in seconds (default 10)", default=10.0)),
    Option(("--ca-cert",), "PEM file of certificate authorities to trust for an https:// target",
           metavar="FILE"),
    Option(("--ledger-target",),
           "another instance of the same ledger store (same token; repeatable).  A ledger has"
           " one account scope, so its work runs one step at a time per instance: ledger"
           " scenarios and machine runs are spread over --target and these",
           dest="ledger_targets", metavar="URL", action="append", default=[]),
)  # fmt: skip

LEVEL = Option(
    ("--level",),
    "seed (default): fail only on what the seeds (and the ledger binding) say; a difference on"
    " a reference clause is reported as a deviation from the reference implementation and"
    " passes. reference: deviations fail too (a drop-in twin of the upstream)",
    choices=LEVELS, default=DEFAULT_LEVEL, field="level",
    plugin=Plugin(
        "seed (default): a difference on a reference clause only is a deviation, reported as a"
        " 'deviation' property and passing; reference: it fails the item (as memspec run"
        " --level)"
    ),
)  # fmt: skip

RUN: tuple[Option, ...] = (
    Option(("--spec",), "which protocol(s) to check", choices=SPECS, default="all",
           field="spec", plugin=Plugin("which protocol(s) to check (default all)")),
    Option(("--profile",), "state-machine exploration profile", choices=PROFILES,
           default="quick", field="profile", plugin=Plugin(
               "state-machine exploration profile (default quick; ci is deterministic)")),
    Option(("--seed",), "seed of the state machines (reproduces a run exactly)", type=int,
           field="seed", plugin=Plugin(
               "seed of the state machines (reproduces a machine run)", metavar="N")),
    Option(("--examples",), "number of state-machine runs (default: the profile's)", type=int,
           metavar="N", field="examples",
           plugin=Plugin("number of state-machine runs (default: the profile's)")),
    LEVEL,
    Option(("--report",), f"report directory (default {DEFAULT_REPORT_DIR}/)", metavar="DIR",
           default=DEFAULT_REPORT_DIR),
    Option(("--expect",), "YAML/JSON list of expected divergences {clause|scenario, reason}",
           metavar="FILE", plugin=Plugin(
               "YAML/JSON list of known divergences {clause|scenario, reason}: they xfail")),
    Option(("--expect-update",),
           "record every divergence FILE does not accept yet as an entry with reason: TODO"
           " (FILE is created if missing, and used as --expect)",
           metavar="FILE", plugin=Plugin(
               "record every divergence FILE does not accept yet (reason: TODO); FILE is also"
               " used as --memspec-expect")),
    Option(("--expect-prune",), "drop the expectations this run checked and did not reproduce",
           action="store_true", field="expect_prune",
           plugin=Plugin("drop the expectations this run checked and did not reproduce")),
    Option(("--allow-dirty",),
           "run even when a protocol that cannot be isolated by scope keys (the ledger) finds"
           " data in the target", action="store_true", field="allow_dirty",
           plugin=Plugin("check the ledger even when it already holds records")),
    Option(("--jobs", "-j"),
           f"scenarios in flight at once against one target (default {DEFAULT_JOBS}; 1 = one"
           " at a time). Each works in its own run-unique scopes; the verdict, divergences and"
           " replays do not depend on N",
           type=_bounded("--jobs", 1, MAX_JOBS), default=DEFAULT_JOBS, metavar="N",
           field="jobs"),
    Option(("--window",),
           "steps a machine may have in flight on one connection, sent before the answers to"
           f" earlier ones are back (default {DEFAULT_WINDOW}; 1 = one at a time). A step that"
           " needs a store id still in flight waits for it; the verdict, divergences and"
           " replays do not depend on N",
           type=_bounded("--window", 1, MAX_WINDOW), default=DEFAULT_WINDOW, metavar="N",
           field="window"),
    Option(("--procs",),
           "worker processes the memory lanes are spread over, so a run uses more than one core"
           " (default: 2 on a machine with 2 or more cores when --jobs is 2 or more, else 0;"
           " 0 = every lane a thread of this process). --jobs N lanes are split evenly over the"
           " P workers; ledger lanes stay threads here. The verdict and the divergences found"
           " do not depend on P",
           type=_bounded("--procs", 0, MAX_PROCS), metavar="P", field="procs"),
    Option(("--quiet", "-q"), "no live progress line", action="store_true"),
    Option(("--clients",),
           "also run N concurrent clients and check the histories are linearizable",
           type=int, metavar="N", field="clients"),
    Option(("--shard",),
           "run shard K of N: a deterministic part of the corpus and of the machines' examples"
           " (merge the N reports with `memspec report merge`)", metavar="K/N"),
    Option(("--run-id",),
           "base run id every shard shares (memspec-[a-z0-9]{4,20}; default: derived from the"
           " seed and the options)", metavar="ID", field="run_id"),
)  # fmt: skip

#: ``memspec run`` alone: the contract phase.
CONTRACT = Option(
    ("--contract",),
    "also fuzz the OpenAPI contract (as `memspec contract --profile PROFILE`); its findings"
    " join the report under their clauses, each with a curl line",
    metavar="PROFILE", choices=("quick", "ci", "deep"), field="contract",
)  # fmt: skip

#: The plugin's own options (no ``memspec`` twin), in the order they are listed.
PLUGIN_ONLY: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--memspec-corpus", {
        "metavar": "DIR", "action": "append", "default": [],
        "help": "extra scenarios: DIR/*.json and DIR/<protocol>/*.json, or one file (repeatable)",
    }),
    ("--memspec-replay-dir", {
        "metavar": "DIR", "default": DEFAULT_REPLAY_DIR,
        "help": f"where replay files of failing items are written (default {DEFAULT_REPLAY_DIR}/)",
    }),
)  # fmt: skip


def _argparse_kwargs(option: Option) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"help": option.help}
    if option.dest:
        kwargs["dest"] = option.dest
    if option.action is not None:
        kwargs["action"] = option.action
    if option.action != "store_true":
        for attr in ("type", "choices", "metavar"):
            if getattr(option, attr) is not None:
                kwargs[attr] = getattr(option, attr)
    if option.default is not None:
        kwargs["default"] = list(option.default) if option.action == "append" else option.default
    return kwargs


def add_options(p: Any, options: Sequence[Option]) -> None:
    """``options`` on ``p`` (a parser or an argument group), mutually exclusive ones together."""
    groups: dict[str, Any] = {}
    for option in options:
        target = p
        if option.exclusive:
            if option.exclusive not in groups:
                groups[option.exclusive] = p.add_mutually_exclusive_group()
            target = groups[option.exclusive]
        target.add_argument(*option.flags, **_argparse_kwargs(option))


def add_target_options(p: argparse.ArgumentParser) -> None:
    """The target group, which every command that reaches a store shares."""
    add_options(p.add_argument_group("target"), TARGET)


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of one run (``memspec run`` and ``memspec fuzz``)."""
    add_options(p, RUN)


def add_level_option(p: argparse.ArgumentParser) -> None:
    """``--level {seed,reference}``: what fails a run (conformance.sources)."""
    add_options(p, (LEVEL,))


def add_pytest_options(group: Any) -> None:
    """The ``--memspec-*`` options on a pytest option group: every twin, then the plugin's own."""
    for option in (*TARGET, *RUN):
        if option.plugin is None:
            continue
        twin = option.plugin
        kwargs: dict[str, Any] = {
            "dest": option.plugin_key,
            "help": twin.help,
            "default": option.default if twin.default is _SAME else twin.default,
        }
        if option.action is not None:
            kwargs["action"] = option.action
        if option.action == "append":
            kwargs["default"] = []
        metavar = option.metavar if twin.metavar is _SAME else twin.metavar
        for attr, value in (("type", option.type), ("choices", option.choices),
                            ("metavar", metavar)):  # fmt: skip
            if value is not None and option.action != "store_true":
                kwargs[attr] = value
        if option.action == "store_true":
            kwargs["default"] = False
        group.addoption(option.plugin_name, **kwargs)
    for name, kwargs in PLUGIN_ONLY:
        group.addoption(name, dest=name.lstrip("-").replace("-", "_"), **kwargs)


def config_fields(values: Mapping[str, Any], options: Sequence[Option]) -> dict[str, Any]:
    """The RunConfig fields ``options`` fill, each from ``values[option.key]`` (one front end's
    reading); an option missing from ``values`` (a front end does not have it) reads as its
    default."""
    return {o.field: values.get(o.key, o.default) for o in options if o.field}


def pytest_twins() -> list[Option]:
    """The options that have a ``--memspec-*`` twin in the pytest plugin."""
    return [o for o in (*TARGET, *RUN) if o.plugin is not None]


def pytest_config_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """The RunConfig fields the ``--memspec-*`` twins fill, from ``values`` (keyed by
    ``option.key``, each read with pytest's ``getoption`` of its ``plugin_key``); a field no
    twin fills keeps RunConfig's own default."""
    return config_fields(values, pytest_twins())


def pytest_flags(text: str) -> str:
    """``text`` (an engine message naming ``memspec`` options) naming their pytest twins."""
    twins = {o.name: o.plugin_name for o in pytest_twins()}
    return re.sub(r"--[a-z][a-z-]*", lambda m: twins.get(m.group(), m.group()), text)
