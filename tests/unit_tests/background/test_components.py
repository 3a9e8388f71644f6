"""mode="background" on the three components: no model call on the request path, the
verified harm withheld after the audit, status on every item, single flight."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations.jobs import AuditWorker
from meclear_integrations.langchain import (
    ClearingRetriever,
    MeClearCompressor,
    SimulatedChatModel,
    reference_config,
)
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
from meclear_integrations.simulation import SimulatedCase
from meclear_integrations.triggers import Sampling
from tests.support.chat import ScriptedChat

HARMFUL = ["f1", "f2"]


class CountingLLM(SimulatedLLM):
    """The simulated LlamaIndex LLM, counting its calls."""

    calls: int = 0

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any):  # type: ignore[override]
        self.calls += 1
        return super().complete(prompt, formatted, **kwargs)


def documents(case: SimulatedCase) -> list[Document]:
    return [
        Document(page_content=m.content, metadata=dict(m.metadata), id=m.id) for m in case.memories
    ]


def nodes(case: SimulatedCase) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]


def retriever(
    case: SimulatedCase, ledger: HarmLedger, trigger: Any = None, **kwargs: Any
) -> tuple[ClearingRetriever, ScriptedChat]:
    model = ScriptedChat(inner=SimulatedChatModel.from_case(case))
    docs = documents(case)
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        llm=model,
        mode="background",
        loop={"ledger": ledger, "audit_workers": 0, "trigger": trigger},
        **kwargs,
    )
    return component, model


def meta(item: Any) -> dict[str, Any]:
    if isinstance(item, NodeWithScore):
        return item.node.metadata["meclear"]
    return item.metadata["meclear"]


def test_background_needs_a_ledger(case: SimulatedCase) -> None:
    # ConfigurationError, or pydantic's wrap
    with pytest.raises(ValueError, match=r"needs loop=Loop\(ledger="):
        ClearingRetriever(
            retriever=RunnableLambda(lambda q: []),
            llm=SimulatedChatModel.from_case(case),
            mode="background",
        )
    # ConfigurationError, or pydantic's wrap
    with pytest.raises(ValueError, match=r"needs loop=Loop\(ledger="):
        MeClearPostprocessor(llm=SimulatedLLM.from_case(case), mode="background")


def test_the_request_path_makes_no_model_call_and_the_audit_fixes_the_next_ask(
    case: SimulatedCase, ledger: HarmLedger
) -> None:
    component, model = retriever(case, ledger)
    config = reference_config(case.reference)
    first = component.invoke(case.query, config=config)
    assert model.calls == 0
    assert [d.id for d in first] == [m.id for m in case.memories]  # nothing proven yet
    assert {meta(d)["status"] for d in first} == {"kept"}
    audit = meta(first[0])["audit"]
    assert audit["joined"] is False and meta(first[0])["mode"] == "background"

    [(job_id, outcome)] = AuditWorker(component._queue, component).run_until_idle()
    assert job_id == audit["job_id"] and outcome.state == "done" and model.calls > 0
    [run] = ledger.runs()
    assert run.origin == "audit" and sorted(run.cleared_ids) == HARMFUL

    calls = model.calls
    second = component.invoke(case.query, config=config)
    assert model.calls == calls  # still no model call on the request path
    assert [d.id for d in second] == [m.id for m in case.memories if m.id not in HARMFUL]
    withheld = meta(second[0])["withheld"]
    assert [w["memory_id"] for w in withheld] == HARMFUL
    assert all(
        w["status"] == "withheld" and w["status_reason"].startswith("verified_harm")
        for w in withheld
    )


def test_twenty_duplicate_questions_in_flight_cost_one_audit(
    case: SimulatedCase, ledger: HarmLedger
) -> None:
    component, model = retriever(case, ledger)
    config = reference_config(case.reference)

    async def ask_twenty() -> list[list[Document]]:
        return await asyncio.gather(
            *(component.ainvoke(case.query, config=config) for _ in range(20))
        )

    answers = asyncio.run(ask_twenty())
    assert model.calls == 0
    tickets = [meta(a[0])["audit"] for a in answers]
    assert len({t["job_id"] for t in tickets}) == 1 and sum(not t["joined"] for t in tickets) == 1
    done = AuditWorker(component._queue, component).run_until_idle()
    assert len(done) == 1 and len(ledger.runs()) == 1


def test_a_declining_trigger_queues_nothing(case: SimulatedCase, ledger: HarmLedger) -> None:
    component, model = retriever(case, ledger, trigger=Sampling(0.0, seed=0))
    out = component.invoke(case.query, config=reference_config(case.reference))
    assert meta(out[0])["audit"] is None and meta(out[0])["trigger"]["run"] is False
    assert component._queue.stats()["queued"] == 0 and model.calls == 0


def test_the_compressor_runs_in_background_too(case: SimulatedCase, ledger: HarmLedger) -> None:
    model = ScriptedChat(inner=SimulatedChatModel.from_case(case))
    compressor = MeClearCompressor(
        llm=model, mode="background", loop={"ledger": ledger, "audit_workers": 0}
    )
    out = compressor.compress_documents(documents(case), case.query)
    assert model.calls == 0 and {meta(d)["status"] for d in out} == {"kept"}
    assert AuditWorker(compressor._queue, compressor).run_until_idle()[0][1].state == "done"


def test_the_postprocessor_withholds_after_its_audit_sync_and_async(
    case: SimulatedCase, ledger: HarmLedger
) -> None:
    llm = CountingLLM.from_case(case)
    pp = MeClearPostprocessor(
        llm=llm,
        reference=case.reference,
        mode="background",
        loop={"ledger": ledger, "audit_workers": 0},
    )
    first = pp.postprocess_nodes(nodes(case), query_str=case.query)
    assert llm.calls == 0 and {meta(n)["status"] for n in first} == {"kept"}
    [(_, outcome)] = AuditWorker(pp._queue, pp).run_until_idle()
    assert outcome.state == "done" and llm.calls > 0
    calls = llm.calls
    second = asyncio.run(pp.apostprocess_nodes(nodes(case), query_str=case.query))
    assert llm.calls == calls
    assert [n.node.node_id for n in second] == [m.id for m in case.memories if m.id not in HARMFUL]
    assert [w["memory_id"] for w in meta(second[0])["withheld"]] == HARMFUL


def test_a_ledger_lookup_failure_never_fails_the_query(
    case: SimulatedCase, ledger: HarmLedger, monkeypatch
) -> None:
    component, _ = retriever(case, ledger)
    name = "scoped_harm" if hasattr(ledger, "scoped_harm") else "prior_harmful"

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("database away")

    monkeypatch.setattr(ledger, name, broken)
    out = component.invoke(case.query, config=reference_config(case.reference))
    assert len(out) == len(case.memories)
    assert "harm lookup failed" in meta(out[0])["notes"]["ledger"]


def test_the_in_process_workers_start_and_stop_with_the_component(
    case: SimulatedCase, ledger: HarmLedger
) -> None:
    component, _ = retriever(case, ledger)
    assert component._workers is None  # audit_workers=0
    started = ClearingRetriever(
        retriever=RunnableLambda(lambda q: documents(case)),
        llm=SimulatedChatModel.from_case(case),
        mode="background",
        loop={"ledger": ledger},
    )
    try:
        assert started._workers is not None and started._workers.running
    finally:
        started.close()
    assert started._workers is None


def test_every_mode_marks_every_returned_item(case: SimulatedCase, ledger: HarmLedger) -> None:
    for mode in ("clear", "shadow"):
        component = ClearingRetriever(
            retriever=RunnableLambda(lambda q: documents(case)),
            llm=SimulatedChatModel.from_case(case),
            mode=mode,
        )
        out = component.invoke(case.query, config=reference_config(case.reference))
        assert out and all(meta(d)["status"] == "complete" for d in out)


def test_an_audit_run_twice_records_once(case: SimulatedCase, ledger: HarmLedger) -> None:
    """At-least-once delivery: a job finished by two workers leaves one ledger run."""
    component, _ = retriever(case, ledger)
    component.invoke(case.query, config=reference_config(case.reference))
    [job] = component._queue.list_jobs("queued")
    from meclear_integrations.jobs.snapshot import AuditSnapshot

    snapshot = AuditSnapshot.loads(component._queue.claim("w", lease_seconds=60).payload)
    first = component.audit(snapshot, run_id=job.job_id)
    second = component.audit(snapshot, run_id=job.job_id)
    assert first.state == second.state == "done"
    assert first.ledger_run_id == second.ledger_run_id == job.job_id
    [run] = ledger.runs()
    assert run.run_id == job.job_id and len(run.memories) == len(case.memories)


def test_a_provider_outage_backs_the_audit_off_and_leaves_the_request_path_alone(
    case: SimulatedCase, ledger: HarmLedger
) -> None:
    from meclear_integrations import ClearanceConfig

    model = ScriptedChat(inner=SimulatedChatModel.from_case(case), every=ConnectionError("503"))
    docs = documents(case)
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        llm=model,
        mode="background",
        limits={"circuit_breaker": None},
        clearance=ClearanceConfig(failure={"retry": {"max_attempts": 1, "initial_backoff": 0.0}}),
        loop={"ledger": ledger, "audit_workers": 0},
    )
    out = component.invoke(case.query, config=reference_config(case.reference))
    assert len(out) == len(case.memories) and model.calls == 0
    [outcome] = component.run_audits()
    assert outcome.state == "retry" and "503" in str(outcome.reason)
    [job] = component._queue.list_jobs()
    assert job.state == "queued" and job.attempts == 1 and "503" in str(job.last_error)
    assert ledger.runs() == []  # a failed audit records nothing; the retry will
    again = component.invoke(case.query, config=reference_config(case.reference))
    assert len(again) == len(case.memories) and meta(again[0])["audit"]["joined"] is True


def test_shadow_mode_with_a_ledger_drops_nothing(case: SimulatedCase, ledger: HarmLedger) -> None:
    """The four copies filtered a gated query's documents by the report's kept ids, so shadow
    mode with a trigger or ledger dropped what it would have cleared; the one flow does not."""
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: documents(case)),
        llm=SimulatedChatModel.from_case(case),
        mode="shadow",
        loop={"ledger": ledger},
    )
    out = component.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == [m.id for m in case.memories]
    assert sorted(d.id for d in out if meta(d)["cleared"]) == HARMFUL
    assert all(meta(d)["mode"] == "shadow" and "ledger_run_id" in meta(d) for d in out)


def test_an_audit_the_engine_stops_early_is_done_not_dead_lettered(
    case: SimulatedCase, ledger: HarmLedger
) -> None:
    """A model that cannot answer even from the full context: the audit's engine run stops
    with ``status="skipped"`` (``stops.cannot_answer``). That is the audit's verdict: the
    job is done on its first attempt, nothing is recorded against any memory, and no
    retry ends it in the dead letters."""
    from meclear_integrations.simulation.faults import ScriptedFaults

    pp = MeClearPostprocessor(
        llm=SimulatedLLM.from_case(case, faults=ScriptedFaults(every="I don't know.")),
        judge=SimulatedLLM.from_case(case),
        reference=case.reference,
        mode="background",
        loop={"ledger": ledger, "audit_workers": 0},
    )
    pp.postprocess_nodes(nodes(case), query_str=case.query)
    [(_, outcome)] = AuditWorker(pp._queue, pp).run_until_idle()
    assert outcome.state == "done" and outcome.ledger_run_id is None
    assert outcome.reason == "skipped: model_cannot_answer"
    [job] = pp._queue.list_jobs()
    assert job.state == "done" and job.attempts == 1
    assert pp._queue.list_jobs("dead") == [] and ledger.runs() == []
    again = pp.postprocess_nodes(nodes(case), query_str=case.query)
    assert [n.node.node_id for n in again] == [m.id for m in case.memories]
