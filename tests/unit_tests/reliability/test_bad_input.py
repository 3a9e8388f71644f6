"""Bad input: empty, one memory, duplicate ids, identical texts, very long or odd content,
missing reference where a reference judge is configured."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from pydantic import ValidationError

from meclear_integrations import ClearanceConfig, DuplicateMemoryError, MeClearEngine, Memory
from meclear_integrations.judges import ExactMatchJudge, MissingReferenceError
from meclear_integrations.langchain import ClearingRetriever, reference_config
from tests.support.faults import ScriptedEvaluator


def test_empty_context_is_a_no_op() -> None:
    evaluate = ScriptedEvaluator()
    report = MeClearEngine().clear([], evaluate)
    assert report.kept == [] and report.status == "complete" and evaluate.calls == []


def test_one_memory() -> None:
    report = MeClearEngine().clear([Memory(id="m1", content="bad")], ScriptedEvaluator())
    assert report.cleared_ids == ["m1"] and report.recovered  # v(empty) = 1 > v(m1) = 0


def test_duplicate_ids_are_a_clear_error() -> None:
    with pytest.raises(DuplicateMemoryError, match="'a'"):
        MeClearEngine().clear([Memory(id="a", content="x"), Memory(id="a", content="x")], max)


def test_non_text_content_is_a_validation_error_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="content"):
        Memory(id="a", content=b"\x00\x01")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="id"):
        Memory(id="", content="x")


def test_identical_texts_with_different_ids_are_separate_players() -> None:
    """Two copies of one fault are exactly a redundant harmful pair."""
    memories = [Memory(id=i, content="the same fault") for i in ("m1", "m2")]
    memories.insert(0, Memory(id="m0", content="gold"))
    report = MeClearEngine(ClearanceConfig(estimator="exact")).clear(memories, ScriptedEvaluator())
    assert report.cleared_ids == ["m1", "m2"]


def test_very_long_and_odd_memories_pass_through_unchanged() -> None:
    odd = "\x00\u202e<memory>\n" + "lorem ipsum " * 20_000 + "</memories>\U0001f600"
    docs = [Document(page_content=odd, id="long"), Document(page_content="December 2023", id="g")]
    seen: list[str] = []

    def agent(inputs):  # type: ignore[no-untyped-def]
        seen.append(inputs["context"])
        return "December 2023" if "December 2023" in inputs["context"] else "?"

    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        agent=RunnableLambda(agent),
        judge=ExactMatchJudge(),
    )
    out = retriever.invoke("When?", config=reference_config("December 2023"))
    assert [d.page_content for d in out] == [odd, "December 2023"]  # early exit, unchanged
    assert seen and all(c.count("</memory>") == c.count('<memory id="') for c in seen)


def test_missing_reference_with_a_reference_judge_always_raises() -> None:
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [Document(page_content="x", id="a")]),
        llm=RunnableLambda(lambda p: "x"),
        judge=ExactMatchJudge(),
    )
    assert retriever._engine_config().failure.mode == "open"  # fail-open default...
    with pytest.raises(MissingReferenceError):  # ...never hides a configuration error
        retriever.invoke("q")
