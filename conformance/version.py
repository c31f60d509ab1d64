"""What judged a run: the memspec version, the spec revision and the corpus revision.

* ``memspec_version()`` — the installed distribution's version (package metadata), or
  ``"unknown"`` when memspec runs from a checkout that was never installed.
* ``spec_revision()`` — a stable hash of the files under ``specs/`` (the clause texts and the
  OpenAPI files): ``sha256`` over each file's path relative to ``specs/`` and its bytes, in
  path order, first 12 hex digits.  Line endings are normalised to ``\\n`` first, so a Windows
  checkout names the same revision.
* ``corpus_revision()`` — the same over ``conformance/corpus/**/*.json``.

``specs_dir()`` finds the specs both in a checkout (``<root>/specs``) and in an installed
wheel, where they are package data under ``conformance/_specs/`` (see pyproject.toml).
Every report (``report.json``, the HTML header, the JUnit properties) carries all three via
:func:`provenance`, so a verdict names what judged it.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CORPUS_DIR = PACKAGE_DIR / "corpus"
_CHECKOUT_SPECS = PACKAGE_DIR.parent / "specs"
_INSTALLED_SPECS = PACKAGE_DIR / "_specs"


def specs_dir() -> Path:
    """The ``specs/`` folder: the checkout's, else the copy installed inside the package."""
    if _CHECKOUT_SPECS.is_dir() and any(_CHECKOUT_SPECS.glob("*.md")):
        return _CHECKOUT_SPECS
    return _INSTALLED_SPECS


def memspec_version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("memspec")
    except PackageNotFoundError:  # pragma: no cover - a checkout never installed
        return "unknown"


def tree_hash(root: Path, patterns: tuple[str, ...]) -> str:
    """12 hex digits of sha256 over (relative path, normalised bytes) of the matching files."""
    if not root.is_dir():
        return "missing"
    files = sorted(
        {p for pat in patterns for p in root.glob(pat) if p.is_file()},
        key=lambda p: p.relative_to(root).as_posix(),
    )
    h = hashlib.sha256()
    for p in files:
        data = p.read_bytes().replace(b"\r\n", b"\n")
        rel = p.relative_to(root).as_posix().encode()
        h.update(len(rel).to_bytes(4, "big") + rel + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:12]


SPEC_PATTERNS = ("*.md", "*.yaml", "*.yml", "*.json")


@functools.cache
def spec_revision() -> str:
    return tree_hash(specs_dir(), SPEC_PATTERNS)


@functools.cache
def corpus_revision() -> str:
    return tree_hash(CORPUS_DIR, ("**/*.json",))


def provenance() -> dict[str, str]:
    """``{memspec_version, spec_revision, corpus_revision}`` — what every report records."""
    return {
        "memspec_version": memspec_version(),
        "spec_revision": spec_revision(),
        "corpus_revision": corpus_revision(),
    }


def version_line() -> str:
    p = provenance()
    return (
        f"memspec {p['memspec_version']} (spec {p['spec_revision']}, corpus {p['corpus_revision']})"
    )
