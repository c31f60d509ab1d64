"""Language-neutral test vectors of the pure functions (``memspec vectors export``).

One file per function, ``<spec>/<function>.json``, schema ``memspec-vectors/1``
(``specs/engine-vectors.schema.json``, explained in ``docs/vectors.md``), plus ``index.json``.
Each vector: an id, its clauses and the source of each (``sources``: seed, binding or
reference, as the specs declare them), a comment saying what it probes, the arguments, every
outcome the seed allows and, where the set is too large to list, a named checker; and where a
reference rule fixes the answer further, ``reference``: that rule's clauses and the narrower set
(an answer outside it but inside ``allowed`` is a deviation, not a failure).  The vectors are the
hand-picked boundaries of :mod:`conformance.binding.functions` and a fixed-seed Hypothesis sample,
so an export is the same byte for byte for one memspec revision (and one Hypothesis version);
every file carries the spec revision ``memspec --version`` prints.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from conformance.binding.functions import BY_NAME, FUNCTIONS, Fn
from conformance.binding.judge import FLOAT_ULPS, Judged, Narrowed
from conformance.machines.constants import pinned_local_constants
from conformance.sources import source_of
from conformance.version import spec_revision

JSON = Any
FORMAT = "memspec-vectors/1"
SAMPLE_SEED = 0x5EED
SAMPLE_SIZE = 24
SCHEMA_FILE = "engine-vectors.schema.json"


@dataclass(frozen=True)
class Vector:
    id: str
    function: str
    clauses: tuple[str, ...]
    comment: str
    origin: str  # boundary | sample
    args: JSON
    judged: Judged

    def rules(self) -> tuple[str, ...]:
        """Every clause the vector applies: its own, then the reference rules that narrow it."""
        narrowed = self.judged.reference
        extra = narrowed.clauses if narrowed is not None else ()
        return tuple(dict.fromkeys((*self.clauses, *extra)))

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "id": self.id,
            "clauses": list(self.clauses),
            "sources": {c: source_of(c) for c in self.rules()},
            "comment": self.comment,
            "origin": self.origin,
            "args": self.args,
            "allowed": self.judged.allowed,
        }
        if self.judged.checker is not None:
            out["checker"] = self.judged.checker
        narrowed = self.judged.reference
        if narrowed is not None:
            ref: dict[str, JSON] = {"clauses": list(narrowed.clauses), "allowed": narrowed.allowed}
            if narrowed.checker is not None:
                ref["checker"] = narrowed.checker
            out["reference"] = ref
        return out


def _canon(v: JSON) -> str:
    return json.dumps(v, sort_keys=True, ensure_ascii=True)


def sample_args(fn: Fn, n: int = SAMPLE_SIZE, seed: int = SAMPLE_SEED) -> list[JSON]:
    """``n`` arguments drawn from the function's strategy with a fixed seed (duplicates
    dropped, order kept): the same list on every call."""
    drawn: list[JSON] = []

    @settings(
        max_examples=n,
        database=None,
        derandomize=False,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @hypothesis_seed(seed)
    @given(fn.strategy)
    def collect(args: JSON) -> None:
        drawn.append(copy.deepcopy(args))

    with pinned_local_constants():  # the sample follows the seed alone, whatever is imported
        collect()
    seen: set[str] = set()
    out = []
    for a in drawn:
        key = _canon(a)
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out


def function_vectors(fn: Fn, sample: int = SAMPLE_SIZE) -> list[Vector]:
    """The boundaries, then the sample, numbered ``<function>/<nnnn>`` (a new list; the
    vectors are built once per function and sample size)."""
    return list(_function_vectors(fn.name, sample))


@functools.cache
def _function_vectors(name: str, sample: int) -> tuple[Vector, ...]:
    fn = BY_NAME[name]
    out: list[Vector] = []
    seen: set[str] = set()
    cases = [(c, a, "boundary") for c, a in fn.boundaries()]
    cases += [("fixed-seed sample", a, "sample") for a in sample_args(fn, sample)]
    for comment, args, origin in cases:
        key = _canon(args)
        if key in seen:
            continue
        seen.add(key)
        judged = fn.judge(args)
        if judged.notes:
            comment = f"{comment} ({'; '.join(judged.notes)})"
        vid = f"{fn.name}/{len(out) + 1:04d}"
        out.append(Vector(vid, fn.name, fn.clauses, comment, origin, args, judged))
    return tuple(out)


def selected(spec: str) -> list[Fn]:
    return [f for f in FUNCTIONS if spec == "all" or f.spec == spec]


def vector_file(fn: Fn, vectors: list[Vector]) -> dict[str, JSON]:
    return {
        "format": FORMAT,
        "$schema": SCHEMA_FILE,
        "spec": fn.spec,
        "spec_revision": spec_revision(),
        "function": fn.name,
        "summary": fn.summary,
        "clauses": list(fn.clauses),
        "sources": {c: source_of(c) for c in fn.rules},
        "comparison": {"float_ulps": FLOAT_ULPS, "strings": "utf16-code-units"},
        "vectors": [v.to_json() for v in vectors],
    }


def dumps(data: JSON) -> str:
    """The one serialisation of every exported file (sorted keys, ASCII, one space indent)."""
    return json.dumps(data, sort_keys=True, ensure_ascii=True, indent=1, allow_nan=False) + "\n"


def export(out_dir: Path, spec: str = "all", sample: int = SAMPLE_SIZE) -> dict[str, JSON]:
    """Write every vector file and ``index.json`` under ``out_dir``; return the index."""
    files = []
    total = 0
    for fn in selected(spec):
        vectors = function_vectors(fn, sample)
        rel = f"{fn.spec}/{fn.name}.json"
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps(vector_file(fn, vectors)), encoding="utf-8")
        files.append({"function": fn.name, "spec": fn.spec, "file": rel, "vectors": len(vectors)})
        total += len(vectors)
    index = {
        "format": FORMAT,
        "spec_revision": spec_revision(),
        "sample_seed": SAMPLE_SEED,
        "files": files,
        "vectors": total,
    }
    (out_dir / "index.json").write_text(dumps(index), encoding="utf-8")
    return index


def _judged(v: dict[str, JSON]) -> Judged:
    """A vector's two levels read back (a file without ``reference`` has the seed's alone)."""
    ref = v.get("reference")
    narrowed = None
    if ref is not None:
        narrowed = Narrowed(tuple(ref["clauses"]), ref["allowed"], ref.get("checker"))
    return Judged(v["allowed"], v.get("checker"), reference=narrowed)


@dataclass(frozen=True)
class LoadedFile:
    function: str
    spec: str
    clauses: tuple[str, ...]
    vectors: list[Vector]
    spec_revision: str


def load_dir(path: Path) -> list[LoadedFile]:
    """Read an exported directory back (``memspec engine --vectors DIR``); ValueError names
    the file at fault."""
    index_path = path / "index.json"
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{index_path}: cannot read the index: {exc}") from exc
    out = []
    for entry in index.get("files", []):
        p = path / entry["file"]
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
            if data.get("format") != FORMAT:
                raise ValueError(f"format is not {FORMAT}")
            vectors = [
                Vector(
                    v["id"],
                    data["function"],
                    tuple(v["clauses"]),
                    v["comment"],
                    v["origin"],
                    v["args"],
                    _judged(v),
                )
                for v in data["vectors"]
            ]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{p}: {exc}") from exc
        out.append(
            LoadedFile(
                data["function"],
                data["spec"],
                tuple(data["clauses"]),
                vectors,
                data.get("spec_revision", ""),
            )
        )
    return out
