"""Shared test configuration: hypothesis runs derandomized under CI (CI=true); the unit tier
runs on one pytest-xdist worker per core, the whole suite on two (its integration tier waits
more than it computes), a run of single files or test ids in one process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.scheduling import spread_waiting_modules

_LEDGER_TESTS = pytest.StashKey[bool]()
_SEEN_POSTGRES: list[str] = []

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker per core for the unit tier, two when the integration tier runs.

    The integration tier mostly waits (subprocesses, stub servers, deadlines), so a second
    worker per core fills the waits; the unit tier is CPU-bound, where more workers only add
    collection. No workers when only files or test ids are named (start-up would dominate).
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still wins.
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    args = [a for a in config.args if not a.startswith("-")]
    if args and all("::" in a or Path(a).is_file() for a in args):
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) * (2 if _runs_waiting_tier(config, args) else 1)


def _runs_waiting_tier(config: pytest.Config, args: list[str]) -> bool:
    """Whether the run reaches beyond ``tests/unit_tests`` (into the integration tier)."""
    unit = config.rootpath / "tests" / "unit_tests"
    here = config.invocation_params.dir
    paths = [here / a.split("::")[0] for a in args] or [
        config.rootpath / p for p in config.getini("testpaths")
    ]
    return any(not p.resolve().is_relative_to(unit) for p in paths)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note a PostgreSQL test (also on the xdist controller, which collects nothing itself)."""
    if "postgres" in report.nodeid and report.when == "setup":
        _SEEN_POSTGRES.append(report.nodeid)


def pytest_collection_modifyitems(config, items) -> None:
    config.stash[_LEDGER_TESTS] = any("postgres" in item.nodeid for item in items)
    items[:] = spread_waiting_modules(items)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say whether the ledger's PostgreSQL tests had a server (see tests/ledger)."""
    if not (config.stash.get(_LEDGER_TESTS, False) or _SEEN_POSTGRES):
        return
    url = os.environ.get("MECLEAR_TEST_POSTGRES_URL")
    if url:
        line = f"ledger: PostgreSQL tests ran against {url.rsplit('@', 1)[-1]}"
    else:
        line = (
            "ledger: PostgreSQL tests SKIPPED: no server configured "
            "(set MECLEAR_TEST_POSTGRES_URL; bash .ci/run starts one)"
        )
    terminalreporter.write_line(line)
