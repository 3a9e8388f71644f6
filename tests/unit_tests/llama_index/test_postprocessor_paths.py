"""``clear_nodes`` and ``aclear_nodes`` run one query flow (``_query`` under the pipeline's
drivers): the same prompts (the model's sync method on one path, its native coroutine on the
other), kept nodes, report, stage events and errors. SIMULATED model."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore
from pydantic import Field

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.core.failures.alerts import FailOpenWarning
from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
from meclear_integrations.triggers import Sampling


class Recording(SimulatedLLM):
    """The simulated LLM, logging every prompt and the path it came by."""

    prompts: list[str] = Field(default_factory=list)
    paths: set[str] = Field(default_factory=set)

    def complete(self, prompt, formatted=False, **kwargs):
        self.paths.add("sync")
        self.prompts.append(prompt)
        return super().complete(prompt, formatted=formatted, **kwargs)

    async def acomplete(self, prompt, formatted=False, **kwargs):
        self.paths.add("async")
        self.prompts.append(prompt)
        return await super().acomplete(prompt, formatted=formatted, **kwargs)


def _prompts(llm: Recording) -> list[str]:
    """The prompts in a canonical order, the judge's per-call verdict nonce blanked."""
    return sorted(re.sub(r"VERDICT [0-9a-f]{12}", "VERDICT <nonce>", p) for p in llm.prompts)


def _run(mode: str, post: MeClearPostprocessor, *args: Any, **kwargs: Any) -> Any:
    if mode == "async":
        return asyncio.run(post.aclear_nodes(*args, **kwargs))
    return post.clear_nodes(*args, **kwargs)


def _event(event: Any) -> tuple[Any, ...]:
    return (type(event).__name__, event.stage, sorted(event.payload))


@pytest.mark.parametrize("loop", [None, {"trigger": Sampling(0.0)}], ids=["cleared", "declined"])
def test_both_paths_make_the_same_calls_results_and_events(case, nodes, events, loop) -> None:
    runs = {}
    for mode in ("sync", "async"):
        llm = Recording.from_case(case)
        settings = {} if loop is None else {"loop": loop}
        post = MeClearPostprocessor(llm=llm, reference=case.reference, **settings)
        events.events.clear()
        result = _run(mode, post, nodes, case.query)
        runs[mode] = (result, llm, list(events.events))
    (s_res, s_llm, s_events), (a_res, a_llm, a_events) = runs["sync"], runs["async"]
    if loop is None:
        assert s_llm.paths == {"sync"} and a_llm.paths == {"async"}
        assert s_res.report.cleared_ids == ["f1", "f2"]
    else:
        assert s_llm.prompts == [] and s_res.report.status == "skipped"
    # the engine's coalitions run concurrently on both paths: the same prompts, any order
    assert _prompts(s_llm) == _prompts(a_llm)
    assert [n.node.node_id for n in s_res.nodes] == [n.node.node_id for n in a_res.nodes]
    assert [n.score for n in s_res.nodes] == [n.score for n in a_res.nodes]
    assert s_res.report.status == a_res.report.status
    assert s_res.report.cleared_ids == a_res.report.cleared_ids
    assert s_res.report.kept_ids == a_res.report.kept_ids
    assert s_res.error == a_res.error is None
    assert s_events and [_event(e) for e in s_events] == [_event(e) for e in a_events]


def test_both_paths_raise_the_same_errors(case, nodes) -> None:
    post = MeClearPostprocessor(llm=SimulatedLLM.from_case(case), reference=case.reference)
    for kwargs in ({}, {"query": case.query, "query_str": case.query}):
        raised = []
        for mode in ("sync", "async"):
            with pytest.raises(ConfigurationError) as info:
                _run(mode, post, nodes, **kwargs)
            raised.append(str(info.value))
        assert raised[0] == raised[1]


def test_both_paths_absorb_a_failing_model_alike(case, nodes: list[NodeWithScore]) -> None:
    class Broken(SimulatedLLM):
        def complete(self, prompt, formatted=False, **kwargs):
            raise TimeoutError("provider down")

        async def acomplete(self, prompt, formatted=False, **kwargs):
            raise TimeoutError("provider down")

    fast = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})
    results = []
    for mode in ("sync", "async"):
        post = MeClearPostprocessor(
            llm=Broken.from_case(case), reference=case.reference, clearance=fast
        )
        with pytest.warns(FailOpenWarning, match="clearance failed open"):
            results.append(_run(mode, post, nodes, case.query))
    # the engine's trials run concurrently: which one failed first is the only difference
    sync, asynchronous = (re.sub(r"trial \d+", "trial <n>", r.error or "") for r in results)
    assert sync == asynchronous and sync.startswith("EvaluatorError: ")
    assert results[0].report.status == results[1].report.status
    assert [n.node.node_id for n in results[0].nodes] == [m.id for m in case.memories]
    assert [n.node.node_id for n in results[1].nodes] == [m.id for m in case.memories]
