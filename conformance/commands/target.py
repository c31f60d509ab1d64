"""Opening the target of a command (``run``, ``fuzz``, ``replay``, ``contract``, ...): the one
named by the target options, or the bundled store started in-process on ``127.0.0.1`` (an
ephemeral port, a random token, test controls on) and stopped at the end --
``start_bundled_store`` is the one place that wires ``conformance.embedded`` in; the harness
itself only ever speaks to it over the wire.  Not a command of its own: the commands share it."""

from __future__ import annotations

import argparse
import importlib
import math
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.errors import TargetError, TargetUnreachable, UsageError
from conformance.targets.base import (
    MAX_TIMEOUT_S,
    HttpTarget,
    load_target_profile,
    load_token,
)
from conformance.targets.jsonrpc import LedgerSocketTarget, check_target_url, is_socket_url
from conformance.vocabulary import Secret, TargetConfig

#: At most this many bundled stores are started to carry the ledger's lanes: on loopback the
#: ledger's work is CPU-bound, and each bundled instance is one more server in this process.
BUNDLED_LEDGER_LANES = 4


@dataclass
class TargetSession:
    config: TargetConfig
    #: more instances of the ledger store (``--ledger-target``, or bundled ones for ``--jobs``)
    ledger_extra: list[TargetConfig] = field(default_factory=list)


def start_bundled_store(token: str, quirks: frozenset[str] = frozenset()) -> Any:
    """Start the bundled store (the only import of ``conformance.embedded`` in the harness).

    ``quirks`` names catalogue entries (allowed variants, mutants) to run it with; ``selftest``
    uses it, a normal run never does.
    """
    server = importlib.import_module("conformance.embedded.server")
    catalogue = importlib.import_module("conformance.embedded.catalogue")
    return server.start_server(
        host="127.0.0.1", port=0, token=token, test_control=True, quirks=catalogue.Quirks(quirks)
    )


@dataclass(frozen=True)
class _Asked:
    """The target the options ask for, checked (``url`` None: the bundled store)."""

    url: str | None
    token: Secret | None
    source: str
    timeout: float
    ca_file: str | None
    declared: frozenset[str]
    denied: frozenset[str]
    initialize: tuple[str, str] | None = None
    ledger_values: tuple[tuple[str, str], ...] = ()


@contextmanager
def open_target(args: argparse.Namespace) -> Iterator[TargetSession]:
    """The target the options name, or a freshly started bundled store (stopped on exit)."""
    try:
        asked = _asked(args)
    except TargetError as exc:
        raise UsageError(str(exc)) from exc
    extra_urls: list[str] = list(getattr(args, "ledger_targets", None) or [])
    if extra_urls and not asked.url:
        raise UsageError("--ledger-target needs --target (the bundled store starts its own)")
    try:
        extra_urls = [check_target_url(u) for u in extra_urls]
    except TargetError as exc:
        raise UsageError(str(exc)) from exc
    if asked.url:
        yield _remote(asked, asked.url, extra_urls)
        return
    with _bundled(asked, int(getattr(args, "jobs", 1) or 1)) as session:
        yield session


def _asked(args: argparse.Namespace) -> _Asked:
    """The target options, with a ``--target-profile`` filling what they leave out."""
    profile = None
    if getattr(args, "target_profile", None):
        profile = load_target_profile(args.target_profile)
    url = args.target or (profile.url if profile else None)
    token_env = args.token_env or (profile.token_env if profile and not args.token_file else None)
    token_file = args.token_file or (profile.token_file if profile and not args.token_env else None)
    if token_env and token_file:
        raise TargetError("the profile names both token_env and token_file")
    timeout = args.timeout if args.timeout is not None else None
    if timeout is None:
        timeout = (profile.timeout_s if profile else None) or 10.0
    if not math.isfinite(timeout) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise TargetError(
            f"--timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g},"
            f" not {timeout:g}"
        )
    ca_file = getattr(args, "ca_cert", None)
    if ca_file is not None and not Path(ca_file).is_file():
        raise TargetError(f"--ca-cert {ca_file}: no such file")
    declared = frozenset(args.with_caps) | (profile.declared if profile else frozenset())
    denied = frozenset(args.without_caps) | (profile.denied if profile else frozenset())
    if declared & denied:
        raise TargetError(
            f"capability declared both present and absent: {sorted(declared & denied)}"
        )
    token, source = None, ""
    if url:
        url = check_target_url(url)
        token = load_token(token_env, token_file)
        if token_env:
            source = f"the token in ${token_env}"
        elif token_file:
            source = f"the token in {token_file}"
        if ca_file is not None and not url.startswith(("https://", "wss://")):
            raise TargetError("--ca-cert is for an https:// or wss:// target")
    elif token_env or token_file:
        raise TargetError(
            "--token-env/--token-file need --target (the bundled store makes its own token)"
        )
    initialize = profile.initialize if profile else None
    if initialize is not None and not (url and is_socket_url(url)):
        raise TargetError(
            "[jsonrpc.initialize] is for a JSON-RPC target (ws://, wss://, ws+unix://)"
        )
    values = profile.ledger_values if profile else ()
    return _Asked(url, token, source, timeout, ca_file, declared, denied, initialize, values)


def _remote(asked: _Asked, url: str, extra_urls: list[str]) -> TargetSession:
    def remote(u: str) -> TargetConfig:
        return TargetConfig(
            u, asked.token, asked.timeout, declared=asked.declared, denied=asked.denied,
            label=u, ca_file=asked.ca_file, token_source=asked.source,
            initialize=asked.initialize if is_socket_url(u) else None,
            ledger_values=asked.ledger_values,
        )  # fmt: skip

    config = remote(url)
    try:
        # Fail on a bad CA file here, as a usage error, not in the middle of a run.
        (LedgerSocketTarget if is_socket_url(url) else HttpTarget)(config).close()
    except TargetError as exc:
        raise UsageError(str(exc)) from exc
    return TargetSession(config, ledger_extra=[remote(u) for u in extra_urls])


@contextmanager
def _bundled(asked: _Asked, jobs: int) -> Iterator[TargetSession]:
    """Bundled stores sharing one fresh token: the ledger's work runs one step at a time per
    instance, so ``jobs`` lanes get up to :data:`BUNDLED_LEDGER_LANES` of them."""
    secret = secrets.token_urlsafe(24)
    handles: list[Any] = []
    try:
        for _ in range(min(BUNDLED_LEDGER_LANES, max(1, jobs))):
            handles.append(start_bundled_store(secret))
    except OSError as exc:
        for h in handles:
            h.stop()
        raise TargetUnreachable(f"cannot start the bundled store: {exc}") from exc
    try:

        def bundled(h: Any) -> TargetConfig:
            return TargetConfig(
                h.url, Secret(secret), asked.timeout, declared=asked.declared,
                denied=asked.denied, label="bundled store",
                token_source="the bundled store's token", ledger_values=asked.ledger_values,
            )  # fmt: skip

        yield TargetSession(bundled(handles[0]), ledger_extra=[bundled(h) for h in handles[1:]])
    finally:
        for h in handles:
            h.stop()
