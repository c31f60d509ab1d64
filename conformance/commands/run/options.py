"""``memspec run``'s options: the target group (shared by ``replay``, ``fuzz``, ``contract`` and
``replay-concurrent``) and the run group (shared by ``fuzz``), with their defaults."""

from __future__ import annotations

import argparse

from conformance.machines.profiles import PROFILES
from conformance.sources import DEFAULT_LEVEL, LEVELS

DEFAULT_REPORT_DIR = "memspec-report"


# --------------------------------------------------------------------------- options


def add_target_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("target")
    g.add_argument(
        "--target", metavar="URL", help="base URL of the store (default: start the bundled store)"
    )
    tok = g.add_mutually_exclusive_group()
    tok.add_argument(
        "--token-env", metavar="VAR", help="environment variable holding the bearer token"
    )
    tok.add_argument(
        "--token-file", metavar="FILE", help="file whose first line is the bearer token"
    )
    g.add_argument(
        "--target-profile",
        metavar="FILE",
        help="TOML file: [target] url/token_env/token_file/timeout_s, [capabilities]",
    )
    g.add_argument(
        "--with",
        dest="with_caps",
        metavar="CAP",
        action="append",
        default=[],
        help="declare a capability present (repeatable)",
    )
    g.add_argument(
        "--without",
        dest="without_caps",
        metavar="CAP",
        action="append",
        default=[],
        help="declare a capability absent (repeatable)",
    )
    g.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="deadline in seconds for each whole request, answer included (default 10)",
    )
    g.add_argument(
        "--ca-cert",
        metavar="FILE",
        help="PEM file of certificate authorities to trust for an https:// target",
    )
    g.add_argument(
        "--ledger-target",
        dest="ledger_targets",
        metavar="URL",
        action="append",
        default=[],
        help="another instance of the same ledger store (same token; repeatable).  A ledger "
        "has one account scope, so its work runs one step at a time per instance: ledger "
        "scenarios and machine runs are spread over --target and these",
    )


def add_run_options(p: argparse.ArgumentParser, *, machines: bool = True) -> None:
    p.add_argument(
        "--spec",
        choices=["memory", "ledger", "all"],
        default="all",
        help="which protocol(s) to check",
    )
    if machines:
        p.add_argument(
            "--profile",
            choices=list(PROFILES),
            default="quick",
            help="state-machine exploration profile",
        )
        p.add_argument(
            "--seed", type=int, help="seed of the state machines (reproduces a run exactly)"
        )
        p.add_argument(
            "--examples",
            type=int,
            metavar="N",
            help="number of state-machine runs (default: the profile's)",
        )
    add_level_option(p)
    p.add_argument(
        "--report",
        metavar="DIR",
        default=DEFAULT_REPORT_DIR,
        help=f"report directory (default {DEFAULT_REPORT_DIR}/)",
    )
    p.add_argument(
        "--expect",
        metavar="FILE",
        help="YAML/JSON list of expected divergences {clause|scenario, reason}",
    )
    p.add_argument(
        "--expect-update",
        metavar="FILE",
        help="record every divergence FILE does not accept yet as an entry with reason: TODO"
        " (FILE is created if missing, and used as --expect)",
    )
    p.add_argument(
        "--expect-prune",
        action="store_true",
        help="drop the expectations this run checked and did not reproduce",
    )
    p.add_argument(
        "--allow-dirty",
        action="store_true",
        help="run even when a protocol that cannot be isolated by scope keys (the ledger) finds"
        " data in the target",
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=DEFAULT_JOBS,
        metavar="N",
        help=f"scenarios in flight at once against one target (default {DEFAULT_JOBS}; 1 = one "
        "at a time). Each works in its own run-unique scopes; the verdict, divergences and "
        "replays do not depend on N",
    )
    p.add_argument(
        "--window",
        type=_window,
        default=DEFAULT_WINDOW,
        metavar="N",
        help=f"steps a machine may have in flight on one connection, sent before the answers "
        f"to earlier ones are back (default {DEFAULT_WINDOW}; 1 = one at a time). A step that "
        "needs a store id still in flight waits for it; the verdict, divergences and replays "
        "do not depend on N",
    )
    p.add_argument(
        "--procs",
        type=_procs,
        default=None,
        metavar="P",
        help="worker processes the memory lanes are spread over, so a run uses more than one "
        "core (default: 2 on a machine with 2 or more cores when --jobs is 2 or more, else 0; "
        "0 = every lane a thread of this process). --jobs N lanes are split evenly over the "
        "P workers; ledger lanes stay threads here. The verdict and the divergences found do "
        "not depend on P",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no live progress line")
    p.add_argument(
        "--clients",
        type=int,
        metavar="N",
        help="also run N concurrent clients and check the histories are linearizable",
    )
    if machines:
        p.add_argument(
            "--shard",
            metavar="K/N",
            help="run shard K of N: a deterministic part of the corpus and of the machines'"
            " examples (merge the N reports with `memspec report merge`)",
        )
        p.add_argument(
            "--run-id",
            metavar="ID",
            help="base run id every shard shares (memspec-[a-z0-9]{4,20}; default: derived from"
            " the seed and the options)",
        )


def add_level_option(p: argparse.ArgumentParser) -> None:
    """``--level {seed,reference}``: what fails a run (conformance.sources)."""
    p.add_argument(
        "--level",
        choices=LEVELS,
        default=DEFAULT_LEVEL,
        help="seed (default): fail only on what the seeds (and the ledger binding) say; a"
        " difference on a reference clause is reported as a deviation from the reference"
        " implementation and passes. reference: deviations fail too (a drop-in twin of the"
        " upstream)",
    )


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


def _window(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--window takes a whole number, not {text!r}") from None
    if not 1 <= n <= MAX_WINDOW:
        raise argparse.ArgumentTypeError(f"--window must be from 1 to {MAX_WINDOW}, not {n}")
    return n


#: At most this many worker processes (``--procs``).
MAX_PROCS = 16


def _procs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--procs takes a whole number, not {text!r}") from None
    if not 0 <= n <= MAX_PROCS:
        raise argparse.ArgumentTypeError(f"--procs must be from 0 to {MAX_PROCS}, not {n}")
    return n


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs takes a whole number, not {text!r}") from None
    if not 1 <= n <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"--jobs must be from 1 to {MAX_JOBS}, not {n}")
    return n
