"""Spans: every agent and judge LLM call is nested under the postprocessor's span (sync,
including the engine's worker threads, and async)."""

from __future__ import annotations

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.llama_index import MeClearPostprocessor


def ancestors(span_id: str, parents: dict[str, str | None]) -> list[str]:
    out = []
    while (span_id := parents.get(span_id)) is not None:
        out.append(span_id)
    return out


def check_tree(spans, postprocessor_method: str, model_calls: int) -> None:
    done = spans.completed_spans
    parents = {s.id_: s.parent_id for s in done}
    roots = [
        s.id_ for s in done if s.id_.startswith(f"MeClearPostprocessor.{postprocessor_method}-")
    ]
    assert len(roots) == 1, roots
    root = roots[0]
    assert any(a.startswith("RetrieverQueryEngine.") for a in ancestors(root, parents))
    llm_calls = [s.id_ for s in done if s.id_.startswith("SimulatedLLM.")]
    inside = [s for s in llm_calls if root in ancestors(s, parents)]
    # every agent and judge model call (the report counts them), under the postprocessor span
    assert len(inside) == model_calls
    # the final answer is synthesized outside the clearance
    assert len(llm_calls) - len(inside) >= 1


def test_sync_llm_calls_nest_under_the_postprocessor_span(case, index, llm, spans) -> None:
    pp = MeClearPostprocessor(
        llm=llm,
        reference=case.reference,
        clearance=ClearanceConfig(budget={"max_concurrency": 4}),
    )
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])
    result = pp.clear_nodes(
        index.as_retriever(similarity_top_k=6).retrieve(case.query), case.query
    )  # count evaluations
    spans.completed_spans.clear()
    engine.query(case.query)
    check_tree(spans, "_postprocess_nodes", result.report.cost.model_calls)


async def test_async_llm_calls_nest_under_the_postprocessor_span(case, index, llm, spans) -> None:
    pp = MeClearPostprocessor(llm=llm, reference=case.reference)
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])
    result = await pp.aclear_nodes(
        await index.as_retriever(similarity_top_k=6).aretrieve(case.query), case.query
    )
    spans.completed_spans.clear()
    await engine.aquery(case.query)
    check_tree(spans, "_apostprocess_nodes", result.report.cost.model_calls)


def test_clear_nodes_has_its_own_span(case, nodes, llm, spans) -> None:
    pp = MeClearPostprocessor(llm=llm, reference=case.reference)
    pp.clear_nodes(nodes, case.query)
    ids = [s.id_ for s in spans.completed_spans]
    root = next(i for i in ids if i.startswith("MeClearPostprocessor.clear_nodes-"))
    parents = {s.id_: s.parent_id for s in spans.completed_spans}
    llm_calls = [i for i in ids if i.startswith("SimulatedLLM.")]
    assert llm_calls and all(root in ancestors(i, parents) for i in llm_calls)
