"""Shared limits with the real provider clients (ChatOpenAI, LlamaIndex OpenAI): six
concurrent queries through one component against a slow OpenAI-compatible stub on
127.0.0.1 never have more requests in flight at the stub than the shared limiter's bound,
LangChain and LlamaIndex, sync (threads) and async (``gather``); without the limiter they
do (the check can fail)."""

from __future__ import annotations

import pytest

from tests.support.fault_stubs import COMPONENTS

from .limit_figures import run_queries

LIMIT = 3
DELAY = 0.02


@pytest.mark.slow
@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", list(COMPONENTS))
def test_six_queries_stay_within_the_shared_bound(framework: str, asynchronous: bool) -> None:
    run = run_queries(framework, asynchronous=asynchronous, limit=LIMIT, delay=DELAY)
    assert run.statuses == ["complete"] * 6
    assert run.peak <= LIMIT
    assert run.limiter is not None
    stats = run.limiter.stats()
    assert stats.acquisitions == run.requests  # one slot per request the provider saw
    assert stats.peak_in_flight == LIMIT and stats.in_flight == 0 and stats.waited > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("framework", "asynchronous"), [("langchain", False), ("llama_index", True)]
)
def test_without_the_limiter_six_queries_exceed_it(framework: str, asynchronous: bool) -> None:
    run = run_queries(framework, asynchronous=asynchronous, limit=None, delay=DELAY)
    assert run.statuses == ["complete"] * 6
    assert run.peak > LIMIT
