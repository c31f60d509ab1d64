"""What an oracle says of one answer: the part both protocols' judgements share."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.vocabulary import JudgementVerdict


@dataclass
class Judgement:
    """The verdict on one answer, the clauses it speaks for, every allowed answer described
    (for the report) and, when it is not ``pass``, why. Each protocol's oracle extends it with
    what it needs to carry on (the memory oracle's live worlds, the ledger's correspondences)."""

    verdict: JudgementVerdict
    clauses: tuple[str, ...]
    expected: str
    reason: str = ""
