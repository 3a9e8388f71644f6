"""Inside query engines: the answer flips from wrong to right; aquery stays on the loop."""

from __future__ import annotations

import asyncio
import threading

from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import get_response_synthesizer

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM, query_reference

KEPT = ["g1", "b1", "b2", "b3"]


def source_ids(response) -> list[str]:
    return [n.node.node_id for n in response.source_nodes]


def test_vector_index_query_engine_answer_flips(case, index, llm) -> None:
    plain = index.as_query_engine(llm=llm, similarity_top_k=6)
    before = plain.query(case.query)
    assert str(before) == "January 2023"
    assert set(source_ids(before)) == {m.id for m in case.memories}

    pp = MeClearPostprocessor(llm=llm, reference=case.reference)
    cleared = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])
    after = cleared.query(case.query)
    assert str(after) == "December 2023"
    assert sorted(source_ids(after)) == sorted(KEPT)
    # kept nodes keep the retriever's order (the vector store ranks by similarity)
    retrieved = source_ids(before)
    assert source_ids(after) == [i for i in retrieved if i in KEPT]


def test_retriever_query_engine_with_reference_per_query(case, index, llm) -> None:
    engine = RetrieverQueryEngine.from_args(
        index.as_retriever(similarity_top_k=6),
        llm=llm,
        node_postprocessors=[MeClearPostprocessor(llm=llm)],
    )
    assert str(engine.query(case.query)) == "January 2023"  # reference-free: no harm seen
    with query_reference(case.reference):
        assert str(engine.query(case.query)) == "December 2023"


async def test_aquery_flips_too(case, index, llm) -> None:
    pp = MeClearPostprocessor(llm=llm, reference=case.reference)
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])
    response = await engine.aquery(case.query)
    assert str(response) == "December 2023"
    assert sorted(source_ids(response)) == sorted(KEPT)


async def test_aquery_does_not_block_the_event_loop(case, index, monkeypatch) -> None:
    """Every LLM call is awaited on the loop's own thread (no thread hop, no sync path), the
    loop keeps running other tasks meanwhile, and evaluations run concurrently."""
    loop_thread = threading.get_ident()
    threads: list[int] = []
    in_flight = 0
    most_in_flight = 0
    ticks_seen_by_calls: list[int] = []

    class Slow(SimulatedLLM):
        def complete(self, prompt, formatted=False, **kwargs):
            raise AssertionError("the sync LLM path ran under aquery")

        async def acomplete(self, prompt, formatted=False, **kwargs):
            nonlocal in_flight, most_in_flight
            threads.append(threading.get_ident())
            ticks_seen_by_calls.append(ticks)
            in_flight += 1
            most_in_flight = max(most_in_flight, in_flight)
            try:
                return await super().acomplete(prompt, formatted=formatted, **kwargs)
            finally:
                in_flight -= 1

    def no_sync(self, nodes, query_bundle=None):
        raise AssertionError("the sync postprocessor ran under aquery")

    monkeypatch.setattr(MeClearPostprocessor, "_postprocess_nodes", no_sync)
    latency = 0.02
    llm = Slow.from_case(case, latency=latency)
    pp = MeClearPostprocessor(
        llm=llm,
        reference=case.reference,
        clearance=ClearanceConfig(budget={"max_concurrency": 16}),
    )
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])

    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.002)

    task = asyncio.create_task(ticker())
    response = await engine.aquery(case.query)
    stop.set()
    await task

    assert str(response) == "December 2023"
    assert threads and set(threads) == {loop_thread}
    # evaluations overlap (counted, not timed: robust on a loaded machine)
    assert most_in_flight >= 4, most_in_flight
    # the ticker kept running between the LLM calls: the loop was never held by the query
    assert ticks_seen_by_calls[-1] - ticks_seen_by_calls[0] >= 3, ticks_seen_by_calls


def test_a_synthesizer_agent_inside_the_query_engine(case, index, llm) -> None:
    synth = get_response_synthesizer(llm=llm, response_mode="compact")
    pp = MeClearPostprocessor(response_synthesizer=synth, llm=llm, reference=case.reference)
    engine = index.as_query_engine(
        llm=llm, similarity_top_k=6, node_postprocessors=[pp], response_synthesizer=synth
    )
    assert str(engine.query(case.query)) == "December 2023"
