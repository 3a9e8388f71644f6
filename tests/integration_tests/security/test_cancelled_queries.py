"""A query whose caller cancelled is not written to the ledger as a run (watched on the real
clock: whatever the cancelled query left running in the background, in tasks or worker
threads, has finished before the ledger is read)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations.judges import CallableJudge
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.ledger import HarmLedger
from tests.support.honest_judge import GOLD, GOLD_MEMORY, QUESTION

DOCS = [
    Document(page_content=GOLD_MEMORY, id="g1"),
    Document(page_content="John was in Italy in January 2023.", id="stale"),
    Document(page_content="John likes pasta.", id="b1"),
]


def _runs(ledger: HarmLedger) -> int:
    return int(ledger.stats()["runs"])


@pytest.mark.slow
async def test_a_cancelled_query_is_not_recorded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    started = asyncio.Event()

    async def agent(inputs: dict) -> str:
        started.set()
        await asyncio.sleep(0.05 if "January" not in inputs["context"] else 0.2)
        return "January 2023" if "January" in inputs["context"] else GOLD

    with HarmLedger(tmp_path / "ledger.db") as ledger:
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: DOCS),
            agent=RunnableLambda(agent),
            judge=CallableJudge(lambda answer, reference: float(answer.strip() == reference)),
            loop={"ledger": ledger},
        )
        task = asyncio.create_task(retriever.ainvoke(QUESTION, config=reference_config(GOLD)))
        await started.wait()
        await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.5)  # anything still running in the background has finished
        assert _runs(ledger) == 0, ledger.stats()
        out = await retriever.ainvoke(QUESTION, config=reference_config(GOLD))  # not cancelled
        assert [d.id for d in out] == ["g1", "b1"]
        assert _runs(ledger) == 1, ledger.stats()


async def test_the_gate_does_not_record_for_a_caller_that_cancelled(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
    from meclear_integrations.guard.gate import ClearanceGate

    memories = [Memory(id=d.id, content=d.page_content) for d in DOCS]
    report = MeClearEngine().clear(memories, lambda c, t: float("stale" not in {m.id for m in c}))
    with HarmLedger(tmp_path / "ledger.db") as ledger:
        gate = ClearanceGate(ledger=ledger)
        plan = gate.plan(QUESTION, memories, ClearanceConfig())

        async def caller() -> None:
            asyncio.current_task().cancel()  # type: ignore[union-attr]  # the caller gave up
            await gate.afinish(plan, report)

        task = asyncio.create_task(caller())
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.3)  # a write started in a thread would have finished
        assert _runs(ledger) == 0
        await gate.afinish(plan, report)  # not cancelled: recorded
        assert _runs(ledger) == 1
