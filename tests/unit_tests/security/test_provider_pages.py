"""A proxy's HTML page is a passing provider failure (fails open, kind ``transient``, the
same name in warning and metadata) once the provider has answered; on a component's first
calls it is a wrong base URL and raises naming the URL. Async failures leave nothing on
stderr ("Task exception was never retrieved", "Event loop is closed")."""

from __future__ import annotations

import warnings

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations.core.failures.alerts import FailOpenWarning
from meclear_integrations.core.failures.kind import PermanentFailureError
from meclear_integrations.judges import CallableJudge
from meclear_integrations.langchain import ClearingRetriever, reference_config
from tests.support.honest_judge import GOLD, GOLD_MEMORY, QUESTION

URL = "https://llm-proxy.internal.example/v1/chat/completions"


class _Request:
    url = URL


class _PageError(AttributeError):
    """What an OpenAI-style client raises when a proxy answers 200 with an HTML page."""

    request = _Request()


def _retriever(agent) -> ClearingRetriever:  # type: ignore[no-untyped-def]
    docs = [
        Document(page_content=GOLD_MEMORY, id="g1"),
        Document(page_content="John likes pasta.", id="b1"),
    ]
    return ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        agent=RunnableLambda(agent),
        judge=CallableJudge(lambda answer, reference: float(answer.strip() == reference)),
        clearance={"failure": {"retry": {"initial_backoff": 0.0, "jitter": 0.0}}},
    )


def test_a_page_after_answers_fails_open_with_one_name() -> None:
    proxy = {"down": False}

    def agent(inputs: dict) -> str:
        if proxy["down"]:
            raise _PageError("'str' object has no attribute 'choices'")
        return GOLD

    retriever = _retriever(agent)
    retriever.invoke(QUESTION, config=reference_config(GOLD))  # the provider answers
    proxy["down"] = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):  # never raises: the provider has answered this component before
            out = retriever.invoke(QUESTION, config=reference_config(GOLD))
            meta = out[0].metadata["meclear"]
            assert meta["status"] == "failed" and meta["failure"]["kind"] == "transient"
    said = [str(w.message) for w in caught if issubclass(w.category, FailOpenWarning)]
    assert said and all(
        f"reason '{meta['failure']['reason']}', kind 'transient'" in m for m in said
    )


def test_a_page_on_the_first_calls_is_loud_and_names_the_url() -> None:
    def agent(inputs: dict) -> str:
        raise _PageError("'str' object has no attribute 'choices'")

    retriever = _retriever(agent)
    with pytest.raises(PermanentFailureError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", FailOpenWarning)
        for _ in range(2):
            retriever.invoke(QUESTION, config=reference_config(GOLD))
    assert URL in str(info.value) and info.value.kind_detail == "bad_endpoint"
