"""The ledger's async methods: its sync ones' results and errors, their database work off the
event loop's thread, and a one-shot iterator of memories is read once."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.base import LedgerLookupError
from tests.support.ledger import clear
from tests.unit_tests.ledger.test_scope import DENTIST, dentist_context, record_dentist_fault


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url) as led:
        yield led


def test_the_lookups_answer_as_their_sync_twins(ledger: HarmLedger) -> None:
    record_dentist_fault(ledger)
    context = dentist_context()
    scoped = ledger.prior_candidate(context, query=DENTIST)
    unscoped = ledger.prior_candidate(context)
    assert scoped.ids == ("old-dentist",) and unscoped.ids == ("old-dentist",)
    assert asyncio.run(ledger.aprior_candidate(iter(context), query=DENTIST)) == scoped
    assert asyncio.run(ledger.aprior_candidate(iter(context))) == unscoped
    assert asyncio.run(ledger.aprior_harmful(iter(context), query=DENTIST)) == ["old-dentist"]
    assert asyncio.run(ledger.ascoped_harm(DENTIST, iter(context))) == ledger.scoped_harm(
        DENTIST, context
    )


def test_record_and_feedback_run_off_the_loop_with_the_same_results(
    ledger: HarmLedger, monkeypatch: Any
) -> None:
    threads: dict[str, list[int]] = {}
    for name in ("_prepare", "_insert", "find_run", "_insert_feedback"):  # their database steps
        step = getattr(HarmLedger, name)

        def spy(
            self: HarmLedger, *args: Any, _step: Any = step, _name: str = name, **kw: Any
        ) -> Any:
            threads.setdefault(_name, []).append(threading.get_ident())
            return _step(self, *args, **kw)

        monkeypatch.setattr(HarmLedger, name, spy)
    run_id = record_dentist_fault(ledger, run_id="given")
    assert threads == {"_prepare": [threading.get_ident()], "_insert": [threading.get_ident()]}
    threads.clear()
    context = dentist_context()
    report = clear(context, gold={"new-dentist"}, faults={"old-dentist"})
    again = asyncio.run(ledger.arecord(report, query=DENTIST, context=context, run_id=run_id))
    assert again == ledger.find_run(run_id)  # idempotent by run id, as record
    fb = asyncio.run(ledger.afeedback(run_id, correct=False, correction="May 9"))
    assert fb == ledger.get_feedback(fb.feedback_id) and fb.run_id == run_id
    async_steps = dict(threads)
    async_steps["find_run"] = async_steps["find_run"][1:]  # the first: the check above
    assert sorted(async_steps) == ["_insert", "_insert_feedback", "_prepare", "find_run"]
    assert all(threading.get_ident() not in ids for ids in async_steps.values())  # worker threads
    with pytest.raises(ConfigurationError, match="at most 36"):
        asyncio.run(ledger.arecord(report, query=DENTIST, run_id="x" * 37))
    with pytest.raises(LedgerLookupError):
        asyncio.run(ledger.afeedback("no-such-run", correct=True))
