"""LangChain writers refuse invalid documents before any model call, naming the field."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.errors import CandidateTypeError, InvalidCandidateError
from meclear_integrations.langchain.admission import AdmissionGate
from meclear_integrations.langchain.admission_background import BackgroundAdmissionGate
from tests.support.stage_models import StageModel

CONTEXT = "user: I'm vegetarian, please never suggest meat dishes."


def _store() -> InMemoryVectorStore:
    return InMemoryVectorStore(DeterministicFakeEmbedding(size=8))


def _batch(bad: Document) -> list[Document]:
    return [Document(id="ok", page_content="User is vegetarian."), bad]


@pytest.mark.parametrize(
    ("bad", "field", "reason"),
    [
        (Document(id="b", page_content=""), "documents[1].page_content", "empty"),
        (Document(id="b", page_content="  "), "documents[1].page_content", "empty"),
        (Document(id="b", page_content="x" * 1_000_000), "documents[1].page_content", "too_long"),
        (
            Document(
                id="b", page_content="User is vegetarian.", metadata={"historical_context": 3}
            ),
            "documents[1].metadata['historical_context']",
            "not_text",
        ),
    ],
)
def test_the_gate_refuses_the_whole_batch_before_any_model_call(
    bad: Document, field: str, reason: str
) -> None:
    model = StageModel()
    store = _store()
    gate = AdmissionGate(store, ConMemAdmitter(model))
    with pytest.raises(InvalidCandidateError) as caught:
        gate.add_documents(_batch(bad), context=CONTEXT)
    assert (caught.value.field, caught.value.reason) == (field, reason)
    with pytest.raises(InvalidCandidateError):
        asyncio.run(gate.aadd_documents(_batch(bad), context=CONTEXT))
    assert model.calls == [] and store.get_by_ids(["ok", "b"]) == []


def test_the_background_gate_refuses_at_add_and_queues_nothing(tmp_path: Path) -> None:
    model = StageModel()
    gate = BackgroundAdmissionGate(
        _store(), ConMemAdmitter(model), jobs=tmp_path / "jobs.db", workers=0
    )
    bad = Document(id="b", page_content="x" * 5000)
    with pytest.raises(InvalidCandidateError) as caught:
        gate.add_documents(_batch(bad), context=CONTEXT)
    assert caught.value.field == "document[1].page_content"
    with pytest.raises(CandidateTypeError) as typed:
        gate.add_documents(_batch(Document(id="b", page_content="ok")), context={"a": 1})
    assert typed.value.field == "document[0].context"
    assert gate.job_queue.list_jobs() == [] and model.calls == []
    gate.close()
