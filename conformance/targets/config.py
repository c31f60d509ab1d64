"""How a target is named: the token, the target profile, the URL, and the error that ends a run.

Part of the HTTP client (:mod:`conformance.targets.base`, which re-exports every name here).
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from conformance import scrub
from conformance.drivers.base import Secret, TargetConfig
from conformance.scrub import MIN_TOKEN_LENGTH

#: Capability of every ``http://`` target: raw socket requests with hand-made headers.
RAW_HTTP = "raw_http"
#: Capability: the run has a bearer token for the target (auth-dependent steps need it).
AUTH = "auth"

Auth = bool | Literal["wrong", "scheme", "empty"]


class TargetError(Exception):
    """The target cannot be used at all (unreachable, token refused, bad profile).

    The CLI prints the message as one line and exits 2.
    """


class TokenRefused(TargetError):
    """The target answered 401 to the run's own token."""


def token_refused(config: TargetConfig, where: str) -> TokenRefused:
    source = config.token_source or "the token"
    return TokenRefused(f"{source} was refused (401 on {where}) by {config.url}")


def load_token(token_env: str | None = None, token_file: str | Path | None = None) -> Secret | None:
    """Read the bearer token from an environment variable or a file (first line, stripped).

    Raises :class:`TargetError` when the named source is missing or empty — a run that was
    asked to authenticate and silently did not would judge every data route 401.
    """
    if token_env and token_file:
        raise TargetError("give the token with --token-env or --token-file, not both")
    if token_env:
        value = os.environ.get(token_env)
        if not value:
            raise TargetError(f"environment variable {token_env} is not set or empty")
        return _checked_token(value.strip(), f"the token in ${token_env}")
    if token_file:
        path = Path(token_file)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            raise TargetError(f"cannot read token file {path}: {why or exc}") from exc
        lines = text.strip().splitlines()
        if not lines or not lines[0].strip():
            raise TargetError(f"token file {path} is empty")
        return _checked_token(lines[0].strip(), f"the token in {path}")
    return None


def _checked_token(value: str, where: str) -> Secret:
    """A token memspec can send in a header and blank in every output, registered for
    blanking; else :class:`TargetError` (a usage error, exit 2)."""
    if len(value) < MIN_TOKEN_LENGTH:
        raise TargetError(
            f"{where} is shorter than {MIN_TOKEN_LENGTH} characters: too short to keep out of"
            " reports safely (use a longer token)"
        )
    if any(ord(c) < 0x21 or ord(c) > 0x7E for c in value):
        raise TargetError(f"{where} holds whitespace, control or non-ASCII characters")
    scrub.register(value)
    return Secret(value)


@dataclass(frozen=True)
class TargetProfile:
    """A small TOML description of a target (``--target-profile FILE``).

    ```toml
    [target]
    url = "https://memory.example.internal"
    token_env = "MEMORY_TOKEN"        # or token_file = "/run/secrets/memory"
    timeout_s = 10

    [capabilities]                    # true: declared present, false: declared absent
    raw_http = false
    "memory.cap" = true
    ```
    """

    url: str | None = None
    token_env: str | None = None
    token_file: str | None = None
    timeout_s: float | None = None
    declared: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()


def load_target_profile(path: str | Path) -> TargetProfile:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TargetError(f"cannot read target profile {p}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TargetError(f"target profile {p} is not TOML: {exc}") from exc
    unknown = set(data) - {"target", "capabilities"}
    if unknown:
        raise TargetError(f"target profile {p}: unknown table(s) {sorted(unknown)}")
    target = data.get("target", {})
    caps = data.get("capabilities", {})
    if not isinstance(target, dict) or not isinstance(caps, dict):
        raise TargetError(f"target profile {p}: [target] and [capabilities] must be tables")
    bad = set(target) - {"url", "token_env", "token_file", "timeout_s"}
    if bad:
        raise TargetError(f"target profile {p}: unknown key(s) in [target]: {sorted(bad)}")
    if "token" in target:  # pragma: no cover - caught by the unknown-key check above
        raise TargetError("a profile names where the token is, never the token itself")
    for key, value in caps.items():
        if not isinstance(value, bool):
            raise TargetError(f"target profile {p}: capability {key!r} must be true or false")
    timeout = target.get("timeout_s")
    if timeout is not None and (
        not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0
    ):
        raise TargetError(f"target profile {p}: timeout_s must be a positive number")
    for key in ("url", "token_env", "token_file"):
        if key in target and not isinstance(target[key], str):
            raise TargetError(f"target profile {p}: {key} must be a string")
    return TargetProfile(
        url=target.get("url"),
        token_env=target.get("token_env"),
        token_file=target.get("token_file"),
        timeout_s=float(timeout) if timeout is not None else None,
        declared=frozenset(k for k, v in caps.items() if v),
        denied=frozenset(k for k, v in caps.items() if not v),
    )


def check_url(url: str) -> str:
    """A target URL: ``http://`` or ``https://`` with a host; the trailing ``/`` dropped."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(f"not an http(s) URL: {url!r}")
    if parts.query or parts.fragment:
        raise TargetError(f"a target URL has no query or fragment: {url!r}")
    return url.rstrip("/")
