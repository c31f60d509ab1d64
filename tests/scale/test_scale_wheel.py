"""The wheel stands alone: built with ``pip wheel .``, installed into a fresh venv outside the
checkout, ``memspec run --spec all --profile quick`` and ``memspec clauses --check`` work from
a temporary directory — the corpus, the specs and the OpenAPI files are all inside the wheel.

Slow (a wheel build, a venv, a whole quick run: ~15 s) and it builds with pip's build
isolation, so it runs in CI only: ``make scale-check`` (called by ``.ci/run``) sets
``MEMSPEC_SCALE_TEST=1``.  The fresh venv has no pip and no site packages of its own; the
wheel is unpacked into it by the checkout venv's pip (``pip --python``), and the runtime
dependencies come from the checkout venv's site-packages through a ``.pth`` line — a plain path
line, so the editable install's own ``.pth`` hook there is *not* run and the checkout is never
importable from the fresh venv (the test asserts it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_NOT_SOURCE = (
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    "memspec-*",
)

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMSPEC_SCALE_TEST") != "1",
    reason="slow: run with `make scale-check` (MEMSPEC_SCALE_TEST=1), as CI does",
)


def _sh(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{cmd} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.clause()
def test_the_wheel_runs_from_a_temporary_directory(tmp_path: Path) -> None:
    # Build from a clean copy: an in-tree build/ left by an earlier build would hide a file
    # the package data no longer names.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
    dist = tmp_path / "dist"
    _sh([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(dist)], src)
    (wheel,) = dist.glob("memspec-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "conformance/_specs/memory.md",
        "conformance/_specs/ledger.md",
        "conformance/_specs/memory-worker.openapi.yaml",
        "conformance/_specs/ledger.openapi.yaml",
    ):
        assert expected in names, f"{expected} is not in the wheel"
    corpus = {n for n in names if n.startswith("conformance/corpus/") and n.endswith(".json")}
    assert len(corpus) == len(list((ROOT / "conformance" / "corpus").rglob("*.json")))

    venv = tmp_path / "fresh"
    _sh([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    py = venv / "bin" / "python"
    _sh([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
         "--no-index", str(wheel)], tmp_path)  # fmt: skip
    site = Path(
        _sh(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path
        ).strip()
    )
    (site / "zz_checkout_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    where = _sh([str(py), "-c", "import conformance; print(conformance.__file__)"], work, env)
    assert Path(where.strip()).is_relative_to(venv), f"conformance imported from {where}"

    memspec = str(venv / "bin" / "memspec")
    version = _sh([memspec, "--version"], work, env)
    assert "unknown" not in version and "missing" not in version, version
    clauses = _sh([memspec, "clauses", "--check"], work, env)
    assert " 0 uncovered" in clauses and "cited but not defined" not in clauses
    _sh([memspec, "run", "--spec", "all", "--profile", "quick", "--report", "rep", "-q"], work, env)
    data = json.loads((work / "rep" / "report.json").read_text())
    assert data["exit_code"] == 0
    assert {s["protocol"] for s in data["scenarios"]} == {"memory", "ledger"}
    assert all(r["title"] for r in data["clauses"]), "clause titles need the installed specs"
    assert data["spec_revision"] in version and data["corpus_revision"] in version
