"""The clearing components' grouped settings: ``limits=``, ``loop=`` and ``documents=``.

Every old flat spelling is rejected with a hint naming its group (an ``UnknownSettingError``,
which pydantic wraps in a ``ValidationError``), on every component; a
group given as a mapping or as its model reads the same; the groups reject unknown keys.
"""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableLambda

from meclear_integrations.pipeline import Documents, Limits, Loop
from meclear_integrations.pipeline.settings import MOVED

LLM = RunnableLambda(lambda prompt: "x")


def _build(component: str, **kwargs: object) -> object:
    if component == "MeClearPostprocessor":
        from meclear_integrations.llama_index import MeClearPostprocessor

        return MeClearPostprocessor(**kwargs)
    from meclear_integrations.langchain import ClearingRetriever, MeClearCompressor

    if component == "ClearingRetriever":
        return ClearingRetriever(retriever=RunnableLambda(lambda q: []), llm=LLM, **kwargs)
    return MeClearCompressor(llm=LLM, **kwargs)


COMPONENTS = ["ClearingRetriever", "MeClearCompressor", "MeClearPostprocessor"]
GROUP = {
    name: group
    for group, model in [("limits", Limits), ("loop", Loop), ("documents", Documents)]
    for name in model.model_fields
}


def test_every_moved_name_has_a_group() -> None:
    assert sorted(MOVED) == sorted(GROUP)
    assert {"trigger", "ledger", "audit_queue", "audit_workers"} <= set(Loop.model_fields)
    assert {"metadata_key", "metadata_keys", "judge_context", "edge_cases"} <= set(
        Documents.model_fields
    )


@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize("name", sorted(GROUP))
def test_an_old_flat_spelling_names_its_group(component: str, name: str) -> None:
    group = GROUP[name]
    with pytest.raises(ValueError, match=rf"{name} moved into {group}: pass {group}="):
        _build(component, **{name: None})


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_mapping_and_the_model_read_the_same(component: str) -> None:
    as_dict = _build(component, loop={"audit_workers": 3}, documents={"metadata_keys": ["date"]})
    as_model = _build(
        component, loop=Loop(audit_workers=3), documents=Documents(metadata_keys=("date",))
    )
    for built in (as_dict, as_model):
        assert built.loop.audit_workers == 3  # type: ignore[attr-defined]
        assert built.documents.metadata_keys == ("date",)  # type: ignore[attr-defined]


def test_the_groups_reject_unknown_keys_and_bad_values() -> None:
    with pytest.raises(ValueError, match="Loop has no setting 'triger'"):
        Loop(triger=None)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="Documents has no setting 'metadata_kyes'"):
        Documents(metadata_kyes=())  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="metadata_keys takes a sequence"):
        Documents(metadata_keys="date")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        Loop(audit_workers=-1)


def test_the_postprocessor_takes_no_reference_key() -> None:
    with pytest.raises(ValueError, match="takes the reference from reference="):
        _build("MeClearPostprocessor", documents={"reference_key": "gold"})
    retriever = _build("ClearingRetriever", documents={"reference_key": "gold"})
    assert retriever.documents.reference_key == "gold"  # type: ignore[attr-defined]
