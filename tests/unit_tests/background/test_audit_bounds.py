"""Bounded audits: one pending audit per question, backoff after each, a daily cap.

A re-ask storm of a question the judge is fooled on (so no audit fixes it) costs at most
the daily cap; a fixed question is confirmed at most once per backoff; the bookkeeping is
per question whatever the retrieved context; a broken gate never fails the query."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableLambda

from meclear_integrations.jobs import JobStore
from meclear_integrations.jobs.audit_gate import AuditGate
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.pipeline.settings import Loop
from tests.support import stale_employer as sam


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _component(ledger: HarmLedger, counter: sam.Counter, clock: Clock, judge: Any, **loop: Any):
    docs = sam.documents(2)
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
        llm=counter.langchain_llm(),
        judge=judge,
        mode="background",
        loop={"ledger": ledger, "audit_workers": 0, **loop},
    )
    gate = component._audits
    assert isinstance(gate, AuditGate)
    gate.clock = clock
    return component


def _storm(component: Any, clock: Clock, asks: int, seconds: float, reference: Any) -> list[Any]:
    tickets = []
    config = reference_config(reference) if reference is not None else None
    for i in range(asks):
        clock.now += seconds / asks
        out = component.invoke(sam.QUESTION, config=config)
        tickets.append(out[0].metadata["meclear"])
        if i % 10 == 9:
            component.run_audits()  # the worker catches up now and then
    component.run_audits()
    return tickets


def fooled(answer: str, context: Any, reference: str | None = None) -> float:
    """A judge that accepts nothing: no audit can fix the question."""
    return 0.0


def test_a_200_ask_storm_of_an_unfixable_question_costs_at_most_two_audits(
    tmp_path: Path,
) -> None:
    counter, clock = sam.Counter(), Clock()
    with HarmLedger(tmp_path / "l.db") as ledger:
        component = _component(ledger, counter, clock, fooled)
        metas = _storm(component, clock, 200, 180.0, None)
        jobs = JobStore(ledger.url)
        try:
            audits = len(jobs.list_jobs())
        finally:
            jobs.close()
        assert 1 <= audits <= 2
        backed_off = [m for m in metas if m["audit"] is None]
        assert backed_off and all("next audit after" in m["notes"]["audit"] for m in backed_off)
        state = component._audits.state(ledger.query_id(sam.QUESTION))
        assert state["attempts"] == audits and state["unfixed_streak"] >= 1
        component.close()


def test_backoff_doubles_per_unfixed_audit_and_the_daily_cap_holds(tmp_path: Path) -> None:
    counter, clock = sam.Counter(), Clock()
    with HarmLedger(tmp_path / "l.db") as ledger:
        component = _component(
            ledger,
            counter,
            clock,
            fooled,
            audit_backoff_seconds=100.0,
            audits_per_question_per_day=3,
        )
        queued_at = []
        for _ in range(2000):  # one ask every 5 s for about 2.8 hours
            clock.now += 5.0
            meta = component.invoke(sam.QUESTION)[0].metadata["meclear"]
            if meta["audit"] is not None and not meta["audit"]["joined"]:
                queued_at.append(clock.now)
            component.run_audits()
        gaps = [b - a for a, b in itertools.pairwise(queued_at)]
        day = 86400.0
        same_day = [t for t in queued_at if int(t // day) == int(queued_at[0] // day)]
        assert len(same_day) <= 3
        assert gaps and gaps[0] >= 100.0 and (len(gaps) < 2 or gaps[1] >= 200.0)
        component.close()


def test_a_fixed_question_is_confirmed_at_most_once_per_backoff(tmp_path: Path) -> None:
    counter, clock = sam.Counter(), Clock()
    with HarmLedger(tmp_path / "l.db") as ledger:
        component = _component(ledger, counter, clock, counter.judge)
        metas = _storm(component, clock, 200, 180.0, sam.REFERENCE)
        runs = ledger.runs()
        assert len(runs) == 1 and runs[0].recovered  # the one audit fixed it
        assert {m["memory_id"] for m in metas[-1]["withheld"]} == {"s1", "s2"}
        state = component._audits.state(ledger.query_id(sam.QUESTION))
        assert state["unfixed_streak"] == 0 and state["attempts"] == 1
        component.close()


def test_one_pending_audit_per_question_whatever_its_context(tmp_path: Path) -> None:
    counter, clock = sam.Counter(), Clock()
    with HarmLedger(tmp_path / "l.db") as ledger:
        component = _component(ledger, counter, clock, fooled)
        first = component.invoke(sam.QUESTION)[0].metadata["meclear"]["audit"]
        docs = sam.documents(3)  # another retrieved context, same question
        component.retriever = RunnableLambda(lambda q: docs)
        second = component.invoke(sam.QUESTION)[0].metadata["meclear"]["audit"]
        assert second == {**first, "joined": True}
        component.close()


def test_a_broken_gate_never_fails_the_query(tmp_path: Path) -> None:
    counter, clock = sam.Counter(), Clock()
    with HarmLedger(tmp_path / "l.db") as ledger:
        component = _component(ledger, counter, clock, fooled)

        def broken(query_id: str) -> Any:
            raise RuntimeError("gate table locked")

        component._audits.admit = broken
        meta = component.invoke(sam.QUESTION)[0].metadata["meclear"]
        assert meta["audit"] is not None and "queued anyway" in meta["notes"]["audit_gate"]
        component.close()


def test_the_bounds_are_loop_settings() -> None:
    loop = Loop(audits_per_question_per_day=2, audit_backoff_seconds=30.0)
    assert (loop.audits_per_question_per_day, loop.audit_backoff_seconds) == (2, 30.0)
    assert Loop().audit_pending_seconds == 3600.0
