"""Independent calls run concurrently (async and threaded sync), bounded by max_concurrency."""

from __future__ import annotations

import json
from typing import Any

import pytest

from meclear_integrations.admission import (
    AdmissionConfig,
    AdmissionHook,
    ConMemAdmitter,
    FunctionTextModel,
)
from meclear_integrations.admission.decision import AdmissionFailedError
from meclear_integrations.admission.engine import AdmissionRequest
from meclear_integrations.admission.hook import admits
from tests.support.stage_models import Script, StageModel

CANDIDATE, CONTEXT = "User lives in Lyon.", "user: I moved to Lyon last year, love it here."


async def test_async_runs_the_six_independent_calls_at_once() -> None:
    model = StageModel(delay=0.02)
    d = await ConMemAdmitter(model).adecide(CANDIDATE, CONTEXT)
    assert d.ok and model.max_in_flight == 6
    stages = model.stages()
    # every response precedes every judge/auditor call: stages are barriers
    assert max(i for i, s in enumerate(stages) if s == "respond") < min(
        i for i, s in enumerate(stages) if s in ("judge", "audit")
    )
    # the run takes a fraction of its calls' summed latency (in sequence: all of it); a ratio
    # of the same run, which a loaded machine stretches alike
    assert d.cost.latency_seconds > 14 * 0.02
    assert d.cost.wall_seconds < d.cost.latency_seconds / 2


async def test_async_concurrency_is_bounded() -> None:
    model = StageModel(delay=0.01)
    d = await ConMemAdmitter(model, AdmissionConfig(max_concurrency=2)).adecide(CANDIDATE, CONTEXT)
    assert d.ok and model.max_in_flight == 2


def test_sync_path_uses_threads_for_independent_calls() -> None:
    model = StageModel(delay=0.02)
    assert ConMemAdmitter(model).decide(CANDIDATE, CONTEXT).ok
    assert model.max_in_flight == 6
    serial = StageModel(delay=0.0)
    assert ConMemAdmitter(serial, AdmissionConfig(max_concurrency=1)).decide(CANDIDATE, CONTEXT).ok
    assert serial.max_in_flight == 1


async def test_many_candidates_run_concurrently_and_keep_order() -> None:
    model = StageModel(delay=0.01)
    reqs = [AdmissionRequest(f"{CANDIDATE} {i}", CONTEXT, candidate_id=str(i)) for i in range(3)]
    out = await ConMemAdmitter(model).adecide_many(reqs, max_concurrent_candidates=3)
    assert [d.candidate_id for d in out] == ["0", "1", "2"]
    assert model.max_in_flight == 18


def test_sync_and_async_agree() -> None:
    import asyncio

    script = Script(labels={"relevant": "utility", "irrelevant": "unnecessary", "risk": "risk"})
    a = ConMemAdmitter(StageModel(script)).decide(CANDIDATE, CONTEXT)
    b = asyncio.run(ConMemAdmitter(StageModel(script)).adecide(CANDIDATE, CONTEXT))
    assert (a.decision, a.cmte, [p.contribution for p in a.probes]) == (
        b.decision,
        b.cmte,
        [p.contribution for p in b.probes],
    )


class StructuredModel(StageModel):
    """Offers complete_json: structured stages must use it, with the stage's JSON schema."""

    def __init__(self) -> None:
        super().__init__()
        self.schemas: list[dict[str, Any]] = []
        self.plain: list[str] = []

    def complete(self, prompt: str) -> str:
        self.plain.append(prompt.split("\n", 1)[0])
        return super().complete(prompt)

    def complete_json(self, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        self.schemas.append(schema)
        return json.loads(super().complete(prompt))

    async def acomplete_json(self, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        self.schemas.append(schema)
        return json.loads(await super().acomplete(prompt))


def test_structured_output_is_used_where_available() -> None:
    model = StructuredModel()
    d = ConMemAdmitter(model).decide(CANDIDATE, CONTEXT)
    assert d.ok
    # Only the six free-text responses go through complete(); 8 structured calls do not.
    assert model.plain == ["# Task: answer the current request"] * 6
    assert len(model.schemas) == 8
    titles = {s["title"] for s in model.schemas}
    assert titles == {"ProbeSetOutput", "ProbeAuditOutput", "JudgeOutput", "AuditOutput"}
    plain = StructuredModel()
    ConMemAdmitter(plain, AdmissionConfig(use_structured_output=False)).decide(CANDIDATE, CONTEXT)
    assert plain.schemas == []


def test_function_models_work_on_both_paths() -> None:
    model = StageModel()
    admitter = ConMemAdmitter(model.complete)  # a plain function prompt -> str
    assert isinstance(admitter.model, FunctionTextModel)
    assert admitter.decide(CANDIDATE, CONTEXT).ok

    async def afn(prompt: str) -> str:
        return await model.acomplete(prompt)

    assert ConMemAdmitter(afn).decide(CANDIDATE, CONTEXT).ok


# ---------------------------------------------------------------- before_write hook
def test_before_write_returns_a_unit_score_and_the_decision() -> None:
    hook = AdmissionHook(ConMemAdmitter(StageModel()))
    score, decision = hook.before_write(CANDIDATE, [{"role": "user", "content": "I moved"}])
    assert decision.decision == "store" and 0.5 < score <= 1.0
    assert hook.should_store(decision)
    reject = Script(labels={"relevant": "risk", "irrelevant": "neutral", "risk": "neutral"})
    score, decision = AdmissionHook(ConMemAdmitter(StageModel(reject))).before_write(
        CANDIDATE, CONTEXT
    )
    assert decision.decision == "do_not_store" and 0.0 <= score < 0.5


@pytest.mark.parametrize(
    ("policy", "score", "stored"), [("reject", 0.0, False), ("admit", 1.0, True)]
)
def test_failed_decisions_follow_the_on_error_policy(policy, score, stored) -> None:
    model = StageModel(overrides={"judge": lambda p: "??"})
    hook = AdmissionHook(ConMemAdmitter(model), on_error=policy)
    got, decision = hook.before_write(CANDIDATE, CONTEXT)
    assert decision.error is not None and got == score
    assert admits(decision, policy) is stored


async def test_raise_policy_raises_with_the_partial_decision() -> None:
    model = StageModel(overrides={"judge": lambda p: "??"})
    hook = AdmissionHook(ConMemAdmitter(model), on_error="raise")
    with pytest.raises(AdmissionFailedError) as info:
        await hook.abefore_write(CANDIDATE, CONTEXT, candidate_id="m9")
    assert info.value.decision.error.stage == "judge" and "m9" in str(info.value)
