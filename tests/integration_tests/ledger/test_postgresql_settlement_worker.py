"""The audit worker's re-verification (``jobs.reverify``) with the ledger and the job table on
a real PostgreSQL server (``tests/unit_tests/background/test_settlement_worker.py``).

SIMULATED (``tests.support.stale_employer``): the running loop lifts a wrong settlement
without the routine replay, in both frameworks; a trusted one is re-verified once.
"""

from __future__ import annotations

import pytest

from tests.unit_tests.background.test_settlement_worker import _lifted_by_the_running_loop


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_the_worker_lifts_a_wrong_settlement_on_postgresql(ledger_url: str, framework: str) -> None:
    _lifted_by_the_running_loop(ledger_url, framework)


def test_the_async_path_lifts_it_on_postgresql(ledger_url: str) -> None:
    _lifted_by_the_running_loop(ledger_url, "langchain", asynchronous=True)
