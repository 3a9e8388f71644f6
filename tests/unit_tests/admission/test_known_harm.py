"""Admission knows the harm ledger: a verified harmful text is never re-admitted silently."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from meclear_integrations import Memory
from meclear_integrations.admission import AdmissionConfig, ConMemAdmitter
from meclear_integrations.admission.background import BackgroundAdmission
from meclear_integrations.jobs import AuditWorker, JobStore
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.content import LedgerHarmIndex
from tests.support.ledger import clear
from tests.support.stage_models import StageModel

QUESTION = "What can I cook for the user tonight?"
HARMFUL = "User is allergic to peanuts."
CONTEXT = "user: I love peanut butter sandwiches, make me one."


@pytest.fixture
def ledger(tmp_path: Path):
    with HarmLedger(tmp_path / "ledger.db") as led:
        ctx = [
            Memory(id="good", content="User cooks Thai food."),
            Memory(id="bad", content=HARMFUL),
        ]
        report = clear(ctx, gold={"good"}, faults={"bad"})
        led.record(report, query=QUESTION, context=ctx, success_signal="reference")
        yield led


def _run_id(ledger: HarmLedger) -> str:
    return ledger.runs()[0].run_id


@pytest.mark.parametrize("memory_id", ["bad", "a-new-id", None])
def test_the_same_text_is_rejected_with_the_evidence_and_no_model_call(ledger, memory_id) -> None:
    model = StageModel()
    admitter = ConMemAdmitter(model, harm_index=LedgerHarmIndex(ledger))
    decision = admitter.decide(HARMFUL, CONTEXT, candidate_id=memory_id)
    assert decision.decision == "do_not_store" and model.calls == []
    harm = decision.known_harm
    assert harm is not None and harm.action == "rejected" and harm.run_id == _run_id(ledger)
    assert harm.match == ("same_id" if memory_id == "bad" else "same_text")
    assert _run_id(ledger) in decision.explanation
    assert decision.summary()["known_harm"]["run_id"] == _run_id(ledger)
    again = asyncio.run(admitter.adecide("user is allergic to PEANUTS", CONTEXT))
    assert again.known_harm is not None and again.known_harm.match == "normalised_text"
    assert again.decision == "do_not_store" and model.calls == []


def test_a_near_duplicate_is_flagged_and_decided_by_conmem(ledger) -> None:
    model = StageModel()  # scripted to store
    admitter = ConMemAdmitter(model, harm_index=LedgerHarmIndex(ledger))
    decision = admitter.decide("User is allergic to the peanuts!", CONTEXT)
    assert decision.decision == "store" and len(model.calls) >= 14
    harm = decision.known_harm
    assert harm is not None and harm.match == "near_duplicate" and harm.action == "flagged"
    assert decision.summary()["known_harm"]["action"] == "flagged"
    assert "near-duplicate" in decision.explanation


def test_policies_switch_reject_and_flag(ledger) -> None:
    model = StageModel()
    strict = ConMemAdmitter(
        model,
        AdmissionConfig(on_near_duplicate_harm="reject"),
        harm_index=LedgerHarmIndex(ledger),
    )
    near = strict.decide("User is allergic to the peanuts!", CONTEXT)
    assert near.decision == "do_not_store" and near.known_harm.action == "rejected"
    assert model.calls == []
    lenient = ConMemAdmitter(
        model, AdmissionConfig(on_known_harm="flag"), harm_index=LedgerHarmIndex(ledger)
    )
    flagged = lenient.decide(HARMFUL, CONTEXT, candidate_id="bad")
    assert flagged.known_harm.action == "flagged" and len(model.calls) >= 14


def test_an_unrelated_candidate_is_decided_as_before(ledger) -> None:
    model = StageModel()
    decision = ConMemAdmitter(model, harm_index=LedgerHarmIndex(ledger)).decide(
        "User is vegetarian.", CONTEXT
    )
    assert decision.known_harm is None and decision.summary()["known_harm"] is None
    assert decision.decision == "store"


def test_a_background_write_of_a_harmful_text_is_rejected_with_evidence(
    ledger, tmp_path: Path
) -> None:
    model = StageModel()
    jobs = JobStore(tmp_path / "jobs.db")
    stored: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(model, harm_index=LedgerHarmIndex(ledger)),
        jobs=jobs,
        workers=0,
        on_store=lambda job, record: stored.append(job.candidate),
    )
    ticket = gate.submit(HARMFUL, CONTEXT, candidate_id="fresh-id")
    AuditWorker(jobs, gate).run_until_idle()
    record = ticket.result(timeout=1)
    assert record.state == "rejected" and stored == [] and model.calls == []
    assert record.decision["known_harm"]["match"] == "same_text"
    assert record.decision["known_harm"]["run_id"] == _run_id(ledger)
