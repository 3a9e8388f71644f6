"""Per-memory scores reach LangSmith, Langfuse and Phoenix through their own clients.

Each client talks to a recorder on 127.0.0.1 (LangSmith: ``Client.create_feedback``;
Langfuse: ``Langfuse.create_score``; Phoenix: ``phoenix.client.Client``). The LangSmith test
traces a real ``ClearingRetriever`` run into the same recorder and checks that the feedback
names the traced run the ledger recorded.
"""

from __future__ import annotations

import json
import threading

import pytest
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.langchain import LangChainTracer, wait_for_all_tracers

from meclear_integrations.exports import memory_scores
from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.simulation import redundant_harm_example
from tests.support.servers import LangSmithRecorder, serve

pytest.importorskip("sqlalchemy")

PROJECT = "5a1c0f9e-0000-4000-8000-000000000001"
TRACES = {n: f"5a1c0f9e-0000-4000-8000-00000000010{n}" for n in "12"}


def _documents():
    from langchain_core.documents import Document

    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    return case, RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs])


def _traced_run(tmp_path, client):
    from meclear_integrations.ledger import HarmLedger

    case, inner = _documents()
    ledger = HarmLedger(tmp_path / "ledger.db")
    retriever = ClearingRetriever(
        retriever=inner, llm=SimulatedChatModel.from_case(case), loop={"ledger": ledger}
    )
    tracer = LangChainTracer(client=client, project_name="meclear-review")
    config = reference_config(case.reference, {"callbacks": [tracer]})
    kept = retriever.invoke(case.query, config=config)
    wait_for_all_tracers()
    client.flush()
    run = ledger.runs(limit=1)[0]
    ledger.close()
    return kept, run


class _Recorder:
    """Records every request; answers JSON bodies Langfuse and Phoenix accept."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        self.lock = threading.Lock()

    def __call__(self, method: str, path: str, body: bytes):
        with self.lock:
            self.requests.append((method, path, body))
        if path.startswith("/v1/document_annotations"):
            count = len(json.loads(body)["data"])
            data = [{"id": f"a{i}"} for i in range(count)]
            return 200, {}, json.dumps({"data": data}).encode()
        return 200, {}, b"{}"

    def bodies(self, prefix: str) -> list[object]:
        with self.lock:
            return [json.loads(b) for _, p, b in self.requests if p.startswith(prefix)]


def test_langsmith_feedback_lands_on_the_traced_run(tmp_path) -> None:
    from langsmith import Client

    from meclear_integrations.exports.langsmith import HARM_KEY, RUN_KEY, langsmith_scores

    recorder = LangSmithRecorder()
    with serve(recorder) as url:
        client = Client(api_url=url, api_key="dummy")
        kept, run = _traced_run(tmp_path, client)
        assert [d.id for d in kept] == ["g1", "b1", "b2", "b3"]
        assert run.trace_run_id and run.trace_run_id in recorder.body.decode()  # traced
        ids = langsmith_scores(run, client=client, session_id=PROJECT)
    feedback = [json.loads(body) for method, path, body in recorder.requests if path == "/feedback"]
    assert len(feedback) == len(ids) == 6 + 1
    assert {f["run_id"] for f in feedback} == {run.trace_run_id}
    assert {f["session_id"] for f in feedback} == {PROJECT}
    harm = {f["extra"]["memory_id"]: f for f in feedback if f["key"] == HARM_KEY}
    assert harm["f1"]["value"] == "cleared" and harm["f1"]["score"] > 0
    assert harm["g1"]["value"] == "kept" and harm["g1"]["score"] < 0
    assert harm["f1"]["score"] == pytest.approx(-harm["f1"]["extra"]["shapley"], abs=1e-3)
    (clearance,) = [f for f in feedback if f["key"] == RUN_KEY]
    assert clearance["value"] == "complete" and clearance["score"] == 1.0
    assert sorted(clearance["extra"]["cleared"]) == ["f1", "f2"]
    texts = [d.page_content for d in kept]
    assert not any(t in json.dumps(feedback) for t in texts)  # no memory text leaves


def test_langsmith_review_proposals_on_their_runs(tmp_path) -> None:
    from langsmith import Client

    from meclear_integrations.exports.langsmith import PROPOSAL_KEY, langsmith_proposals
    from meclear_integrations.ledger import HarmLedger
    from tests.support.ledger import clear, memories

    with HarmLedger(tmp_path / "l.db") as ledger:
        for n in ("1", "2"):
            context = memories("g", "stale")
            report = clear(context, {"g"}, {"stale"})
            ledger.record(report, query=n, context=context, trace_run_id=TRACES[n])
        proposals = ledger.review(min_queries=2)
        recorder = LangSmithRecorder()
        with serve(recorder) as url:
            client = Client(api_url=url, api_key="dummy")
            written = langsmith_proposals(ledger, proposals, client=client, session_id=PROJECT)
    feedback = [json.loads(b) for _, p, b in recorder.requests if p == "/feedback"]
    assert len(written) == 2 and {f["key"] for f in feedback} == {PROPOSAL_KEY}
    assert {f["run_id"] for f in feedback} == set(TRACES.values())
    assert all(f["extra"]["memory_id"] == "stale" for f in feedback)


def test_langfuse_scores_reach_the_scores_api(tmp_path) -> None:
    pytest.importorskip("langfuse")
    from langfuse import Langfuse

    from meclear_integrations.exports.langfuse import langfuse_scores

    case, _ = _documents()
    from meclear_integrations import ClearanceConfig, MeClearEngine

    report = MeClearEngine(ClearanceConfig()).clear(case.memories, case.evaluator())
    recorder = _Recorder()
    with serve(recorder) as url:
        from opentelemetry.sdk.trace import TracerProvider

        client = Langfuse(
            public_key="pk-lf-test",
            secret_key="sk-lf-test",
            base_url=url,
            tracer_provider=TracerProvider(),  # its own: no other test's spans go to it
        )
        try:
            written = langfuse_scores(report, "a" * 32, observation_id="b" * 16, client=client)
        finally:
            client.shutdown()
    scores = [s for batch in recorder.bodies("/api/public/scores") for s in batch]  # type: ignore[union-attr]
    assert len(scores) == written == 6 * 2 + 1
    assert {s["traceId"] for s in scores} == {"a" * 32}
    assert {s["observationId"] for s in scores} == {"b" * 16}
    verdicts = {
        s["metadata"]["memory_id"]: s["value"]
        for s in scores
        if s["name"] == "meclear_memory_verdict"
    }
    assert verdicts["f1"] == verdicts["f2"] == "cleared" and verdicts["g1"] == "kept"
    harm = {s["metadata"]["memory_id"]: s for s in scores if s["name"] == "meclear_memory_harm"}
    assert harm["f1"]["dataType"] == "NUMERIC" and harm["f1"]["value"] > 0
    assert [s["value"] for s in scores if s["name"] == "meclear_recovered"] == [1.0]


def test_phoenix_document_annotations_through_its_client() -> None:
    pytest.importorskip("phoenix.client")
    from phoenix.client import Client

    from meclear_integrations.exports.phoenix import NAME, phoenix_document_annotations

    case, _ = _documents()
    from meclear_integrations import ClearanceConfig, MeClearEngine

    report = MeClearEngine(ClearanceConfig()).clear(case.memories, case.evaluator())
    recorder = _Recorder()
    with serve(recorder) as url:
        written = phoenix_document_annotations(report, "c" * 16, client=Client(base_url=url))
    (body,) = recorder.bodies("/v1/document_annotations")
    data = body["data"]  # type: ignore[index]
    assert written == len(data) == len(memory_scores(report))
    assert [a["document_position"] for a in data] == list(range(len(data)))
    assert {a["name"] for a in data} == {NAME} and {a["span_id"] for a in data} == {"c" * 16}
    labels = {a["metadata"]["memory_id"]: a["result"]["label"] for a in data}
    assert labels["f1"] == "cleared" and labels["g1"] == "kept"
