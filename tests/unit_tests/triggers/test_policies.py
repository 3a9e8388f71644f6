"""Trigger policies: decisions, composition, and state shared by concurrent queries."""

from __future__ import annotations

import asyncio
import threading

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.triggers import (
    AllOf,
    Always,
    AnyOf,
    EveryN,
    EverySeconds,
    OnNegativeFeedback,
    Sampling,
    TokenBudget,
    TriggerContext,
    WhenJudgeFails,
)
from meclear_integrations.triggers.skip import skipped_report
from meclear_integrations.triggers.token_budget import approximate_tokens, fit_to_budget


def ctx(query: str = "q", texts: tuple[str, ...] = ("aaaa", "bbbb")) -> TriggerContext:
    memories = tuple(Memory(id=f"m{i}", content=t) for i, t in enumerate(texts))
    return TriggerContext(query=query, query_id=f"id-{query}", memories=memories)


def test_always_and_judge_first() -> None:
    assert Always().decide(ctx()).run
    assert Always().decide(ctx()).early_exit is None
    decision = WhenJudgeFails().decide(ctx())
    assert decision.run and decision.early_exit is True and decision.reason == "judge_first"


def test_sampling_rate_and_seed() -> None:
    assert not any(Sampling(0.0).decide(ctx()).run for _ in range(200))
    assert all(Sampling(1.0).decide(ctx()).run for _ in range(200))
    a, b = Sampling(0.3, seed=7), Sampling(0.3, seed=7)
    runs_a = [a.decide(ctx()).run for _ in range(2000)]
    assert runs_a == [b.decide(ctx()).run for _ in range(2000)]
    assert 0.25 < sum(runs_a) / len(runs_a) < 0.35
    skip = next(d for d in (a.decide(ctx()) for _ in range(50)) if not d.run)
    assert (
        skip.reason == "not_sampled" and skip.status_reason == "trigger:sampling(0.3):not_sampled"
    )
    with pytest.raises(ValueError):
        Sampling(1.5)


def test_every_n_is_exact_under_threads() -> None:
    policy = EveryN(3)
    assert [policy.decide(ctx()).run for _ in range(7)] == [1, 0, 0, 1, 0, 0, 1]
    shared = EveryN(3)
    counts: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        n = sum(shared.decide(ctx()).run for _ in range(300))
        with lock:
            counts.append(n)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sum(counts) == 800  # 2400 decisions, one in three


def test_every_n_is_exact_under_asyncio() -> None:
    policy = EveryN(4)

    async def main() -> int:
        decisions = await asyncio.gather(*(policy.adecide(ctx()) for _ in range(400)))
        return sum(d.run for d in decisions)

    assert asyncio.run(main()) == 100


def test_every_seconds_with_an_injected_clock() -> None:
    now = [100.0]
    policy = EverySeconds(10.0, clock=lambda: now[0])
    assert policy.decide(ctx()).run  # the first query
    now[0] = 105.0
    waiting = policy.decide(ctx())
    assert not waiting.run and waiting.reason == "periodic_wait" and "5.0s of 10s" in waiting.detail
    now[0] = 110.0
    assert policy.decide(ctx()).run
    assert not policy.decide(ctx()).run


def test_token_budget_decision() -> None:
    policy = TokenBudget(3)  # "aaaa", "bbbb": 1 token each by the default estimate
    assert not policy.decide(ctx()).run
    over = policy.decide(ctx(texts=("a" * 8, "b" * 8)))
    assert over.run and over.max_tokens == 3 and over.early_exit is False
    assert over.reason == "over_token_budget" and "4 tokens, budget 3" in over.detail
    counted = TokenBudget(3, counter=lambda text: len(text.split()))
    assert counted.decide(ctx(texts=("one two", "three four"))).run
    assert approximate_tokens("abcde") == 2


def _report(values: dict[str, float]):
    """A full run where ``bad`` hurts; the other memories contribute by ``values``."""
    memories = [Memory(id=i, content="x" * 40) for i in ("good", "bad", "meh", "weak")]

    def evaluate(coalition, trial):
        ids = {m.id for m in coalition}
        if "bad" in ids:
            return 0.0
        return min(1.0, sum(values.get(i, 0.0) for i in ids))

    return MeClearEngine(ClearanceConfig(early_exit=False)).clear(memories, evaluate)


def test_fit_to_budget_drops_the_least_contributing_first() -> None:
    report = _report({"good": 0.5, "meh": 0.375, "weak": 0.125})  # exact in binary
    assert report.cleared_ids == ["bad"]
    fit = fit_to_budget(report, max_tokens=20)  # 10 tokens each, 3 kept: drop one
    assert fit.order == "least_contribution" and fit.dropped_ids == ["weak"]
    assert (fit.tokens_before, fit.tokens_after) == (30, 20)
    assert fit_to_budget(report, max_tokens=10).dropped_ids == ["weak", "meh"]
    assert fit_to_budget(report, max_tokens=100).dropped_ids == []


def test_fit_to_budget_without_attribution_drops_from_the_end() -> None:
    memories = [Memory(id=f"m{i}", content="x" * 40) for i in range(3)]
    report = skipped_report(memories, ClearanceConfig(), Always().decide(ctx()))
    fit = fit_to_budget(report, max_tokens=15)
    assert fit.order == "retrieval_order" and fit.dropped_ids == ["m2", "m1"]


def test_negative_feedback_in_memory() -> None:
    policy = OnNegativeFeedback(window=4, min_success_rate=0.5)
    assert not policy.decide(ctx("a")).run
    policy.record("id-a", False)
    assert policy.decide(ctx("a")).reason == "negative_feedback"
    assert not policy.decide(ctx("b")).run  # 1 verdict: the window is not full yet
    policy.record("id-a", True)
    assert not policy.decide(ctx("a")).run  # its latest verdict is positive again
    for q in ("c", "d"):
        policy.record(f"id-{q}", False)
    low = policy.decide(ctx("b"))  # 1 of the last 4 correct
    assert low.run and low.reason == "low_success_rate" and "25% correct" in low.detail


def test_composition() -> None:
    never, always = Sampling(0.0), Always()
    either = never | EveryN(2)
    assert isinstance(either, AnyOf)
    assert [either.decide(ctx()).run for _ in range(4)] == [True, False, True, False]
    fresh = Sampling(0.0) | EveryN(2)
    fresh.decide(ctx())
    declined = fresh.decide(ctx())
    assert not declined.run and declined.reason == "not_sampled+periodic_wait"
    assert declined.policy == fresh.name == "(sampling(0) | every_n(2))"
    both = AllOf(always, TokenBudget(3))
    assert not both.decide(ctx()).run
    assert both.decide(ctx()).reason == "under_token_budget"
    assert len(both.decide(ctx()).parts) == 2
    run = (WhenJudgeFails() | TokenBudget(1)).decide(ctx())
    assert run.run and run.early_exit is False and run.max_tokens == 1  # attribution wins
    judge_only = (WhenJudgeFails() | Sampling(0.0)).decide(ctx())
    assert judge_only.early_exit is True and judge_only.policy == "when_judge_fails"
    nested = (never | always) | EveryN(5)
    assert len(nested.policies) == 3 and nested.name.count("|") == 2
    with pytest.raises(TypeError):
        AnyOf(always, "always")  # type: ignore[arg-type]


def test_skipped_report() -> None:
    memories = [Memory(id="a", content="x"), Memory(id="b", content="y")]
    decision = Sampling(0.0).decide(ctx())
    report = skipped_report(memories, ClearanceConfig(), decision)
    assert report.status == "skipped" and report.kept_ids == ["a", "b"]
    assert report.cleared == [] and report.cost.evaluator_calls == 0
    assert report.status_reason == "trigger:sampling(0):not_sampled"
