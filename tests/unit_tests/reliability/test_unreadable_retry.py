"""An unreadable judge verdict is retried (RetryPolicy.retry_unreadable), not fatal."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations import ClearanceConfig
from meclear_integrations.core.failures.faults import is_transient, is_unreadable_reply
from meclear_integrations.judges import VerdictParseError
from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.simulation import redundant_harm_example
from tests.support.chat import ScriptedChat

KEPT = ["g1", "b1", "b2", "b3"]


def _retriever(unreadable: bool) -> tuple[ClearingRetriever, ScriptedChat]:
    case = redundant_harm_example()
    documents = [Document(page_content=m.content, id=m.id) for m in case.memories]
    # Call 2 is the judge of the first evaluation: it replies with no readable verdict.
    model = ScriptedChat(inner=SimulatedChatModel.from_case(case), faults={2: "%%% ??? %%%"})
    config = ClearanceConfig(
        failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0, "retry_unreadable": unreadable}},
        budget={"max_concurrency": 1},
    )
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: documents), llm=model, clearance=config
    )
    return retriever, model


def test_unreadable_reply_is_classified_apart_from_transient_errors() -> None:
    exc = VerdictParseError("no verdict", raw="%%%")
    assert is_unreadable_reply(exc) and not is_transient(exc)


def test_one_unreadable_verdict_is_retried_and_clearance_completes() -> None:
    case = redundant_harm_example()
    retriever, _ = _retriever(unreadable=True)
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert sorted(d.id for d in out) == sorted(KEPT)
    assert all(d.metadata["meclear"]["status"] == "complete" for d in out)


def test_without_retry_unreadable_the_query_fails_open() -> None:
    case = redundant_harm_example()
    retriever, _ = _retriever(unreadable=False)
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert len(out) == len(case.memories)
    assert all(d.metadata["meclear"]["status"] == "failed" for d in out)
