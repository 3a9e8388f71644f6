"""Loud abstention: a reference-free judge that also accepts "I don't know" makes
clearance abstain; the items say why (``status_reason``, ``hint``) and one WARNING per
component names what to change. LangChain and LlamaIndex."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda

from meclear_integrations.judges.equivalence import is_no_answer
from meclear_integrations.langchain import ClearingRetriever
from meclear_integrations.llama_index import MeClearPostprocessor
from tests.support import stale_employer as sam


def lenient(answer: str, context: Any, reference: str | None = None) -> float:
    """A reference-free judge fooled by non-answers (and by nothing else)."""
    return 1.0 if is_no_answer(answer) else sam.verdict(answer, context, reference)


def _langchain() -> Any:
    docs = sam.documents(2)
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
        llm=sam.Counter().langchain_llm(),
        judge=lenient,
    )
    return lambda: [d.metadata["meclear"] for d in component.invoke(sam.QUESTION)]


def _llama_index() -> Any:
    component = MeClearPostprocessor(llm=sam.Counter().llama_llm(), judge=lenient)
    return lambda: [
        n.node.metadata["meclear"] for n in component.clear_nodes(sam.nodes(2), sam.QUESTION).nodes
    ]


@pytest.mark.parametrize("build", [_langchain, _llama_index], ids=["langchain", "llama_index"])
def test_an_abstention_on_a_non_answer_is_loud_once_per_component(
    build: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ask = build()
    with caplog.at_level(logging.WARNING):
        first, second = ask(), ask()
    for metas in (first, second):
        assert len(metas) == 5  # the context unchanged
        assert {m["status"] for m in metas} == {"unverified"}
        assert {m["status_reason"] for m in metas} == {"judge_accepts_no_answer"}
        assert all("reference" in m["hint"] for m in metas)
    warned = [r for r in caplog.records if "I don't know" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert "reference_config" in warned[0].getMessage()


def test_two_real_answers_keep_their_reason() -> None:
    assert is_no_answer("I don't know.") and is_no_answer("") and is_no_answer("Unknown")
    assert not is_no_answer("OldCo") and not is_no_answer("No, Paris")
