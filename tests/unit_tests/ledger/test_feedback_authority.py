"""Feedback with authority: one untrusted thumbs-down changes what no other user sees.

An end user (the default authority) says the right answer was wrong, gives the stale value
as the "correction" and names the true memory; the routine replay then runs. The replay is
recorded as history only: no harm shared, nothing settled, restored or exonerated, and the
next users (background mode) are served as before. The same verdict from an operator does
act (the check can fail). Old feedback rows read as ``end_user`` after the migration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from sqlalchemy import DDL, delete

from meclear_integrations import ClearanceConfig
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.ledger import HarmLedger, LedgerLookupError, replay_pending
from meclear_integrations.ledger import schema as tables
from meclear_integrations.ledger.migrations import SCHEMA_VERSION
from tests.support import stale_employer as sam

FAST = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})


def _served(component: ClearingRetriever) -> set[str]:
    out = component.invoke(sam.QUESTION, config=reference_config(sam.REFERENCE))
    return {str(d.id) for d in out}


def _fixed(tmp_path: Path) -> tuple[HarmLedger, ClearingRetriever, sam.Counter]:
    counter = sam.Counter()
    ledger = HarmLedger(tmp_path / "l.db", store_text=True)
    docs = sam.documents(2)
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
        llm=counter.langchain_llm(),
        judge=counter.judge,
        clearance=FAST,
        mode="background",
        loop={"ledger": ledger, "audit_workers": 0},
    )
    _served(component)
    component.run_audits()
    assert _served(component) == {"b1", "b2", "t1"}  # fixed: both stale copies withheld
    return ledger, component, counter


def _evaluator_for(counter: sam.Counter) -> Any:
    def evaluator_for(query: str, reference: str, memories: list[Any]) -> Any:
        def evaluate(coalition: Any, trial: int) -> float:
            prompt = "".join(f"<memory>{m.content}</memory>" for m in coalition)
            return sam.verdict(sam.majority_answer(prompt), coalition, reference)

        return evaluate

    return evaluator_for


@pytest.mark.parametrize("authority", ["end_user", "operator"])
def test_one_untrusted_negative_feedback_changes_no_other_users_answer(
    tmp_path: Path, authority: str
) -> None:
    ledger, component, counter = _fixed(tmp_path)
    try:
        right = ledger.runs()[0]  # the audit: it answered right
        assert right.recovered
        before = {h.memory_id for h in ledger.scoped_harm(sam.QUESTION, component_memories())}
        extra = {} if authority == "end_user" else {"source_id": "ops", "comment": "checked"}
        fb = ledger.feedback(
            right.run_id,
            correct=False,
            correction="OldCo",  # the stale value
            memory_ids=["t1"],  # the true memory
            authority=authority,  # type: ignore[arg-type]
            **extra,
        )
        assert fb.authority == authority
        [result] = replay_pending(ledger, evaluator_for=_evaluator_for(counter))
        assert not isinstance(result, Exception) and result.report.recovered  # "verified"
        after = {h.memory_id for h in ledger.scoped_harm(sam.QUESTION, component_memories())}
        served = _served(component)
        if authority == "end_user":  # history only: nobody else's answer changes
            assert result.restored == [] and result.exonerated == []
            assert after == before and served == {"b1", "b2", "t1"}
            assert ledger.runs()[0].origin == "replay"  # recorded all the same
        else:  # the same verdict from an operator acts (this check can fail)
            assert result.restored and after != before and served != {"b1", "b2", "t1"}
    finally:
        component.close()
        ledger.close()


def component_memories() -> list[Any]:
    from meclear_integrations.core.memory import Memory

    return [Memory(id=i, content=t) for i, t, _ in sam.memories(2)]


def test_feedback_authority_is_checked_and_unknown_runs_are_clear_errors(tmp_path: Path) -> None:
    ledger, component, _ = _fixed(tmp_path)
    try:
        run = ledger.runs()[0]
        with pytest.raises(ConfigurationError, match="authority must be one of"):
            ledger.feedback(run.run_id, correct=False, authority="admin")  # type: ignore[arg-type]
        with pytest.raises(LedgerLookupError, match="no-such-run"):
            ledger.feedback("no-such-run", correct=False, correction="x")
        assert ledger.feedback(run.run_id, correct=True, trusted=True).authority == "reviewer"
    finally:
        component.close()
        ledger.close()


def test_old_feedback_rows_migrate_as_end_user_and_nothing_is_lost(tmp_path: Path) -> None:
    ledger, component, _ = _fixed(tmp_path)
    run = ledger.runs()[0]
    fb = ledger.feedback(run.run_id, correct=False, correction="NewCo", comment="kept")
    component.close()
    f = tables.feedback
    with ledger.engine.begin() as conn:  # back to a version-3 database: no authority column
        conn.execute(DDL(f"ALTER TABLE {f.name} DROP COLUMN authority"))
        conn.execute(delete(tables.schema_version).where(tables.schema_version.c.version > 3))
    ledger.close()
    with HarmLedger(tmp_path / "l.db") as migrated:
        old = migrated.get_feedback(fb.feedback_id)
        assert old.authority == "end_user" and old.comment == "kept" and old.correction == "NewCo"
        assert len(migrated.runs()) == len(ledger.runs()) >= 1
        assert SCHEMA_VERSION >= 4
