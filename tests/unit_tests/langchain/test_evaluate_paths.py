"""The LangChain clearance's evaluator is one flow (``evaluating`` in ``_engine_job``): the
``meclear_evaluate`` run (its ``invoke`` on the sync path, ``ainvoke`` on the async one), and
a failed call recorded as a run of its own (``volume.failure_run``), with the same runs,
errors and results on both paths. SIMULATED agent and judge."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

from meclear_integrations.core.failures.kind import PermanentFailureError
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.langchain.clearing_step import CLEARANCE_RUN_NAME, EVALUATE_RUN_NAME
from meclear_integrations.telemetry import TraceSettings
from tests.unit_tests.langchain.test_trace_volume import FAST, flaky, runs


def _broken(inputs: Any) -> Any:
    raise PermissionError("invalid api key")


async def _abroken(inputs: Any) -> Any:
    raise PermissionError("invalid api key")


def _clear(
    mode: str, agent: Any, case: Any, inner: Any, llm: Any, collector: Any = None
) -> tuple[Any, list[Any]]:
    collector = collector or RunCollectorCallbackHandler()
    retriever = ClearingRetriever(
        retriever=inner,
        agent=agent,
        llm=llm,
        tracing=TraceSettings(detail="failures"),
        clearance=FAST,
    )
    config = reference_config(case.reference, {"callbacks": [collector]})
    if mode == "async":
        out = asyncio.run(retriever.ainvoke(case.query, config=config))
    else:
        out = retriever.invoke(case.query, config=config)
    return out, runs(collector)


def _failed(traced: list[Any]) -> list[str]:
    """The failed ``meclear_evaluate`` runs' errors (which coalitions: the scheduler's)."""
    (clearance,) = [r for r in traced if r.name == CLEARANCE_RUN_NAME]
    failed = [r for r in traced if r.name == EVALUATE_RUN_NAME]
    assert all(r.error and r.parent_run_id == clearance.id for r in failed)
    assert all(r.inputs["memory_ids"] and "trial" in r.inputs for r in failed)
    return sorted(r.error.splitlines()[0] for r in failed)


def test_healed_failures_are_recorded_alike_on_both_paths(case, inner, llm) -> None:
    out = {}
    for mode in ("sync", "async"):
        kept, traced = _clear(mode, flaky(llm), case, inner, llm)
        out[mode] = ([d.id for d in kept], _failed(traced))
    assert out["sync"] == out["async"]
    kept, failed = out["sync"]
    assert kept == ["g1", "b1", "b2", "b3"]  # the retries healed the failures
    assert len(failed) == 2 and all("connection reset" in error for error in failed)


def test_a_permanent_failure_raises_alike_on_both_paths(case, inner, llm) -> None:
    out = {}
    for mode in ("sync", "async"):
        agent, collector = RunnableLambda(_broken, afunc=_abroken), RunCollectorCallbackHandler()
        with pytest.raises(PermanentFailureError) as info:
            _clear(mode, agent, case, inner, llm, collector)
        # the trials in flight when the first one failed: how many is the scheduler's
        out[mode] = (str(info.value), sorted(set(_failed(runs(collector)))))
    assert out["sync"] == out["async"]
    message, failed = out["sync"]
    assert "the agent raised PermissionError" in message
    assert failed and all("invalid api key" in error for error in failed)
