"""``decide`` and ``adecide`` take the same steps (one flow, ``core.concurrency.step_driver``).

On the same scripted model (SIMULATED, ``tests.support.stage_models``) the sync and the async
path make the same model calls, emit the same stage events in the same order, and reach the
same decision (timings aside), error or rejection; the ledger lookup of a known harm runs on
the calling thread on the sync path and in a worker thread, off the loop, on the async one.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from meclear_integrations import Memory
from meclear_integrations.admission import AdmissionConfig, AdmissionEvent, ConMemAdmitter
from meclear_integrations.admission.errors import InvalidCandidateError
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.content import LedgerHarmIndex
from tests.support.ledger import clear
from tests.support.stage_models import PROBES, Script, StageModel

CANDIDATE = "User is strictly vegetarian."
CONTEXT = "user: can you suggest a fine-dining spot? My co-worker doesn't eat meat."
HARMFUL = "User is allergic to peanuts."

SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "store": ({}, {}),
    "do_not_store": (
        {
            "script": Script(
                labels={"relevant": "risk", "irrelevant": "neutral", "risk": "risk"},
                preferences={"relevant": "control", "irrelevant": "tie", "risk": "control"},
            )
        },
        {},
    ),
    "tie_break": ({"script": Script(labels={r: "neutral" for r in PROBES})}, {}),
    "audit_unparsable": ({"overrides": {"audit": lambda p: "??"}}, {}),
    "model_raises": (
        {"overrides": {"respond": lambda p: RuntimeError("provider down")}},
        {"max_parse_attempts": 2},
    ),
    "irrelevant_if_open": ({}, {"irrelevant_probe": "if_open"}),
}


def _comparable(decision: Any) -> dict[str, Any]:
    data = decision.model_dump(mode="json")
    data["cost"].pop("latency_seconds")
    data["cost"].pop("wall_seconds")
    return data


def _decide(mode: str, model: StageModel, config: AdmissionConfig, **kwargs: Any) -> Any:
    events: list[AdmissionEvent] = []
    admitter = ConMemAdmitter(model, config, listener=events.append, **kwargs)
    if mode == "sync":
        decision = admitter.decide(CANDIDATE, CONTEXT, candidate_id="c1")
    else:
        decision = asyncio.run(admitter.adecide(CANDIDATE, CONTEXT, candidate_id="c1"))
    return decision, events


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_both_paths_make_the_same_calls_events_and_decision(scenario: str) -> None:
    model_args, config_args = SCENARIOS[scenario]
    seen = {}
    for mode in ("sync", "async"):
        model = StageModel(**model_args)
        decision, events = _decide(mode, model, AdmissionConfig(**config_args))
        seen[mode] = (_comparable(decision), events, Counter(model.calls))
    assert seen["sync"][0] == seen["async"][0]
    assert seen["sync"][1] == seen["async"][1]  # same events, same order
    assert seen["sync"][2] == seen["async"][2]  # same prompts, as often


def test_both_paths_refuse_an_invalid_candidate_before_any_call() -> None:
    model = StageModel()
    admitter = ConMemAdmitter(model)
    with pytest.raises(InvalidCandidateError) as sync_error:
        admitter.decide("   ", CONTEXT)
    with pytest.raises(InvalidCandidateError) as async_error:
        asyncio.run(admitter.adecide("   ", CONTEXT))
    assert str(sync_error.value) == str(async_error.value) and model.calls == []


class _SpyIndex:
    """The ledger's harm index, logging the thread of each lookup."""

    def __init__(self, ledger: HarmLedger) -> None:
        self.index = LedgerHarmIndex(ledger)
        self.threads: list[int] = []

    def known_harm(self, candidate: str, candidate_id: str | None = None) -> Any:
        self.threads.append(threading.get_ident())
        return self.index.known_harm(candidate, candidate_id)


@pytest.mark.parametrize(
    ("candidate", "config_args"),
    [
        (HARMFUL, {}),  # rejected with the ledger's evidence, no model call
        ("User is allergic to the peanuts!", {}),  # flagged, then decided by ConMem
        ("User is allergic to the peanuts!", {"on_near_duplicate_harm": "reject"}),
    ],
)
def test_both_paths_read_the_ledger_alike(
    tmp_path: Path, candidate: str, config_args: dict[str, Any]
) -> None:
    with HarmLedger(tmp_path / "ledger.db") as ledger:
        ctx = [
            Memory(id="good", content="User cooks Thai food."),
            Memory(id="bad", content=HARMFUL),
        ]
        report = clear(ctx, gold={"good"}, faults={"bad"})
        ledger.record(report, query="What can I cook?", context=ctx, success_signal="reference")
        seen = {}
        for mode in ("sync", "async"):
            model, index = StageModel(), _SpyIndex(ledger)
            admitter = ConMemAdmitter(model, AdmissionConfig(**config_args), harm_index=index)
            if mode == "sync":
                decision = admitter.decide(candidate, CONTEXT)
            else:
                decision = asyncio.run(admitter.adecide(candidate, CONTEXT))
            seen[mode] = (_comparable(decision), Counter(model.calls), index.threads)
    assert seen["sync"][:2] == seen["async"][:2]
    assert seen["sync"][2] == [threading.get_ident()]
    assert len(seen["async"][2]) == 1 and seen["async"][2][0] != threading.get_ident()
