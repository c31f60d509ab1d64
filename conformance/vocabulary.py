"""The vocabulary every layer of the harness shares: the target's configuration and token,
the run's context, one request/answer on the wire, a step's outcome, the verdict literals, and
the bounds a run keeps.

Drivers, targets, oracle, machines, reports and the command line all speak in these terms;
this module imports only the standard library and :mod:`conformance.scrub` (how a target's text
is shown), so every layer can import it and none needs to import another layer for a word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from conformance.scrub import shown

#: The verdict on one step: the answer is one the model allows (``pass``), is not (``diverge``),
#: cannot be judged (``indeterminate``: no answer, a harness error), or the step did not run or
#: says nothing about this target (``skip``).  A divergence whose every clause is a
#: ``reference`` clause is a ``deviate`` step (set by the runner: :mod:`conformance.sources`).
StepVerdict = Literal["pass", "diverge", "deviate", "indeterminate", "skip"]
#: What an oracle says of one answer (a driver turns it into a :data:`StepVerdict`).
JudgementVerdict = Literal["pass", "diverge", "indeterminate"]
#: The verdict on a whole scenario or machine run: ``fail`` where a step diverged, ``deviate``
#: where steps only deviated from the reference implementation (reference clauses only).
ResultVerdict = Literal["pass", "fail", "deviate", "skip", "indeterminate"]

#: A run id is lower-case letters, digits and ``-`` so that it fits into every protocol's key
#: rules (no whitespace, no control or format characters) wherever a driver embeds it.
RUN_ID = re.compile(r"memspec-[a-z0-9]{4,32}")

#: Real time a driver keeps between two mutating steps on the same data when the target stamps
#: with its own clock, so that the store's stamps of the two come in the steps' order.
SPACING_S = 0.003

#: What a step keeps of its answer once it is judged (one memory budget for a run):
#: the parsed answer itself only when it is small -- at most this many bytes and JSON values
#: for a step that passed, and the larger bound for one that did not (a divergence's answer is
#: what a reader and a replay need).  A larger answer is kept as an excerpt of
#: :data:`CUT_EXCERPT_CHARS` characters, its size and its SHA-256.  A parsed JSON value costs
#: about 100 bytes of memory, so a step costs at most a few hundred KB, whatever the target
#: answers.
KEEP_PASSED = (8 * 1024, 200)
KEEP_FAILED = (64 * 1024, 2000)
CUT_EXCERPT_CHARS = 1000


class StepError(Exception):
    """A step the driver cannot run as written (unknown op, unbound symbol, malformed macro,
    unsafe scope, clock backwards): the step is skipped with this message as the reason."""


class Mispredicted(BaseException):  # noqa: N818 -- not an error: a batch to run again
    """A step sent ahead (``--window``) was judged otherwise than the model predicted: the
    steps after it were chosen or judged from a state the one-at-a-time run would not have
    had.  What ran is abandoned and run again with this step (``key``) run in turn: a machine's
    batch (``key``: example, step index), a corpus scenario (``key``: step index).  A
    ``BaseException``, so that Hypothesis neither catches nor shrinks it."""

    def __init__(self, key: Any) -> None:
        super().__init__(key)
        self.key = key


class Secret:
    """A bearer token that never prints: ``str``/``repr``/f-strings show ``***``.

    Only :meth:`reveal` hands the value back, and only the target client calls it, to build the
    ``Authorization`` header.  Reports, exchanges and logs never see it.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, spec: str) -> str:
        return "***"

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self) -> Any:  # pickling would copy the value out; refuse
        raise TypeError("a Secret cannot be pickled")


@dataclass(frozen=True)
class TargetConfig:
    """How to reach a target.  ``token`` is a :class:`Secret` (or ``None``: no bearer sent).

    ``declared`` / ``denied`` are capabilities the user declared present / absent (CLI flags or
    a ``--target-profile`` TOML file); a declaration always wins over what probing finds.
    """

    url: str
    token: Secret | None = field(default=None, repr=False)
    timeout_s: float = 10.0
    max_response_bytes: int = 4 * 1024 * 1024
    declared: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()
    label: str = ""  # "bundled store" or the URL, for reports
    ca_file: str | None = None  # PEM file of CAs to trust for an https target (--ca-cert)
    token_source: str = ""  # where the token came from, for messages ("$MEMORY_TOKEN")
    #: a JSON-RPC target's handshake: (method, params as JSON text, "" for none), sent once
    #: after connecting (``[jsonrpc.initialize]`` in a target profile)
    initialize: tuple[str, str] | None = None
    #: values the ledger knows (``[ledger]`` in a target profile): ``session``, ``harness``,
    #: ``model`` -- used instead of the ones memspec would invent
    ledger_values: tuple[tuple[str, str], ...] = ()

    def public(self) -> dict[str, Any]:
        """What a report may say about the target (never the token)."""
        return {
            "url": self.url,
            "label": self.label or self.url,
            "token": "set" if self.token else "none",
            "timeout_s": self.timeout_s,
            "ca_cert": self.ca_file,
            "initialize": self.initialize[0] if self.initialize else None,
            "ledger_values": dict(self.ledger_values),
            "declared": sorted(self.declared),
            "denied": sorted(self.denied),
        }


@dataclass(frozen=True)
class RunContext:
    """Everything one run shares: the target, the run id, the options.

    ``allow_dirty``: a driver whose protocol cannot be isolated by scope keys (the ledger's
    single ``account:local`` scope) refuses to run against a target that already holds data,
    unless the user passed ``--allow-dirty``.  ``seed`` is the run's seed (state machines).
    """

    run_id: str
    target: TargetConfig
    allow_dirty: bool = False
    seed: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Exchange:  # long: the one wire record every layer shares, a field per fact
    """One request/answer pair as seen on the wire (token never included)."""

    method: str
    path: str
    request_body: Any  # parsed JSON sent, or a short description for a raw request
    status: int | None  # None: no HTTP answer (timeout, reset, refused)
    body: Any  # parsed JSON answer, or None
    raw_excerpt: str = ""  # first bytes of a non-JSON answer
    transport_error: str | None = None
    elapsed_ms: float = 0.0
    body_error: str | None = None  # the answer had a body that is not JSON (or was too large)
    #: the request headers that matter (framing, content type, the Authorization *form* with
    #: the token elided) — what a divergence's ``sent:`` line shows
    request_headers: tuple[tuple[str, str], ...] = ()
    content_type: str = ""  # the answer's Content-Type, as sent
    reason: str = ""  # the answer's reason phrase, as sent
    timed_out: bool = False  # no complete answer before the request's deadline
    unsendable: bool = False  # the client could not put this request on the wire
    body_bytes: int = 0  # the answer's body as received (before any content decoding)
    body_sha256: str = ""  # its SHA-256, hex
    body_values: int = 0  # JSON values in the decoded body (an upper estimate from its bytes)
    #: the start of a large answer's text, for an excerpt once the body is let go (:meth:`kept`)
    body_head: str = field(default="", repr=False)
    #: the parsed body was not kept (too large): ``body`` is None, this is its start as shown
    body_excerpt: str = ""
    #: the request's body as sent and the answer's body as received (before any content
    #: decoding), byte for byte: kept only for a caller that judges the wire itself
    #: (:meth:`conformance.targets.base.HttpTarget.framed`, ``memspec contract``)
    request_bytes: bytes = field(default=b"", repr=False)
    answer: bytes = field(default=b"", repr=False)

    def kept(self, *, passed: bool) -> Exchange:
        """What a step keeps of this exchange once it is judged: the parsed body when it is
        within :data:`KEEP_PASSED` (a step that passed) or :data:`KEEP_FAILED` bytes and
        values, else an excerpt (scrubbed, escaped, then cut), the size and the digest."""
        max_bytes, max_values = KEEP_PASSED if passed else KEEP_FAILED
        if self.body is None or (self.body_bytes <= max_bytes and self.body_values <= max_values):
            return replace(self, body_head="") if self.body_head else self
        return replace(
            self, body=None, body_head="", body_excerpt=shown(self.body_head, CUT_EXCERPT_CHARS)
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": self.method,
            "path": self.path,
            "request": self.request_body,
            "status": self.status,
            "body": self.body,
            "elapsed_ms": round(self.elapsed_ms, 3),
        }
        if self.raw_excerpt:
            out["raw_excerpt"] = self.raw_excerpt
        if self.transport_error:
            out["transport_error"] = self.transport_error
        if self.body_error:
            out["body_error"] = self.body_error
        if self.request_headers:
            out["request_headers"] = [list(h) for h in self.request_headers]
        if self.content_type:
            out["content_type"] = self.content_type
        if self.timed_out:
            out["timed_out"] = True
        if self.body_excerpt:
            out["body_excerpt"] = self.body_excerpt
            out["body_cut"] = {
                "bytes": self.body_bytes,
                "sha256": self.body_sha256,
                "why": "the answer is larger than a step keeps: an excerpt, its size and its"
                " SHA-256 instead",
            }
        return out


@dataclass(frozen=True, kw_only=True)
class StepOutcome:
    """The verdict on one step (built with keywords only).

    ``expected`` is a human description of every answer the model allows (so a reader sees
    the whole allowed set, not one pick); ``clauses`` are the clause ids the step checked —
    on a divergence, the clauses the difference touches.  ``exchange`` is ``None`` for a step
    that sent nothing.
    """

    index: int
    op: str
    verdict: StepVerdict
    clauses: tuple[str, ...]
    expected: str = ""
    exchange: Exchange | None = None
    reason: str = ""  # why it diverged / is indeterminate / was skipped
    details: dict[str, Any] = field(default_factory=dict)

    def kept(self) -> StepOutcome:
        """This outcome as a run keeps it once judged (:meth:`Exchange.kept`)."""
        if self.exchange is None:
            return self
        ex = self.exchange.kept(passed=self.verdict == "pass")
        return self if ex is self.exchange else replace(self, exchange=ex)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "op": self.op,
            "verdict": self.verdict,
            "clauses": list(self.clauses),
            "expected": self.expected,
            "exchange": self.exchange.to_json() if self.exchange else None,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.details:
            out["details"] = self.details
        return out
