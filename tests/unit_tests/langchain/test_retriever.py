"""ClearingRetriever behaviour on the simulated redundant-harm case."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from pydantic import Field

from meclear_integrations import ClearanceConfig, EvaluatorError
from meclear_integrations.judges import CallableJudge, ExactMatchJudge, MissingReferenceError
from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.runtime.payloads import EdgeCasePolicy, content_memory_id
from meclear_integrations.simulation import EvidenceWorld


def test_redundant_faults_cleared_and_order_kept(case, documents, inner, llm) -> None:
    retriever = ClearingRetriever(retriever=inner, llm=llm)
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]
    meta = out[0].metadata["meclear"]
    assert meta["memory_id"] == "g1" and meta["cleared"] is False and meta["recovered"] is True
    assert out[0].metadata["session"] == 12  # original metadata is kept
    assert {"loo_effect", "shapley", "shapley_interval", "rank", "harmful"} <= set(meta)


async def test_async_path_matches(case, inner, llm) -> None:
    retriever = ClearingRetriever(retriever=inner, llm=llm)
    out = await retriever.ainvoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]


def test_inputs_are_not_mutated(case, documents, llm) -> None:
    retriever = ClearingRetriever(retriever=RunnableLambda(lambda q: documents), llm=llm)
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert all("meclear" not in d.metadata for d in documents)
    assert all(o is not d for o in out for d in documents)


def test_without_reference_the_default_judge_is_reference_free(case, inner, llm) -> None:
    # The simulated reference-free judge checks consistency with what the agent saw: the
    # two agreeing faults look consistent, so nothing is cleared (a documented limit).
    out = ClearingRetriever(retriever=inner, llm=llm).invoke(case.query)
    assert len(out) == 6


def test_user_answer_chain_as_agent(case, inner, llm) -> None:
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    retriever = ClearingRetriever(
        retriever=inner, agent=prompt | llm | StrOutputParser(), judge=ExactMatchJudge()
    )
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]


def test_documents_shape_seen_by_the_agent(case, inner) -> None:
    seen = []

    def agent(inputs):
        seen.append(inputs)
        return {"answer": "December 2023"}

    retriever = ClearingRetriever(
        retriever=inner, agent=RunnableLambda(agent), judge=ExactMatchJudge()
    )
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert len(out) == 6  # the agent is always right: nothing to clear
    full = next(s for s in seen if len(s["documents"]) == 6)
    assert set(full) == {"question", "context", "documents"}
    assert '<memory id="f1">' in full["context"]
    assert all(isinstance(d, Document) for d in full["documents"])


def test_k_is_forwarded_and_enforced(case, llm) -> None:
    class Counting(BaseRetriever):
        docs: list[Document]
        seen_k: list[int | None] = Field(default_factory=list)

        def _get_relevant_documents(self, query, *, run_manager, k=None):
            self.seen_k.append(k)
            return self.docs[: k or len(self.docs)]

    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    inner = Counting(docs=docs)
    retriever = ClearingRetriever(
        retriever=inner, llm=llm, k=4, judge=CallableJudge(lambda answer: 1.0)
    )
    assert len(retriever.invoke(case.query)) == 4
    assert len(retriever.invoke(case.query, k=2)) == 2
    assert inner.seen_k == [4, 2]
    untyped = ClearingRetriever(retriever=RunnableLambda(lambda q: docs), llm=llm, k=3)
    assert len(untyped.invoke(case.query)) == 3


def test_empty_retrieval_calls_no_model(case) -> None:
    calls = []
    agent = RunnableLambda(lambda x: calls.append(x) or "x")
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: []), agent=agent, judge=ExactMatchJudge()
    )
    assert retriever.invoke(case.query, config=reference_config("r")) == []
    assert calls == []


def _always_wrong_with_context():
    return CallableJudge(lambda answer, context: 0.0 if context else 1.0)


def test_all_cleared_policy(case, inner, llm) -> None:
    judge = _always_wrong_with_context()  # reads the coalition: an opt-in judge context
    out = ClearingRetriever(
        retriever=inner, llm=llm, judge=judge, documents={"judge_context": "coalition"}
    ).invoke(case.query)
    assert out == []
    kept = ClearingRetriever(
        retriever=inner,
        llm=llm,
        judge=judge,
        documents={
            "judge_context": "coalition",
            "edge_cases": EdgeCasePolicy(all_cleared="keep_all"),
        },
    ).invoke(case.query)
    assert len(kept) == 6
    assert all(
        d.metadata["meclear"]["cleared"] and d.metadata["meclear"]["kept_by_policy"] for d in kept
    )


def test_identical_texts_without_ids(case) -> None:
    fault = "John's trip to Italy took place in January 2023."
    gold = case.memories[0].content
    docs = [Document(page_content=gold), Document(page_content=fault), Document(page_content=fault)]
    world = EvidenceWorld.from_claims(
        {
            content_memory_id(gold): ("December 2023", 1.0),
            content_memory_id(fault): ("January 2023", 1.5),
        }
    )
    # The reader finds memories by text: both copies map to the one id the world knows.
    llm = SimulatedChatModel(
        world=world, memories={content_memory_id(gold): gold, content_memory_id(fault): fault}
    )
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        llm=llm,
        judge=ExactMatchJudge(),
        clearance=ClearanceConfig(estimator="exact"),
    )
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.page_content for d in out] == [gold]
    assert out[0].id is None  # no id invented on the returned document
    assert out[0].metadata["meclear"]["memory_id"] == content_memory_id(gold)


def test_unreadable_judge_raises_or_fails_open(case, inner, llm) -> None:
    mute = RunnableLambda(lambda prompt: "hmm")
    with pytest.raises(EvaluatorError, match="VerdictParseError"):
        ClearingRetriever(retriever=inner, llm=llm, judge=mute, on_failure="closed").invoke(
            case.query, config=reference_config(case.reference)
        )
    out = ClearingRetriever(retriever=inner, llm=llm, judge=mute, on_failure="open").invoke(
        case.query, config=reference_config(case.reference)
    )
    assert len(out) == 6 and "VerdictParseError" in out[0].metadata["meclear"]["error"]


def test_configuration_errors(case, inner, llm) -> None:
    with pytest.raises(ValueError, match="llm"):
        ClearingRetriever(retriever=inner)
    with pytest.raises(ValueError, match="judge"):
        ClearingRetriever(retriever=inner, agent=RunnableLambda(lambda x: "a"))
    retriever = ClearingRetriever(
        retriever=inner, llm=llm, judge=ExactMatchJudge(), on_failure="open"
    )
    with pytest.raises(MissingReferenceError):
        retriever.invoke(case.query)  # a configuration error is never swallowed
    with pytest.raises(TypeError):
        retriever.invoke(case.query, config={"metadata": {"meclear_reference": 3}})


def test_paper_config(case, inner, llm) -> None:
    retriever = ClearingRetriever(retriever=inner, llm=llm, clearance=ClearanceConfig.paper())
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]
