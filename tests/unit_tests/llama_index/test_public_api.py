"""The LlamaIndex subpackage's public surface, and the error when the extra is missing."""

from __future__ import annotations

import meclear_integrations.llama_index as li

EXPECTED = [
    "HashEmbedding",
    "Documents",
    "Limits",
    "Loop",
    "LlamaIndexReferenceFreeJudge",
    "LlamaIndexReferenceJudge",
    "LlamaIndexTextModel",
    "MeClearMemoryBlock",
    "MeClearPostprocessor",
    "MeClearProgressEvent",
    "MeClearStageEndEvent",
    "MeClearStageEvent",
    "MeClearStageStartEvent",
    "SimulatedLLM",
    "as_text_model",
    "current_reference",
    "query_reference",
]


def test_the_setting_groups_are_the_pipeline_s() -> None:
    from meclear_integrations import pipeline

    for name in ("Documents", "Limits", "Loop"):
        assert getattr(li, name) is getattr(pipeline, name)


def test_all_is_exactly_the_expected_surface() -> None:
    assert sorted(li.__all__) == sorted(EXPECTED)
    assert len(set(li.__all__)) == len(li.__all__)
    for name in li.__all__:
        assert hasattr(li, name), name


def test_every_component_and_event_has_a_stable_meclear_class_name() -> None:
    """``class_name()`` is what LlamaIndex serialises: ``MeClear`` + the class name."""
    from meclear_integrations.llama_index import admission, events

    classes = [getattr(li, n) for n in li.__all__ if hasattr(getattr(li, n), "class_name")]
    classes += [getattr(events, n) for n in events.__all__ if n.endswith("Event")]
    classes += [getattr(admission, n) for n in admission.__all__]
    classes = list(dict.fromkeys(classes))  # the events public in both places once
    assert len(classes) >= 16
    for cls in classes:
        expected = cls.__name__ if cls.__name__.startswith("MeClear") else f"MeClear{cls.__name__}"
        assert cls.class_name() == expected, cls


def test_every_field_has_a_description() -> None:
    from meclear_integrations.llama_index import admission, events
    from meclear_integrations.llama_index.postprocessor import NodeClearance

    models = [li.MeClearPostprocessor, NodeClearance, li.SimulatedLLM, li.HashEmbedding]
    models += [li.Limits, li.Loop, li.Documents]
    models += [getattr(events, n) for n in events.__all__ if n.endswith("Event")]
    models += [getattr(admission, n) for n in admission.__all__]
    ours = 0
    for model in models:
        for name, field in model.model_fields.items():
            if name in _INHERITED:
                continue
            ours += 1
            assert field.description, f"{model.__name__}.{name}"
    assert ours >= 40


_INHERITED = {
    "callback_manager",
    "id_",
    "timestamp",
    "span_id",
    "tags",
    "model_name",
    "embed_batch_size",
    "num_workers",
    "embeddings_cache",
    "system_prompt",
    "messages_to_prompt",
    "completion_to_prompt",
    "output_parser",
    "pydantic_program_mode",
    "query_wrapper_prompt",
}
"""Fields of LlamaIndex's own base classes (documented there)."""


def test_postprocessor_is_a_llama_index_component() -> None:
    from llama_index.core.postprocessor.types import BaseNodePostprocessor

    from meclear_integrations.llama_index import events

    assert issubclass(li.MeClearPostprocessor, BaseNodePostprocessor)
    assert li.MeClearPostprocessor.class_name() == "MeClearPostprocessor"
    assert li.SimulatedLLM.class_name() == "MeClearSimulatedLLM"
    stages = ("Screening", "Attribution", "Interactions", "Clearance")
    stage_events = [getattr(events, f"{s}{p}Event") for s in stages for p in ("Start", "End")]
    names = {e.class_name() for e in stage_events}
    assert len(names) == 8 and all(n.startswith("MeClear") for n in names)
