"""The neutral evaluator composer drives the engine end to end."""

from __future__ import annotations

import pytest

from meclear_integrations import ClearanceConfig, EvaluatorError, MeClearEngine, Memory
from meclear_integrations.judges import (
    AsyncTaskEvaluator,
    BaseJudge,
    ExactMatchJudge,
    JudgeVerdict,
    MissingReferenceError,
    ReferenceFreeLLMJudge,
    ReferenceLLMJudge,
    TaskEvaluator,
    task_evaluator,
)
from meclear_integrations.judges.answer_prompts import format_answer_prompt
from meclear_integrations.judges.task import answers_agree
from meclear_integrations.simulation import TextReader, redundant_harm_example
from tests.support.text_models import ScriptedTextModel

CONFIG = ClearanceConfig(estimator="exact", trials=2)


def reader_answer():
    case = redundant_harm_example()
    reader = TextReader(case.world, case.texts, case_id=case.case_id)
    return case, lambda coalition: reader.answer(format_answer_prompt(case.query, coalition))


def test_sync_composer_clears_the_redundant_faults() -> None:
    case, answer = reader_answer()
    evaluate = task_evaluator(
        answer, ExactMatchJudge(), question=case.query, reference=case.reference
    )
    assert isinstance(evaluate, TaskEvaluator)
    report = MeClearEngine(CONFIG).clear(case.memories, evaluate)
    assert report.cleared_ids == ["f1", "f2"] and report.recovered
    assert len(evaluate.records) == report.cost.evaluator_calls
    full = next(r for r in evaluate.records if len(r.memory_ids) == 6)
    assert full.answer == "January 2023" and full.verdict.score == 0.0


async def test_async_composer_with_async_answer() -> None:
    case, answer = reader_answer()

    async def aanswer(coalition):
        return answer(coalition)

    evaluate = task_evaluator(
        aanswer, ExactMatchJudge(), question=case.query, reference=case.reference
    )
    assert isinstance(evaluate, AsyncTaskEvaluator)
    report = await MeClearEngine(CONFIG).aclear(case.memories, evaluate)
    assert report.cleared_ids == ["f1", "f2"]


def test_llm_judge_failure_surfaces_as_evaluator_error() -> None:
    case, answer = reader_answer()
    judge = ReferenceLLMJudge(ScriptedTextModel("hmm, hard to say"))
    evaluate = task_evaluator(answer, judge, question=case.query, reference=case.reference)
    with pytest.raises(EvaluatorError) as info:
        fast_closed = {"mode": "closed", "retry": {"initial_backoff": 0.0, "jitter": 0.0}}
        MeClearEngine(CONFIG.updated(failure=fast_closed)).clear(case.memories, evaluate)
    assert "VerdictParseError" in str(info.value)


def test_reference_requirement_checked_up_front() -> None:
    with pytest.raises(MissingReferenceError):
        task_evaluator(lambda c: "x", ExactMatchJudge(), question="q")


def test_judge_context_full_shows_every_memory() -> None:
    case, answer = reader_answer()
    model = ScriptedTextModel("VERDICT {nonce}: CORRECT")
    evaluate = task_evaluator(
        answer,
        ReferenceFreeLLMJudge(model),
        question=case.query,
        judge_context="full",
        context=case.memories,
    )
    evaluate((case.memories[0],), 0)
    assert all(f'<memory id="{m.id}">' in model.prompts[0] for m in case.memories)
    with pytest.raises(ValueError):
        task_evaluator(answer, ExactMatchJudge(), question="q", reference="r", judge_context="full")


def test_answer_must_be_text() -> None:
    evaluate = task_evaluator(lambda c: 42, ExactMatchJudge(), question="q", reference="r")
    with pytest.raises(TypeError):
        evaluate((), 0)


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("<answer>\nBerlin", 1.0),  # SmolLM2-135M continues the prompt's tag pattern
        ("  <ANSWER>Berlin</answer> ", 1.0),
        ("Berlin <answer>", 0.0),  # only a leading tag is the model's echo
    ],
)
def test_an_echoed_answer_tag_is_not_part_of_the_answer(reply: str, score: float) -> None:
    evaluate = task_evaluator(lambda c: reply, ExactMatchJudge(), question="q", reference="Berlin")
    assert evaluate((), 0) == score


@pytest.mark.parametrize(
    ("first", "second", "agree"),
    [
        ("December 2023", "John was in Italy in December 2023.", True),
        ("Paris", "the Paris", True),
        ("Paris", "Not Paris.", False),
        ("Not Paris", "Paris", False),
        ("He moved to Berlin", "He never moved to Berlin", False),
        ("Italy", "John didn't go to Italy", False),
        ("not Paris", "John is not in Paris", True),
        ("Paris", "Rome", False),
        ("", "Paris", False),
    ],
)
def test_answers_agree_unless_one_denies_the_other(first: str, second: str, agree: bool) -> None:
    assert answers_agree(first, second) is agree
    assert answers_agree(second, first) is agree


class _AcceptsEverything(BaseJudge):
    def score(self, question, answer, *, reference=None, context=None) -> JudgeVerdict:
        return JudgeVerdict(score=1.0, parsed_by="rule")


def test_a_judge_accepting_an_answer_and_its_denial_makes_the_run_abstain() -> None:
    memories = [Memory(id="a", content="Alice lives in Paris."), Memory(id="b", content="x")]

    def answer(coalition) -> str:
        return "Paris" if any(m.id == "a" for m in coalition) else "not Paris"

    evaluate = task_evaluator(
        answer, _AcceptsEverything(), question="Where does Alice live?", context=memories
    )
    config = ClearanceConfig(estimator="exact", trials=1, early_exit=False)
    report = MeClearEngine(config).clear(memories, evaluate)
    assert report.status == "unverified" and report.status_reason == "accepted_two_answers"
    assert report.kept_ids == ["a", "b"]
