"""Dates are hostile input: unusable dates are ignored for recency with a counted warning,
never raised, and a copy of the true memory dated later (or in the future) cannot get it
cleared, nor proposed in review; ``recency=`` on both integrations and in ClearanceConfig."""

from __future__ import annotations

import logging
import re
from datetime import UTC, date, datetime
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.recency import RecencyPrior, ignored_dates, memory_time
from meclear_integrations.langchain import ClearingRetriever
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.llama_index import MeClearPostprocessor
from tests.support import stale_city

QUESTION = "Where does Sam work?"
TRUE = "Sam works at Acme as a data engineer."
HOSTILE: list[Any] = [
    "0001-01-01T00:00:00+14:00",  # before year 1 in UTC: OverflowError once converted
    "9999-12-31T23:59:59-14:00",  # after year 9999 in UTC
    "9999-12-31",  # the future
    "2024-13-45",
    "2024-05-01T00:00:00+25:00",
    "not a date",
    12345,
    ["2024-01-01"],
    {"year": 2024},
    float("nan"),
    b"2024-01-01",
]
_BLOCK = re.compile(r"<memory\b[^>]*>(.*?)</memory>", re.S)


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_memory_time_never_raises_on_a_hostile_date(value: Any) -> None:
    latest = RecencyPrior().latest()
    assert memory_time({"date": value}, latest=latest) is None


def test_readable_past_dates_still_count() -> None:
    latest = RecencyPrior().latest(datetime(2026, 1, 1, tzinfo=UTC))
    assert memory_time({"date": "2025-12-31T23:00:00-02:00"}, latest=latest) == datetime(
        2026, 1, 1, 1, 0
    )  # within the grace
    assert memory_time({"date": date(2020, 2, 29)}, latest=latest) == datetime(2020, 2, 29)
    assert memory_time({"date": "2026-01-03"}, latest=latest) is None  # two days ahead


def context(copy_date: str, hostile: bool = False) -> list[Memory]:
    """The true memory, two stale notes that outvote it, and a copy of the true text."""
    stale = "Sam works at Globex as a data engineer"
    memories = [
        Memory(id="true", content=TRUE, metadata={"date": "2024-05-01"}),
        Memory(id="stale1", content=f"{stale}.", metadata={"date": "2022-01-10"}),
        Memory(id="stale2", content=f"{stale} still.", metadata={"date": "2022-03-02"}),
        Memory(id="copy", content=TRUE.upper().rstrip("."), metadata={"date": copy_date}),
    ]
    if hostile:
        memories += [
            Memory(id=f"b{i}", content=f"Sam's hobby number {i} is chess.", metadata={"date": v})
            for i, v in enumerate(HOSTILE[:6])
        ]
    return memories


def answer(texts: list[str]) -> str:
    """The employer most memories name (a tie goes to the stale Globex)."""
    acme = sum("acme" in t.lower() for t in texts)
    globex = sum("globex" in t.lower() for t in texts)
    return "Acme" if acme > globex else "Globex" if globex else "I don't know"


def value(coalition: tuple[Memory, ...], trial: int) -> float:
    return float(answer([m.content for m in coalition]) == "Acme")


@pytest.mark.parametrize("copy_date", ["9999-12-31", "2025-01-01", "2030-06-01T00:00:00Z"])
def test_a_later_copy_cannot_get_the_memory_it_copies_cleared(copy_date: str) -> None:
    report = MeClearEngine(ClearanceConfig(recency=RecencyPrior())).clear(context(copy_date), value)
    assert report.status == "complete" and report.recovered
    assert "true" not in report.cleared_ids and "true" not in report.recency_ids
    assert set(report.cleared_ids) <= {"stale1", "stale2"}
    future = datetime.fromisoformat(copy_date.replace("Z", "+00:00")).year > 2027
    assert report.recency_ignored == (["copy"] if future else [])


def test_hostile_dates_are_ignored_with_a_counted_warning(caplog: pytest.LogCaptureFixture) -> None:
    memories = context("9999-12-31", hostile=True)
    with caplog.at_level(logging.WARNING, logger="meclear_integrations.core.stages.recency"):
        report = MeClearEngine(recency=RecencyPrior()).clear(memories, value)
    ignored = ["copy", "b0", "b1", "b2", "b3", "b4", "b5"]
    assert (
        report.recency_ignored == ignored == ignored_dates(memories, latest=RecencyPrior().latest())
    )
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning.startswith("MeClear recency: 7 of 10 memories")
    assert "true" not in report.cleared_ids and report.recovered


def _agent(prompt: Any) -> str:
    return answer(_BLOCK.findall(prompt if isinstance(prompt, str) else str(prompt)))


def _judge(answer: str, context: Any = None, reference: str | None = None) -> float:
    return float("acme" in answer.lower())


def _documents(memories: list[Memory]) -> list[Document]:
    return [Document(page_content=m.content, metadata=dict(m.metadata), id=m.id) for m in memories]


class _LLM(stale_city.ScriptedLLM):
    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=_agent(prompt))


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
@pytest.mark.parametrize("how", ["argument", "clearance"])
def test_recency_on_both_integrations_with_hostile_dates_and_review(
    framework: str, how: str, tmp_path: Any
) -> None:
    memories = context("9999-12-31", hostile=True)
    ledger = HarmLedger(tmp_path / "ledger.db")
    settings: dict[str, Any] = (
        {"recency": RecencyPrior()}
        if how == "argument"
        else {"clearance": ClearanceConfig(recency={"key": "date"})}
    )
    if framework == "langchain":
        docs = _documents(memories)
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
            llm=RunnableLambda(_agent),
            judge=_judge,
            loop={"ledger": ledger},
            **settings,
        )
        assert retriever.clearance.recency == RecencyPrior()
        kept = [d.id for d in retriever.invoke(QUESTION)]
    else:
        pp = MeClearPostprocessor(llm=_LLM(), judge=_judge, loop={"ledger": ledger}, **settings)
        assert pp.clearance.recency == RecencyPrior()
        nodes = [
            NodeWithScore(node=TextNode(id_=m.id, text=m.content, metadata=m.metadata), score=1.0)
            for m in memories
        ]
        result = pp.clear_nodes(nodes, QUESTION)
        kept = [n.node.node_id for n in result.nodes]
        assert result.report.recency_ignored == ["copy", "b0", "b1", "b2", "b3", "b4", "b5"]
    assert "true" in kept and "copy" in kept
    assert not {"stale1", "stale2"} <= set(kept)
    [run] = ledger.runs()
    assert run.status == "complete" and "true" not in run.cleared_ids
    proposed = {p.memory_id for p in ledger.review(min_queries=1)}
    assert "true" not in proposed and proposed <= {"stale1", "stale2"}
    ledger.close()
