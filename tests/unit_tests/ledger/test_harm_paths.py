"""The harm lookups take the same steps on both paths (one flow each, ``step_driver``).

``scoped_harm`` / ``ascoped_harm``, ``prior_candidate`` / ``aprior_candidate`` and
``prior_harmful`` / ``aprior_harmful`` on the same ledger: the same reads with the same
arguments (each on the calling thread, or in a worker thread off the loop), the same
results and the same errors; a one-shot iterator of memories is read once. SIMULATED: the
scripted clearances of ``tests.support.ledger``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from meclear_integrations import Memory
from meclear_integrations.ledger import HarmLedger
from tests.support.clocks import StepClock
from tests.support.ledger import clear
from tests.unit_tests.ledger.test_scope import DENTIST, dentist_context

READS = ("_active_rows", "_vouched", "_unscoped_facts")
PARAPHRASE = "When is Sam's appointment at the dentist?"
LOOKUPS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("scoped_harm", (DENTIST,), {}),
    ("scoped_harm", (PARAPHRASE,), {}),
    ("scoped_harm", ("What does Sam eat?",), {}),
    ("prior_candidate", (), {"query": DENTIST}),
    ("prior_candidate", (), {"query": PARAPHRASE}),
    ("prior_candidate", (), {}),
    ("prior_harmful", (), {"query": DENTIST}),
    ("prior_harmful", (), {}),
]


@pytest.fixture
def ledger(ledger_url: str, monkeypatch: Any):
    with HarmLedger(ledger_url, clock=StepClock()) as led:
        context = dentist_context()
        fault = clear(context, gold={"new-dentist"}, faults={"old-dentist"})
        led.record(fault, query=DENTIST, context=context, success_signal="reference")
        led.reads = []  # type: ignore[attr-defined]
        for name in READS:
            read = getattr(HarmLedger, name)

            def spy(self: Any, *args: Any, _read: Any = read, _name: str = name) -> Any:
                self.reads.append((_name, args, threading.get_ident()))
                return _read(self, *args)

            monkeypatch.setattr(HarmLedger, name, spy)
        yield led


def _lookup(ledger: Any, mode: str, name: str, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    ledger.reads.clear()
    args = (*args, iter(dentist_context()))  # the question (scoped_harm's only), the context
    try:
        if mode == "sync":
            result = getattr(ledger, name)(*args, **kw)
        else:
            result = asyncio.run(getattr(ledger, "a" + name)(*args, **kw))
    except Exception as exc:
        result = (type(exc).__name__, str(exc))
    reads = [(read, args) for read, args, _ in ledger.reads]
    return result, reads, {thread for _, _, thread in ledger.reads}


@pytest.mark.parametrize(("name", "args", "kw"), LOOKUPS)
def test_both_paths_make_the_same_reads_and_answers(
    ledger: Any, name: str, args: tuple[Any, ...], kw: dict[str, Any]
) -> None:
    result, reads, threads = _lookup(ledger, "sync", name, args, kw)
    aresult, areads, athreads = _lookup(ledger, "async", name, args, kw)
    assert (result, reads) == (aresult, areads) and reads
    assert threads == {threading.get_ident()}
    assert threading.get_ident() not in athreads  # worker threads, off the loop


def test_the_settled_harm_is_vouched_for_on_both_paths(ledger: Any) -> None:
    result, reads, _ = _lookup(ledger, "sync", "prior_candidate", (), {"query": DENTIST})
    assert result.ids == result.settled == ("old-dentist",)
    assert [read for read, _ in reads] == ["_active_rows", "_vouched"]


def test_both_paths_fail_alike(ledger: Any) -> None:
    context: list[Any] = [Memory(id="m1", content="x"), "not a memory"]
    errors = []
    for call in (
        lambda: ledger.scoped_harm(DENTIST, context),
        lambda: asyncio.run(ledger.ascoped_harm(DENTIST, context)),
        lambda: ledger.prior_candidate(context),
        lambda: asyncio.run(ledger.aprior_candidate(context)),
    ):
        with pytest.raises(AttributeError) as error:
            call()
        errors.append(str(error.value))
    assert len(set(errors)) == 1
