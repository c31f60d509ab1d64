"""What the items check: the bundled corpus plus ``--memspec-corpus`` scenarios, the state
machines that exist, and how their files are named in node ids and shown in messages."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conformance.scenario import Scenario


def item_name(scenario_name: str) -> str:
    """A scenario's name as a node-id segment (no ``::``, ``[``, ``@`` or spaces)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", scenario_name).strip("_") or "scenario"


def shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def real_path(source: str) -> Path:
    """The file a corpus path names (bundled ones are shown as ``conformance/corpus/…``)."""
    path = Path(source)
    if path.is_absolute() or path.exists():
        return path
    from conformance.runner import CORPUS_DIR

    try:
        return CORPUS_DIR / path.relative_to("conformance/corpus")
    except ValueError:
        return path


def load_corpus(protocols: list[str], extra: list[Path]) -> list[tuple[Scenario, str]]:
    """The bundled corpus plus ``--memspec-corpus`` scenarios of the protocols checked."""
    from conformance.runner import load_corpus as bundled_corpus
    from conformance.scenario import ScenarioError, load_scenario

    try:
        corpus = bundled_corpus(protocols)
        seen = {item_name(s.name): path for s, path in corpus}
        for root in extra:
            if root.is_file():
                files = [root]
            elif root.is_dir():
                files = sorted(root.glob("*.json"))
                for protocol in protocols:
                    files += sorted((root / protocol).glob("*.json"))
            else:
                raise ScenarioError(f"--memspec-corpus {root}: no such file or directory")
            for path in files:
                scenario = load_scenario(path)
                if scenario.protocol not in protocols:
                    continue
                key = item_name(scenario.name)
                if key in seen:
                    raise ScenarioError(
                        f"{path}: scenario name {scenario.name!r} is already used by {seen[key]}"
                    )
                seen[key] = str(path)
                corpus.append((scenario, shown(path)))
    except ScenarioError as exc:
        raise pytest.UsageError(f"memspec: corpus: {exc}") from exc
    return corpus


def machines(protocols: list[str]) -> dict[str, tuple[str, ...]]:
    """protocol → the clauses its state machine checks, for the machines that exist."""
    import importlib

    from conformance.machines import machine_class

    out: dict[str, tuple[str, ...]] = {}
    for protocol in protocols:
        try:
            module = importlib.import_module(machine_class(protocol).__module__)
        except (ImportError, KeyError):
            continue
        out[protocol] = tuple(getattr(module, "MACHINE_CLAUSES", ()))
    return out
