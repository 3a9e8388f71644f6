"""The sync path sends a query's independent model calls concurrently, as the async one does.

A clean query's two baseline trials are independent: through ``invoke`` /
``postprocess_nodes`` they must reach the provider at the same time, with the live wall
bound and without it (where the engine picks inline or threads by itself).
"""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations import ClearanceConfig
from tests.support.fault_stubs import COMPONENTS, meta
from tests.support.servers import OpenAIStub, serve

from .limit_figures import GaugedStub
from .sync_async_figures import clean_and_faulty_cases


@pytest.mark.parametrize("bounded", [True, False])
@pytest.mark.parametrize("framework", list(COMPONENTS))
def test_sync_clean_query_sends_its_baseline_trials_together(framework: str, bounded: bool) -> None:
    case = clean_and_faulty_cases()["clean"]
    stub = GaugedStub(OpenAIStub.for_case(case), delay=0.3)
    kwargs = {} if bounded else {"clearance": ClearanceConfig(budget={"max_wall_seconds": None})}
    with serve(stub) as url:
        out = asyncio.run(COMPONENTS[framework](url, case, **kwargs)(False))
    assert "status" not in meta(out[0]) or meta(out[0])["status"] == "complete"
    assert stub.requests == 5  # two agent trials and their judgement, twice (early exit)
    assert stub.peak >= 2
