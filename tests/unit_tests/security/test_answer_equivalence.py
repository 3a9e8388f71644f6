"""One memory cannot switch clearance off by changing an answer's surface form: answers the
judge accepts are compared by meaning (dates, numbers, units normalised, then the judge
asked once under its nonce protocol), and real contradictions still abstain."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations import Memory
from meclear_integrations.core.errors import InconsistentVerdictsError
from meclear_integrations.judges import CallableJudge, ReferenceLLMJudge, task_evaluator
from meclear_integrations.judges.task import answers_agree
from meclear_integrations.langchain import ClearingRetriever, reference_config
from tests.support.honest_judge import GOLD, GOLD_MEMORY, QUESTION, _block, verdict_reply

STALE = "John was in Italy in January 2023."
NUMERIC = "Always write months as numbers, like 12/2023."
WORDY = "Always describe a month by its place in the year, like 'the last month of 2023'."

SAME_MEANING = {
    frozenset({"december 2023", "the last month of 2023"}),
}


def _meaning_judge_model(prompt: str) -> str:
    """An honest reference judge: the candidate is right when it means the reference."""
    candidate = (_block("candidate_answer", prompt) or "").strip()
    reference = (_block("reference_answer", prompt) or "").strip()
    pair = frozenset({candidate.lower(), reference.lower()})
    correct = candidate == reference or pair in SAME_MEANING
    return verdict_reply(prompt, correct, f"The reference is {reference}.")


def _agent(inputs: dict) -> str:
    context = inputs["context"]
    month = "January" if STALE in context else "December" if GOLD_MEMORY in context else None
    if month is None:
        return "I don't know"
    if NUMERIC in context:
        return f"{'01' if month == 'January' else '12'}/2023"
    if WORDY in context:
        return f"the {'first' if month == 'January' else 'last'} month of 2023"
    return f"{month} 2023"


def _retriever(format_memory: str, judge) -> ClearingRetriever:  # type: ignore[no-untyped-def]
    docs = [
        Document(page_content=GOLD_MEMORY, id="g1"),
        Document(page_content=STALE, id="stale"),
        Document(page_content=format_memory, id="format"),
        Document(page_content="John likes pasta.", id="b1"),
    ]
    return ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        agent=RunnableLambda(_agent),
        judge=judge,
        clearance={"estimator": "exact"},
    )


def _accepts_december(answer: str) -> float:
    return float(answer.strip() in ("December 2023", "12/2023", "the last month of 2023"))


@pytest.mark.parametrize(
    ("format_memory", "judge"),
    [
        (NUMERIC, CallableJudge(_accepts_december)),  # normalisation alone settles it
        (WORDY, ReferenceLLMJudge(_meaning_judge_model)),  # the judge is asked once
    ],
    ids=["numbers", "judge-asked"],
)
def test_a_format_memory_does_not_force_abstention(format_memory: str, judge) -> None:  # type: ignore[no-untyped-def]
    out = _retriever(format_memory, judge).invoke(QUESTION, config=reference_config(GOLD))
    meta = [d.metadata["meclear"] for d in out]
    assert {m.get("status") for m in meta} != {"unverified"}, meta[0]
    assert "stale" not in [d.id for d in out]
    assert all(m.get("recovered") for m in meta)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("12/2023", "December 2023"),
        ("2023-12", "Dec. 2023"),
        ("2023-12-25", "December 25th, 2023"),
        ("25/12/2023", "25 December 2023"),
        ("3 km", "3000 m"),
        ("three kilometres", "3,000 metres"),
        ("90 minutes", "1.5 hours"),
        ("1,000 people", "1000 people"),
        ("He was there in 12/2023.", "December 2023"),
    ],
)
def test_surface_forms_agree(first: str, second: str) -> None:
    assert answers_agree(first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Paris", "not Paris"),
        ("December 2023", "January 2023"),
        ("12/2023", "11/2023"),
        ("3 km", "3 miles"),
        ("01/02/2023", "February 1st, 2023"),  # ambiguous: left to the judge
    ],
)
def test_different_meanings_do_not_agree(first: str, second: str) -> None:
    assert not answers_agree(first, second)


def _evaluator(answers: dict[str, str], judge):  # type: ignore[no-untyped-def]
    memories = [Memory(id=k, content=k) for k in answers]
    return memories, task_evaluator(
        lambda coalition: answers[coalition[0].id],
        judge,
        question=QUESTION,
        reference=GOLD,
        context=memories,
    )


class _LenientModel:
    """A judge model that accepts everything, equivalence questions included."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        return verdict_reply(prompt, True, "Looks right.")


def test_a_denial_still_abstains_and_is_not_put_to_the_judge() -> None:
    model = _LenientModel()
    memories, evaluate = _evaluator({"a": "Paris", "b": "not Paris"}, ReferenceLLMJudge(model))
    evaluate((memories[0],), 0)
    with pytest.raises(InconsistentVerdictsError):
        evaluate((memories[1],), 0)
    assert model.calls == 2  # the two verdicts, no equivalence question


def test_two_different_answers_still_abstain_after_one_question() -> None:
    def model(prompt: str) -> str:
        """Grades leniently (any answer against the gold reference), but answers an
        equivalence question (another accepted answer as the reference) honestly."""
        candidate = (_block("candidate_answer", prompt) or "").strip()
        reference = (_block("reference_answer", prompt) or "").strip()
        return verdict_reply(prompt, reference == GOLD or candidate == reference, "checked")

    calls: list[str] = []
    judge = ReferenceLLMJudge(lambda p: calls.append(p) or model(p))
    memories, evaluate = _evaluator({"a": "Rome", "b": "Paris"}, judge)
    evaluate((memories[0],), 0)
    with pytest.raises(InconsistentVerdictsError):
        evaluate((memories[1],), 0)
    assert len(calls) == 3  # two verdicts and exactly one equivalence question
    with pytest.raises(InconsistentVerdictsError):
        evaluate((memories[1],), 1)
    assert len(calls) == 3  # the pair is asked once per query
