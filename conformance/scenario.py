"""The scenario format: a versioned, replayable list of protocol operations.

A scenario is what every run is made of — the hand-written corpus, the shrunk counterexamples
the state machines write, and ``memspec replay`` input.  It names the clauses it covers, the
target capabilities it needs, and its steps.  Store-assigned ids are never written literally:
a step binds a symbolic name (``$r1``) from an answer, and later steps use the name.  Scope keys
are written as placeholders (``{scope:a}``) that the runner maps to keys unique to the run, so
a run never touches data it did not create.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from conformance.clauses import CLAUSE_ID

FORMAT: Final = "memspec-scenario/1"


def _check_clause_ids(cls: type, v: list[str]) -> list[str]:
    """A scenario's and a step's ``clauses``: every entry a clause id (``MEM-…``, ``LED-…``)."""
    for cid in v:
        if not CLAUSE_ID.fullmatch(cid):
            raise ValueError(f"not a clause id: {cid!r}")
    return v


Protocol = Literal["memory", "ledger"]


class RecordedAnswer(BaseModel):
    """What a target answered to a step when the scenario was recorded (informational)."""

    model_config = ConfigDict(extra="forbid")
    status: int | None = None
    body: Any = None
    error: str | None = None  # transport-level failure, e.g. "timeout"


class Step(BaseModel):
    """One operation.  ``op`` and ``args`` are defined by the protocol's driver.

    ``bind`` maps a symbolic name (without ``$``) to a selector the driver understands, e.g.
    ``{"r1": {"text": "deploys go through staging"}}`` binds ``$r1`` to the id of the record
    in the answer whose text is that.  ``expect`` optionally narrows the check to a
    hand-written expectation (the oracle still checks the model's allowed answers).
    """

    model_config = ConfigDict(extra="forbid")
    op: str
    args: dict[str, Any] = Field(default_factory=dict)
    bind: dict[str, Any] = Field(default_factory=dict)
    expect: dict[str, Any] | None = None
    clauses: list[str] = Field(default_factory=list)
    note: str | None = None
    recorded: RecordedAnswer | None = None

    _clause_ids = field_validator("clauses")(_check_clause_ids)

    @field_validator("expect")
    @classmethod
    def _expect_keys(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None:
            unknown = set(v) - {"status", "body", "count", "texts", "text_set"}
            if unknown:
                raise ValueError(f"unknown expect key(s): {sorted(unknown)}")
        return v


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Literal["memspec-scenario/1"] = FORMAT
    protocol: Protocol
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    clauses: list[str] = Field(min_length=1)
    requires: list[str] = Field(default_factory=list)  # target capabilities
    steps: list[Step] = Field(min_length=1)
    origin: str | None = None  # "corpus", "shrunk from <machine> seed <n>", …

    _clause_ids = field_validator("clauses")(_check_clause_ids)

    def all_clauses(self) -> list[str]:
        seen = dict.fromkeys(self.clauses)
        for s in self.steps:
            seen.update(dict.fromkeys(s.clauses))
        return list(seen)


class ScenarioError(Exception):
    """A scenario file that cannot be read; the message names the file and the field."""


def load_scenario(path: Path) -> Scenario:
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ScenarioError(f"{path}: not JSON: {exc}") from exc
    try:
        return Scenario.model_validate(data)
    except Exception as exc:  # pydantic.ValidationError
        errors = getattr(exc, "errors", None)
        if callable(errors):
            first = errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            raise ScenarioError(f"{path}: {loc or '<root>'}: {first.get('msg')}") from exc
        raise ScenarioError(f"{path}: {exc}") from exc


def dump_scenario(scenario: Scenario, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(
        scenario.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False
    )
    path.write_text(text + "\n", encoding="utf-8")
