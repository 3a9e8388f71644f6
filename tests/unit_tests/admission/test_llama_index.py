"""LlamaIndex: the transform keeps exactly the admitted nodes; instrumentation events."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.schema import MetadataMode, TextNode
from pydantic import Field

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.cases import load_admission_cases
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.llama_index.admission import (
    AdmissionDecisionEvent,
    AdmissionEndEvent,
    AdmissionStartEvent,
    AdmissionTransform,
)
from tests.support.stage_models import StageModel


class Collect(BaseEventHandler):
    events: list = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event, **kwargs) -> None:
        if event.class_name().startswith("MeClearAdmission"):
            self.events.append(event)


@pytest.fixture
def collected():
    handler = Collect(events=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    yield handler.events
    root.event_handlers.remove(handler)


def nodes() -> tuple[list[TextNode], set[str]]:
    cases = load_admission_cases().cases
    picked = cases[:4] + cases[15:19]
    out = [
        TextNode(
            id_=c.id,
            text=c.candidate_memory,
            metadata={"historical_context": c.context(), "topic": "chat"},
        )
        for c in picked
    ]
    return out, {c.id for c in picked}


def transform(**kwargs) -> AdmissionTransform:
    return AdmissionTransform(admitter=ConMemAdmitter(ScriptedAdmissionModel()), **kwargs)


def test_pipeline_keeps_exactly_the_admitted_nodes(collected) -> None:
    inputs, ids = nodes()
    before = [n.model_copy(deep=True) for n in inputs]
    out = IngestionPipeline(transformations=[transform()]).run(nodes=inputs)
    decisions = [e for e in collected if isinstance(e, AdmissionDecisionEvent)]
    stored = {e.candidate_id for e in decisions if e.decision == "store"}
    assert stored and stored != ids
    assert {n.node_id for n in out} == stored
    for n in out:
        assert n.metadata["meclear_admission"]["decision"] == "store"
        assert "meclear_admission" not in n.get_content(metadata_mode=MetadataMode.EMBED)
        assert n.metadata["topic"] == "chat"
    assert [n.metadata for n in inputs] == [n.metadata for n in before]
    kinds = [type(e) for e in collected]
    assert kinds[0] is AdmissionStartEvent and kinds[-1] is AdmissionEndEvent
    end = collected[-1]
    assert (end.n_kept, end.n_dropped, end.n_errors) == (len(stored), 8 - len(stored), 0)


async def test_async_pipeline_matches_sync(collected) -> None:
    inputs, _ = nodes()
    sync = {n.node_id for n in transform()(inputs)}
    out = await IngestionPipeline(transformations=[transform()]).arun(nodes=inputs)
    assert {n.node_id for n in out} == sync


def test_keep_rejected_annotates_instead_of_dropping() -> None:
    inputs, ids = nodes()
    out = transform(keep_rejected=True)(inputs)
    assert {n.node_id for n in out} == ids
    assert {n.metadata["meclear_admission"]["decision"] for n in out} == {"store", "do_not_store"}


def test_errors_follow_policy_and_end_event_always_fires(collected) -> None:
    broken = ConMemAdmitter(StageModel(overrides={"judge": lambda p: "?"}))
    node = TextNode(id_="n1", text="User likes tea.")
    assert AdmissionTransform(admitter=broken, context="user: I like tea")([node]) == []
    kept = AdmissionTransform(admitter=broken, context="user: tea", on_error="admit")([node])
    assert [n.node_id for n in kept] == ["n1"]
    with pytest.raises(ValueError, match="historical_context") as raised:  # still a ValueError
        AdmissionTransform(admitter=broken)([node])
    assert isinstance(raised.value, ConfigurationError)
    end = collected[-1]
    assert isinstance(end, AdmissionEndEvent) and "ConfigurationError" in end.error
