"""Cost controls: irrelevant probe on demand, fixed zero-score rule, prompt deduplication."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from meclear_integrations.admission import AdmissionConfig, ConMemAdmitter
from meclear_integrations.admission.config import cheap_config
from meclear_integrations.admission.dedup import DedupTextModel
from tests.support.stage_models import Script, StageModel

CONTEXT = "user: I'm vegetarian, please never suggest meat dishes."
MEMORY = "User is vegetarian."


def _decide(script: Script, **cfg: object) -> tuple[object, StageModel]:
    model = StageModel(script)
    decision = ConMemAdmitter(model, AdmissionConfig(**cfg)).decide(MEMORY, CONTEXT)
    return decision, model


def test_if_open_skips_the_irrelevant_probe_only_when_the_sign_is_decided() -> None:
    # Risk probe harmful: -1.5 already; the irrelevant probe can only lower CMTE.
    harmful = Script(
        labels={"relevant": "neutral", "irrelevant": "neutral", "risk": "risk"},
        preferences={"relevant": "tie", "irrelevant": "tie", "risk": "control"},
    )
    full, full_model = _decide(harmful)
    early, early_model = _decide(harmful, irrelevant_probe="if_open")
    assert full.decision == early.decision == "do_not_store"
    assert full_model.count("respond") == 6 and early_model.count("respond") == 4
    assert early_model.count("judge") == 2 and early_model.count("audit") == 2
    assert early.cost.model_calls == full.cost.model_calls - 4
    assert [p.role for p in early.probes] == ["relevant", "irrelevant", "risk"]
    assert early.probes[1].audit is None  # skipped, recorded as such

    # Relevant helpful (+1): an irrelevant risk (-1) could cancel it, so it still runs.
    clean, clean_model = _decide(Script(), irrelevant_probe="if_open")
    assert clean.decision == "store"
    assert clean_model.count("respond") == 6


def test_if_uncertain_skips_the_irrelevant_probe_after_helpful_use() -> None:
    decision, model = _decide(Script(), irrelevant_probe="if_uncertain")
    assert decision.decision == "store"
    assert model.count("respond") == 4
    # ...but it would have caught unnecessary use: the preset is not decision-preserving.
    unnecessary = Script(
        labels={"relevant": "utility", "irrelevant": "risk", "risk": "neutral"},
        preferences={"relevant": "treatment", "irrelevant": "control", "risk": "tie"},
    )
    full, _ = _decide(unnecessary)
    cheap, _ = _decide(unnecessary, irrelevant_probe="if_uncertain")
    assert full.cmte == pytest.approx(0.0) and full.tie_break is not None
    assert cheap.cmte == pytest.approx(1 / 3) and cheap.tie_break is None


@pytest.mark.parametrize("fixed", ["store", "do_not_store"])
def test_fixed_zero_score_rule_calls_no_judge(fixed: str) -> None:
    zero = Script(labels={"relevant": "neutral", "irrelevant": "neutral", "risk": "neutral"})
    decision, model = _decide(zero, tie_break=fixed)
    assert decision.cmte == 0.0
    assert decision.decision == fixed
    assert model.count("tie_break") == 0
    judged, judged_model = _decide(zero)
    assert judged_model.count("tie_break") == 1
    assert "tie_break" not in decision.cost.calls_by_stage
    assert judged.cost.calls_by_stage["tie_break"] == 1


def test_cheap_config_is_the_documented_preset() -> None:
    cfg = cheap_config()
    assert cfg.irrelevant_probe == "if_uncertain"
    assert cfg.tie_break == "judge"  # a fixed do_not_store rejects what the default stores
    assert AdmissionConfig().irrelevant_probe == "always"
    assert AdmissionConfig().tie_break == "judge"


def test_dedup_answers_each_prompt_once_sync_and_threads() -> None:
    seen: list[str] = []
    lock = threading.Lock()

    def slow(prompt: str) -> str:
        time.sleep(0.05)
        with lock:
            seen.append(prompt)
        return prompt[::-1]

    model = DedupTextModel(slow)
    threads = [threading.Thread(target=model.complete, args=("same",)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == ["same"]
    assert model.complete("same") == "emas"
    assert model.misses == 1 and model.hits == 6
    model.complete("other")
    assert seen == ["same", "other"]


def test_dedup_shares_calls_in_flight_async_and_does_not_cache_errors() -> None:
    calls: list[str] = []
    fail = {"once": True}

    async def fn(prompt: str) -> str:
        calls.append(prompt)
        await asyncio.sleep(0.02)
        if prompt == "boom" and fail.pop("once", False):
            raise RuntimeError("provider down")
        return prompt.upper()

    model = DedupTextModel(fn)

    async def main() -> list[str]:
        return list(await asyncio.gather(*(model.acomplete("x") for _ in range(5))))

    assert asyncio.run(main()) == ["X"] * 5
    assert calls == ["x"]
    with pytest.raises(RuntimeError):
        asyncio.run(model.acomplete("boom"))
    assert asyncio.run(model.acomplete("boom")) == "BOOM"  # the failure was not cached
    assert calls.count("boom") == 2


def test_dedup_bounds_its_cache() -> None:
    model = DedupTextModel(lambda p: p, max_entries=2)
    for p in ("a", "b", "c", "a"):
        model.complete(p)
    assert model.misses == 4  # "a" was evicted by "c"
    with pytest.raises(ValueError):
        DedupTextModel(lambda p: p, max_entries=0)


def test_dedup_keeps_a_decision_identical() -> None:
    plain = ConMemAdmitter(StageModel()).decide(MEMORY, CONTEXT)
    deduped = ConMemAdmitter(DedupTextModel(StageModel())).decide(MEMORY, CONTEXT)
    assert json.dumps(plain.summary()) == json.dumps(deduped.summary())


def test_dedup_keeps_structured_output_and_keys_it_by_schema() -> None:
    from meclear_integrations.admission.model import supports_structured_output

    class Structured:
        calls = 0

        def complete(self, prompt: str) -> str:
            return prompt

        async def acomplete(self, prompt: str) -> str:
            return prompt

        def complete_json(self, prompt, schema):
            Structured.calls += 1
            return {"schema": schema["title"]}

        async def acomplete_json(self, prompt, schema):
            return self.complete_json(prompt, schema)

    model = DedupTextModel(Structured())
    assert supports_structured_output(model)
    assert not supports_structured_output(DedupTextModel(lambda p: p))
    a = model.complete_json("p", {"title": "A", "properties": {"x": {"type": "string"}}})
    b = model.complete_json("p", {"title": "B"})
    again = asyncio.run(
        model.acomplete_json("p", {"title": "A", "properties": {"x": {"type": "string"}}})
    )
    assert (a, b, again) == ({"schema": "A"}, {"schema": "B"}, {"schema": "A"})
    assert Structured.calls == 2
