"""Scores are finite real numbers in [0, 1] or an evaluator failure; unusable documents from
the inner retriever fail open or raise per ``on_failure``; reports serialise any metadata."""

from __future__ import annotations

import datetime
import fractions
import json

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core import ScoreOutOfRangeError
from meclear_integrations.judges import ExactMatchJudge
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.llama_index import MeClearPostprocessor


def _memories() -> list[Memory]:
    return [Memory(id="a", content="x"), Memory(id="b", content="y")]


BAD = [10**400, "0.5", "1", True, float("nan"), float("inf"), -0.1, 1.5, None, [1.0]]


@pytest.mark.parametrize("score", BAD, ids=lambda s: f"{type(s).__name__}:{str(s)[:12]}")
def test_bad_scores_fail_open_with_the_reason(score: object) -> None:
    report = MeClearEngine().clear(_memories(), lambda c, t: score)
    assert report.failed and report.failure.reason == "invalid_score"
    assert report.kept_ids == ["a", "b"]


@pytest.mark.parametrize("score", [10**400, "0.5"], ids=["10**400", "str"])
def test_bad_scores_fail_closed_as_score_errors(score: object) -> None:
    with pytest.raises(ScoreOutOfRangeError):
        MeClearEngine(ClearanceConfig(failure={"mode": "closed"})).clear(
            _memories(), lambda c, t: score
        )


@pytest.mark.parametrize(
    "score", [0, 1, 0.25, np.float32(0.5), np.float64(1.0), np.int64(0), fractions.Fraction(1, 2)]
)
def test_real_numbers_in_range_are_accepted(score: object) -> None:
    report = MeClearEngine().clear(_memories(), lambda c, t: score)
    assert report.status == "complete"


def _bad_documents() -> list[object]:
    broken = Document.model_construct(page_content=None, metadata={}, id="broken")
    return [Document(page_content="John was in Italy.", id="ok"), broken, "a plain string"]


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_langchain_unusable_documents_fail_open_unchanged(asynchronous: bool) -> None:
    items = _bad_documents()
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: items),
        llm=RunnableLambda(lambda p: "x"),
        judge=ExactMatchJudge(),
    )
    config = reference_config("x")
    out = (
        await retriever.ainvoke("q", config=config)
        if asynchronous
        else retriever.invoke("q", config=config)
    )
    assert len(out) == 3 and out[1] is items[1] and out[2] == "a plain string"
    failure = out[0].metadata["meclear"]["failure"]
    assert failure["error_type"] == "InvalidRetrievalError" and "position 1" in failure["error"]


def test_langchain_unusable_documents_raise_when_asked() -> None:
    from meclear_integrations.core import InvalidRetrievalError

    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: _bad_documents()),
        llm=RunnableLambda(lambda p: "x"),
        judge=ExactMatchJudge(),
        on_failure="closed",
    )
    with pytest.raises(InvalidRetrievalError, match="position 1"):
        retriever.invoke("q", config=reference_config("x"))


def _bad_nodes() -> list[object]:
    broken = NodeWithScore.model_construct(node=TextNode.model_construct(text=None, id_="b"))
    return [NodeWithScore(node=TextNode(id_="ok", text="John was in Italy.")), broken, "text"]


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_llama_index_unusable_nodes_fail_open_unchanged(asynchronous: bool) -> None:
    items = _bad_nodes()
    postprocessor = MeClearPostprocessor(llm=MockLLM(), judge=ExactMatchJudge(), reference="x")
    out = (
        await postprocessor.aclear_nodes(items, "q")  # type: ignore[arg-type]
        if asynchronous
        else postprocessor.clear_nodes(items, "q")  # type: ignore[arg-type]
    )
    assert len(out.nodes) == 3 and out.nodes[1] is items[1] and out.nodes[2] == "text"
    assert "InvalidRetrievalError" in (out.error or "")
    from meclear_integrations.core import InvalidRetrievalError

    with pytest.raises(InvalidRetrievalError):
        postprocessor.model_copy(update={"on_failure": "closed"}).clear_nodes(items, "q")  # type: ignore[arg-type]


def test_reports_serialise_any_metadata() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque"

    cycle: list[object] = []
    cycle.append(cycle)
    memories = [
        Memory(
            id="a",
            content="x",
            metadata={
                "when": datetime.datetime(2023, 12, 1),
                "tags": {"a"},
                "obj": Opaque(),
                "cycle": cycle,
                "nan": float("nan"),
            },
        ),
        Memory(id="b", content="y"),
    ]
    report = MeClearEngine().clear(memories, lambda c, t: 1.0)
    data = json.loads(report.model_dump_json())
    meta = data["kept"][0]["metadata"]
    assert meta["when"] == "2023-12-01T00:00:00" and meta["obj"] == "opaque"
    assert meta["tags"] == ["a"] and isinstance(meta["cycle"], str)
    assert report.kept[0].metadata["obj"].__class__ is Opaque  # the report keeps the objects


@pytest.mark.parametrize(
    "result", [10**400, float("nan"), "1", None], ids=["huge", "nan", "str", "none"]
)
def test_a_judge_function_returning_a_bad_number_is_a_judge_error(result: object) -> None:
    from meclear_integrations.judges import CallableJudge, JudgeError

    with pytest.raises(JudgeError):
        CallableJudge(lambda answer: result).score("q", "a")
    assert CallableJudge(lambda answer: np.float32(0.5)).score("q", "a").score == 0.5
