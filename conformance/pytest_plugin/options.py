"""The ``--memspec-*`` options: their names, choices and defaults (read in ``settings``)."""

from __future__ import annotations

import pytest

SPECS = ("memory", "ledger", "all")
PROFILES = ("quick", "ci", "deep")
DEFAULT_TOKEN_ENV = "MEMSPEC_TOKEN"
DEFAULT_REPLAY_DIR = "memspec-replays"
#: The xdist group every ledger item joins (see ``conformance.pytest_plugin.xdist``).
LEDGER_GROUP = "memspec-ledger"


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
        "--memspec-level",
        choices=("seed", "reference"),
        dest="memspec_level",
        default="seed",
        help="seed (default): a difference on a reference clause only is a deviation, reported"
        " as a 'deviation' property and passing; reference: it fails the item (as memspec run"
        " --level)",
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
