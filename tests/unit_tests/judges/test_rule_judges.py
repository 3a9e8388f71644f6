"""Exact-match, token-F1 and callable judges."""

from __future__ import annotations

import pytest

from meclear_integrations import Memory
from meclear_integrations.judges import (
    CallableJudge,
    ExactMatchJudge,
    JudgeError,
    JudgeVerdict,
    MissingReferenceError,
    TokenF1Judge,
)
from meclear_integrations.judges.match import token_f1


def test_exact_match_normalises() -> None:
    judge = ExactMatchJudge()
    assert judge.score("q", "the December, 2023!", reference="December 2023").score == 1.0
    assert judge.score("q", "January 2023", reference="December 2023").score == 0.0
    assert judge.score("q", "In December 2023", reference="December 2023").score == 0.0


def test_contains_mode_respects_word_boundaries() -> None:
    judge = ExactMatchJudge(mode="contains")
    assert judge.score("q", "He was there in December 2023.", reference="December 2023").score == 1
    assert judge.score("q", "Paris", reference="par").score == 0.0
    assert judge.score("q", "anything", reference="the").score == 0.0  # empty after normalising


def test_rule_judges_need_a_reference() -> None:
    for judge in (ExactMatchJudge(), TokenF1Judge()):
        with pytest.raises(MissingReferenceError):
            judge.score("q", "a")


def test_token_f1_values() -> None:
    assert token_f1("December 2023", "December 2023") == 1.0
    assert token_f1("January 2023", "December 2023") == pytest.approx(0.5)
    assert token_f1("", "x") == 0.0
    strict = TokenF1Judge(threshold=0.6)
    assert strict.score("q", "January 2023", reference="December 2023").score == 0
    with pytest.raises(ValueError):
        TokenF1Judge(threshold=2.0)


async def test_rule_judges_async() -> None:
    verdict = await ExactMatchJudge().ascore("q", "December 2023", reference="december 2023")
    assert verdict.score == 1.0 and verdict.parsed_by == "rule"


def test_callable_gets_only_declared_arguments() -> None:
    seen = {}

    def fn(answer: str, context) -> bool:
        seen.update(answer=answer, context=context)
        return answer == "x"

    judge = CallableJudge(fn)
    memory = Memory(id="m", content="c")
    assert judge.score("q", "x", reference="r", context=[memory]).score == 1.0
    assert seen == {"answer": "x", "context": (memory,)}


async def test_async_callable_and_kwargs() -> None:
    async def fn(**kwargs) -> float:
        return 0.25 if kwargs["reference"] == "r" else 0.0

    judge = CallableJudge(fn)
    assert (await judge.ascore("q", "a", reference="r")).score == 0.25


def test_async_callable_on_the_sync_path() -> None:
    async def fn(answer: str) -> bool:
        return answer == "a"

    assert CallableJudge(fn).score("q", "a").score == 1.0


def test_callable_verdict_passthrough_and_bad_returns() -> None:
    verdict = JudgeVerdict(score=0.5, parsed_by="callable", reason="half")
    assert CallableJudge(lambda answer: verdict).score("q", "a") is verdict
    with pytest.raises(JudgeError):
        CallableJudge(lambda answer: 1.5).score("q", "a")
    with pytest.raises(JudgeError):
        CallableJudge(lambda answer: "yes").score("q", "a")
    with pytest.raises(TypeError):
        CallableJudge(lambda question: 1.0)
