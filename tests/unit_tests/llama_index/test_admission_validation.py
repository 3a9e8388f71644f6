"""LlamaIndex writers refuse invalid nodes before any model call, naming the field."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.errors import CandidateTypeError, InvalidCandidateError
from meclear_integrations.llama_index.admission import AdmissionTransform
from meclear_integrations.llama_index.admission_background import BackgroundAdmissionWriter
from tests.support.stage_models import StageModel

CONTEXT = "user: I'm vegetarian, please never suggest meat dishes."


def _nodes(bad_text: str) -> list[TextNode]:
    return [TextNode(id_="ok", text="User is vegetarian."), TextNode(id_="b", text=bad_text)]


@pytest.mark.parametrize(
    ("text", "reason"), [("", "empty"), ("\n ", "empty"), ("y" * 10**6, "too_long")]
)
def test_the_transform_refuses_the_batch_before_any_model_call(text: str, reason: str) -> None:
    model = StageModel()
    transform = AdmissionTransform(admitter=ConMemAdmitter(model), context=CONTEXT)
    with pytest.raises(InvalidCandidateError) as caught:
        transform(_nodes(text))
    assert (caught.value.field, caught.value.reason) == ("nodes[1].text", reason)
    with pytest.raises(InvalidCandidateError):
        asyncio.run(transform.acall(_nodes(text)))
    assert model.calls == []


def test_a_node_context_that_is_not_text_is_named() -> None:
    model = StageModel()
    transform = AdmissionTransform(admitter=ConMemAdmitter(model))
    node = TextNode(id_="b", text="User is vegetarian.", metadata={"historical_context": 5})
    with pytest.raises(CandidateTypeError) as caught:
        transform([node])
    assert caught.value.field == "nodes[0].metadata['historical_context']"
    assert model.calls == []


def test_the_background_writer_refuses_at_insert(tmp_path: Path) -> None:
    model = StageModel()
    index = VectorStoreIndex(nodes=[], embed_model=MockEmbedding(embed_dim=8))
    writer = BackgroundAdmissionWriter(
        index, ConMemAdmitter(model), jobs=tmp_path / "jobs.db", workers=0
    )
    with pytest.raises(InvalidCandidateError) as caught:
        writer.insert_nodes(_nodes("   "), context=CONTEXT)
    assert caught.value.field == "node[1].text"
    assert writer.job_queue.list_jobs() == [] and model.calls == []
    writer.close()
