"""A memory that makes the provider refuse the request (context length, content filter,
request too large, an id too long) fails the query open naming the memory; it never
raises from ``invoke()``, even with the default ``on_failure``. Configuration errors
(401) stay loud. Prompts are bounded before they are sent."""

from __future__ import annotations

import warnings

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations.core.failures.alerts import FailOpenWarning
from meclear_integrations.core.failures.kind import PermanentFailureError, failure_kind
from meclear_integrations.judges import CallableJudge
from meclear_integrations.langchain import ClearingRetriever, reference_config
from tests.support.callbacks import Payloads
from tests.support.honest_judge import GOLD, GOLD_MEMORY, QUESTION

TRIGGER = "FORBIDDEN-TOPIC"
PROMPT_LIMIT = 60_000


class ProviderError(Exception):
    """An HTTP error as provider clients raise it (status and body)."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(f"Error code: {status} - {{'error': {{'message': '{message}'}}}}")
        self.status_code = status
        self.code = code


REJECTIONS = {
    "context_length": lambda: ProviderError(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9013 tokens. Please reduce the length of the messages.",
        "context_length_exceeded",
    ),
    "content_filter": lambda: ProviderError(
        400,
        "The response was filtered due to the prompt triggering Azure OpenAI's content "
        "management policy.",
        "content_filter",
    ),
    "too_large": lambda: ProviderError(413, "Request too large for gpt-4o"),
    "id_too_long": lambda: ProviderError(
        400, "Invalid 'messages[0].content': string too long.", "string_above_max_length"
    ),
}


def _agent(rejection: str):  # type: ignore[no-untyped-def]
    def agent(inputs: dict) -> str:
        context = inputs["context"]
        if TRIGGER in context:
            raise REJECTIONS[rejection]()
        return GOLD if GOLD_MEMORY in context else "I don't know"

    return agent


def _docs(hostile: str = f"{TRIGGER}: a memory the provider refuses") -> list[Document]:
    return [
        Document(page_content=GOLD_MEMORY, id="g1"),
        Document(page_content=hostile, id="h"),
        Document(page_content="John likes pasta.", id="b1"),
    ]


def _retriever(agent, docs: list[Document]) -> ClearingRetriever:  # type: ignore[no-untyped-def]
    return ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        agent=RunnableLambda(agent),
        judge=CallableJudge(lambda answer, reference: float(answer.strip() == reference)),
        clearance={"failure": {"retry": {"initial_backoff": 0.0, "jitter": 0.0}}},
    )


@pytest.mark.parametrize("rejection", sorted(REJECTIONS))
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_content_rejection_fails_open_naming_the_memory(
    rejection: str, asynchronous: bool
) -> None:
    docs = _docs()
    retriever = _retriever(_agent(rejection), docs)
    events = Payloads()
    config = reference_config(GOLD, {"callbacks": [events]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = (
            await retriever.ainvoke(QUESTION, config=config)
            if asynchronous
            else retriever.invoke(QUESTION, config=config)
        )
    assert [d.id for d in out] == ["g1", "h", "b1"]
    failure = out[0].metadata["meclear"]["failure"]
    assert out[0].metadata["meclear"]["status"] == "failed"
    assert failure["kind"] == "content_rejected"
    assert "h" in failure["rejected_memory_ids"]
    # one name everywhere: the warning and the error event say what the metadata says
    fail_open = [str(w.message) for w in caught if issubclass(w.category, FailOpenWarning)]
    assert fail_open and all("'content_rejected'" in m for m in fail_open)
    errors = [p for p in events.payloads if p.get("phase") == "error" and "kind" in p]
    assert errors and {p["kind"] for p in errors} == {"content_rejected"}


def test_a_content_rejection_does_not_open_the_breaker() -> None:
    retriever = _retriever(_agent("content_filter"), _docs())
    for _ in range(5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FailOpenWarning)
            out = retriever.invoke(QUESTION, config=reference_config(GOLD))
        assert out[0].metadata["meclear"]["status"] == "failed"  # never "skipped"
    assert retriever.limits.circuit_breaker is not None
    assert retriever.limits.circuit_breaker.state == "closed"


def _length_limited(inputs: dict) -> str:
    context = inputs["context"]
    if len(context) > PROMPT_LIMIT:
        raise REJECTIONS["context_length"]()
    return GOLD if GOLD_MEMORY in context else "I don't know"


@pytest.mark.parametrize("where", ["text", "id"])
def test_an_oversized_memory_is_bounded_before_it_is_sent(where: str) -> None:
    huge = "the quarterly report says nothing about Italy. " * 20_000  # ~1 MB
    docs = [
        Document(page_content=GOLD_MEMORY, id="g1"),
        Document(page_content=huge if where == "text" else "short", id="h"),
        Document(page_content="John likes pasta.", id=huge if where == "id" else "b1"),
    ]
    out = _retriever(_length_limited, docs).invoke(QUESTION, config=reference_config(GOLD))
    assert len(out) >= 1
    assert all(d.metadata["meclear"].get("status") != "failed" for d in out)


def test_a_401_stays_loud() -> None:
    def agent(inputs: dict) -> str:
        raise ProviderError(401, "Incorrect API key provided: sk-abc. ", "invalid_api_key")

    with pytest.raises(PermanentFailureError):
        _retriever(agent, _docs()).invoke(QUESTION, config=reference_config(GOLD))


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (ProviderError(400, "Invalid value for 'temperature': 7 is too high"), "permanent"),
        (ProviderError(404, "The model `gpt-9` does not exist"), "permanent"),
        (ProviderError(400, "max_tokens is too large: 100000."), "permanent"),
        (REJECTIONS["context_length"](), "content_rejected"),
        (ProviderError(500, "maximum context length"), "transient"),
        (AttributeError("'str' object has no attribute 'choices'"), "transient"),
    ],
)
def test_one_classification(error: Exception, kind: str) -> None:
    assert failure_kind(error) == kind


def test_llama_index_a_content_rejection_fails_open_naming_the_memory() -> None:
    from typing import Any

    from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.llms.custom import CustomLLM
    from llama_index.core.schema import NodeWithScore, TextNode

    from meclear_integrations.llama_index import MeClearPostprocessor

    class FilteringLLM(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="filtering")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def]
            if TRIGGER in prompt:
                raise REJECTIONS["content_filter"]()
            return CompletionResponse(text=GOLD if GOLD_MEMORY in prompt else "I don't know")

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    nodes = [
        NodeWithScore(node=TextNode(id_=d.id, text=d.page_content), score=1.0) for d in _docs()
    ]
    postprocessor = MeClearPostprocessor(
        llm=FilteringLLM(),
        judge=CallableJudge(lambda answer, reference: float(answer.strip() == reference)),
        reference=GOLD,
        clearance={"failure": {"retry": {"initial_backoff": 0.0, "jitter": 0.0}}},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FailOpenWarning)
        out = postprocessor.postprocess_nodes(nodes, query_str=QUESTION)
    assert [n.node.id_ for n in out] == ["g1", "h", "b1"]
    failure = out[0].node.metadata["meclear"]["failure"]
    assert failure["kind"] == "content_rejected" and "h" in failure["rejected_memory_ids"]
