"""ConMem admission on the real model: ``AdmissionGate`` over ``ChatOpenAI`` (every role the
real model) decides candidate memories end to end."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(900)]

CONVERSATION = [
    {"role": "user", "content": "I'm allergic to shellfish, never suggest shrimp dishes."},
    {"role": "assistant", "content": "Noted. How about a lemon chicken traybake tonight?"},
]


def test_admission_gate_decides_with_the_real_model(chat_openai) -> None:
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from meclear_integrations.langchain import AdmissionGate
    from meclear_integrations.langchain.admission import admitter_from_langchain

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    from meclear_integrations.admission import AdmissionConfig

    # one probe-repair pass of each kind at most: the tier checks the flow, not the repair
    config = AdmissionConfig(
        max_regeneration_rounds=1, max_targeted_repairs=0, max_fresh_reconstructions=0
    )
    gate = AdmissionGate(store, admitter_from_langchain(chat_openai, config=config))
    docs = [Document(id="a1", page_content="User is allergic to shellfish.")]
    result = gate.add_documents(docs, context=CONVERSATION)
    [decision] = result.decisions
    # the flow completes: a decision, or a stage the tiny model could not do reported
    # (never a guess), and never because of the output format or an unparsable reply
    assert decision.cost.model_calls >= 3
    if decision.decision is None:
        error = decision.error
        assert error is not None, "no decision and no error"
        text = " ".join([error.message, *(f.error for f in error.failures)])
        assert "response_format" not in text and "json_schema" not in text, text
        assert "never parsed" not in error.message, text
    else:
        assert decision.decision in ("store", "do_not_store")
    assert result.added_ids == (["a1"] if decision.decision == "store" else [])
