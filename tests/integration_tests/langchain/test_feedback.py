"""LangSmith feedback into the ledger and to a LangSmith stub on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.langchain.feedback import langsmith_feedback
from meclear_integrations.ledger import HarmLedger, LedgerLookupError
from tests.support.servers import LANGSMITH_INFO, serve

SECRET = "sk-proj-abcdefghijklmnopqrstuvwx"
RUN_ID = "00000000-0000-4000-8000-000000000001"
SESSION = "00000000-0000-4000-8000-0000000000aa"


class FeedbackStub:
    """Answers ``GET /info`` and ``POST /feedback`` (echoing a valid Feedback object)."""

    def __init__(self) -> None:
        self.posted: list[dict] = []
        self._lock = threading.Lock()

    def __call__(self, method: str, path: str, body: bytes):
        if method == "GET" and path.startswith("/info"):
            return 200, {}, json.dumps(LANGSMITH_INFO).encode()
        if method == "POST" and path.startswith("/feedback"):
            data = json.loads(body or b"{}")
            with self._lock:
                self.posted.append(data)
            now = datetime.now(UTC).isoformat()
            reply = {"created_at": now, "modified_at": now, **data}
            return 200, {}, json.dumps(reply).encode()
        return 404, {}, b"{}"


@pytest.fixture
def ledger(tmp_path):
    context = [Memory(id="gold", content="Paris"), Memory(id="stale", content="Rome")]

    def evaluate(coalition, trial):
        ids = {m.id for m in coalition}
        return 1.0 if "gold" in ids and "stale" not in ids else 0.0

    with HarmLedger(tmp_path / "l.db") as led:
        report = MeClearEngine(ClearanceConfig()).clear(context, evaluate)
        led.record(report, query="Where?", context=context, trace_run_id=RUN_ID)
        yield led


def test_feedback_reaches_the_ledger_and_langsmith(ledger: HarmLedger) -> None:
    from langsmith import Client

    stub = FeedbackStub()
    with serve(stub) as url:
        client = Client(api_url=url, api_key="test-key")
        record = langsmith_feedback(
            ledger,
            RUN_ID,
            correct=False,
            correction=f"Paris {SECRET}",
            memory_ids=["stale"],
            comment="stale city",
            session_id=SESSION,
            client=client,
        )
    assert record.source == "langsmith" and record.memory_ids == ["stale"]
    assert SECRET not in (record.correction or "")
    [posted] = stub.posted
    assert posted["key"] == "correctness" and posted["score"] == 0.0
    assert posted["id"] == record.source_id
    assert posted["correction"]["answer"].startswith("Paris") and SECRET not in json.dumps(posted)
    assert posted["feedback_source"]["metadata"]["meclear_ledger_feedback_id"] == record.feedback_id
    assert posted["run_id"] == RUN_ID and posted["session_id"] == SESSION
    assert [p.feedback_id for p in ledger.pending_replays()] == [record.feedback_id]


def test_unknown_run_fails_before_anything_is_sent(ledger: HarmLedger) -> None:
    class Client:
        def create_feedback(self, *args, **kwargs):
            raise AssertionError("nothing may be sent")

    with pytest.raises(LedgerLookupError):
        langsmith_feedback(ledger, "unknown", correct=True, client=Client())


def test_replay_through_a_clearing_retriever(tmp_path) -> None:
    """A negative feedback replayed with the retriever's own agent and judge, reading the
    memories back from the vector store."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel
    from meclear_integrations.langchain.feedback import replay_feedback
    from meclear_integrations.simulation import redundant_harm_example

    case = redundant_harm_example()
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(page_content=m.content, id=m.id) for m in case.memories])
    retriever = ClearingRetriever(
        retriever=store.as_retriever(), llm=SimulatedChatModel.from_case(case)
    )
    with HarmLedger(tmp_path / "replay.db") as led:
        # the live run was fooled (nothing cleared) and the user said so
        report = MeClearEngine(ClearanceConfig()).clear(case.memories, lambda c, t: 1.0)
        run = led.record(report, query=case.query, context=case.memories)
        fb = led.feedback(run.run_id, correct=False, correction=case.reference)
        result = replay_feedback(
            retriever, led, fb.feedback_id, get_documents=store.get_by_ids, query=case.query
        )
        assert sorted(result.report.cleared_ids) == ["f1", "f2"] and result.report.recovered
        assert result.run.origin == "replay" and led.pending_replays() == []
        assert sorted(led.prior_harmful(case.memories)) == ["f1", "f2"]
