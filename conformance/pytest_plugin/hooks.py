"""The pytest hooks of the plugin (the xdist-only ones live in ``xdist``).

Each returns at once when ``--memspec-target`` was not given: only ``pytest_configure`` acts
then, registering the ``clause`` marker for any suite.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.pytest_plugin.state import RUN, MemspecRun


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "clause(*ids): the spec clause ids (MEM-…, LED-…) this test covers"
    )
    if config.getoption("memspec_target", None) is None:
        return
    config.addinivalue_line(
        "markers", "memspec(protocol, kind): a conformance item added by --memspec-target"
    )
    # Registered here too so that ledger items can carry the mark without pytest-xdist.
    config.addinivalue_line("markers", "xdist_group(name): run these items on one xdist worker")
    from conformance.pytest_plugin.settings import from_config

    config.stash[RUN] = from_config(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    run = session.config.stash.get(RUN, None)
    if run is not None and run.process.role != "worker":
        run.check_target()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    run = config.stash.get(RUN, None)
    if run is None:
        return
    from conformance.pytest_plugin.items import MemspecSuite

    suite = MemspecSuite.from_parent(session, name="memspec", nodeid="memspec")
    items.extend(session.genitems(suite))


@pytest.hookimpl(tryfirst=True)  # before xdist sends workeroutput back
def pytest_sessionfinish(session: pytest.Session) -> None:
    run = session.config.stash.get(RUN, None)
    if run is None:
        return
    run.close()
    if run.process.role == "worker":
        from conformance.pytest_plugin.xdist import outcome

        session.config.workeroutput["memspec"] = outcome(run)  # type: ignore[attr-defined]
    else:
        run.maintain_expectations()


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    run: MemspecRun | None = config.stash.get(RUN, None)
    return run.header() if run is not None else None


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    run = config.stash.get(RUN, None)
    if run is None or run.process.role == "worker":
        return
    terminalreporter.write_sep("-", "memspec")
    for line in run.summary(verbose=config.getoption("verbose", 0) > 0):
        terminalreporter.write_line(line)
