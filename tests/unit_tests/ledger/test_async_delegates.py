"""The ledger's async methods are its sync ones in a worker thread: same arguments, results and
errors, off the event loop's thread, and a one-shot iterator of memories is read once."""

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
    threads: list[int] = []
    for name in ("record", "feedback"):
        sync = getattr(HarmLedger, name)

        def spy(self: HarmLedger, *args: Any, _sync: Any = sync, **kwargs: Any) -> Any:
            threads.append(threading.get_ident())
            return _sync(self, *args, **kwargs)

        monkeypatch.setattr(HarmLedger, name, spy)
    run_id = record_dentist_fault(ledger, run_id="given")
    context = dentist_context()
    report = clear(context, gold={"new-dentist"}, faults={"old-dentist"})
    again = asyncio.run(ledger.arecord(report, query=DENTIST, context=context, run_id=run_id))
    assert again == ledger.find_run(run_id)  # idempotent by run id, as record
    fb = asyncio.run(ledger.afeedback(run_id, correct=False, correction="May 9"))
    assert fb == ledger.get_feedback(fb.feedback_id) and fb.run_id == run_id
    assert threads[0] == threading.get_ident()  # the sync call
    assert threading.get_ident() not in threads[1:]  # the async ones: worker threads
    with pytest.raises(ConfigurationError, match="at most 36"):
        asyncio.run(ledger.arecord(report, query=DENTIST, run_id="x" * 37))
    with pytest.raises(LedgerLookupError):
        asyncio.run(ledger.afeedback("no-such-run", correct=True))
