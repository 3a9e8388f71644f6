"""Lone surrogates (text UTF-8 cannot encode) in ids, contents and metadata: every exit
(reports, events, framework metadata, the ledger's JSON) still serialises, and clearance
still clears the right memories."""

from __future__ import annotations

import json
import warnings

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.text import utf8_safe
from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.runtime.payloads import assign_memory_ids
from meclear_integrations.simulation import redundant_harm_example

LONE = "\ud800"


def test_utf8_safe_escapes_only_lone_surrogates() -> None:
    assert utf8_safe("plain é 😀") == "plain é 😀"
    assert utf8_safe(f"a{LONE}b") == "a\\ud800b"
    assert utf8_safe(LONE) != utf8_safe("\udfff")  # distinct texts stay distinct
    utf8_safe(f"x{LONE}\udfff").encode("utf-8")


def test_a_memory_with_lone_surrogates_serialises_and_round_trips() -> None:
    memory = Memory(
        id=f"id{LONE}", content=f"text{LONE}", metadata={f"k{LONE}": [f"v{LONE}", {"n": LONE}]}
    )
    data = json.loads(memory.model_dump_json())
    assert data["id"] == "id\\ud800" and data["content"] == "text\\ud800"
    assert data["metadata"] == {"k\\ud800": ["v\\ud800", {"n": "\\ud800"}]}
    assert Memory.model_validate_json(memory.model_dump_json()).id == memory.id


def test_engine_report_serialises_with_hostile_ids() -> None:
    case = redundant_harm_example()
    evaluate = case.evaluator()
    hostile = [
        m.model_copy(update={"id": m.id + LONE}) if m.id in case.targets else m
        for m in case.memories
    ]
    hostile = [Memory.model_validate(m.model_dump()) for m in hostile]  # validated copy

    def evaluator(coalition: tuple[Memory, ...], trial: int) -> float:
        plain = tuple(m.model_copy(update={"id": m.id.replace("\\ud800", "")}) for m in coalition)
        return evaluate(plain, trial)

    report = MeClearEngine(ClearanceConfig()).clear(hostile, evaluator)
    assert report.status == "complete"
    assert sorted(report.cleared_ids) == sorted(f"{t}\\ud800" for t in case.targets)
    json.loads(report.model_dump_json())


def test_assigned_ids_match_the_memories_built_from_them() -> None:
    ids = assign_memory_ids([(f"a{LONE}", "x"), (None, f"text{LONE}"), (None, "plain")])
    assert ids[0] == "a\\ud800" and ids[1].startswith("mc-")
    assert [Memory(id=i, content="").id for i in ids] == ids


def test_clearing_retriever_with_hostile_documents_clears_and_serialises() -> None:
    case = redundant_harm_example()
    documents = [
        Document(page_content=m.content, metadata=dict(m.metadata), id=m.id) for m in case.memories
    ]
    documents.append(Document(page_content=f"unrelated note {LONE}", metadata={"src": LONE}))
    documents.append(Document(page_content="another note", id=f"odd{LONE}"))
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: documents),
        llm=SimulatedChatModel.from_case(case),
        clearance=ClearanceConfig(budget={"max_concurrency": 4}),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fail-open: clearance ran to the end
        out = retriever.invoke(case.query, config=reference_config(case.reference))
    kept = {d.page_content for d in out}
    assert not {m.content for m in case.memories if m.id in case.targets} & kept
    assert f"unrelated note {LONE}" in kept and "another note" in kept  # originals returned
    for d in out:
        json.dumps(d.metadata["meclear"], ensure_ascii=False).encode("utf-8")
