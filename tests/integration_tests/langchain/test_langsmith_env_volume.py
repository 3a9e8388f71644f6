"""``TraceSettings.detail`` governs LangSmith switched on the standard way (environment
variables, no tracer passed), checked at a LangSmith-compatible recorder on 127.0.0.1:
LangChain's callback configuration adds the environment's tracer back to every child run,
so removing tracers alone left 269 runs per clearance at every detail."""

from __future__ import annotations

import email
import email.policy
import json
import threading
from collections import Counter
from typing import Any

import pytest
from langchain_core.tracers.langchain import wait_for_all_tracers
from langsmith import run_trees
from langsmith import utils as ls_utils

from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.langchain.clearing_step import (
    CLEARANCE_RUN_NAME,
    EVALUATE_RUN_NAME,
    default_agent,
)
from meclear_integrations.telemetry import TraceSettings
from tests.support.servers import LangSmithRecorder, serve

FAILURES = 2


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch):
    recorder = LangSmithRecorder()
    with serve(recorder) as url:
        monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
        monkeypatch.setenv("LANGSMITH_API_KEY", "dummy")
        monkeypatch.setenv("LANGSMITH_TRACING", "true")
        monkeypatch.setenv("LANGSMITH_DISABLE_RUN_COMPRESSION", "true")
        ls_utils.get_env_var.cache_clear()
        # the environment's tracer uses the process's cached client: one for this recorder
        monkeypatch.setattr(run_trees, "_CLIENT", None)
        yield recorder
        wait_for_all_tracers()
    ls_utils.get_env_var.cache_clear()


def posted_runs(recorder: LangSmithRecorder) -> dict[str, dict[str, Any]]:
    """Every run the recorder received (``post.<id>`` parts of the multipart batches),
    merged with its ``patch.<id>`` (end) part, by run id."""
    runs: dict[str, dict[str, Any]] = {}
    for method, path, body in list(recorder.requests):
        if method != "POST" or not path.startswith("/runs/multipart"):
            continue
        boundary = body.split(b"\r\n", 1)[0][2:].decode()
        header = f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n".encode()
        message = email.message_from_bytes(header + body, policy=email.policy.HTTP)
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition") or ""
            kind, _, rest = name.partition(".")
            if kind not in ("post", "patch"):
                continue
            run_id, _, field = rest.partition(".")  # ``<id>`` or ``<id>.<field>``
            payload = json.loads(part.get_payload(decode=True) or b"null")
            run = runs.setdefault(run_id, {})
            if field:
                run[field] = payload
            else:
                run.update({k: v for k, v in payload.items() if v is not None})
    return runs


def flaky(llm):  # type: ignore[no-untyped-def]
    """The default agent whose first ``FAILURES`` calls raise a transient error (retried)."""
    chain = default_agent(llm)
    lock, calls = threading.Lock(), [0]

    def failing() -> bool:
        with lock:
            calls[0] += 1
            return calls[0] <= FAILURES

    def run(inputs):  # type: ignore[no-untyped-def]
        if failing():
            raise ConnectionError("connection reset by peer")
        return chain.invoke(inputs)

    async def arun(inputs):  # type: ignore[no-untyped-def]
        if failing():
            raise ConnectionError("connection reset by peer")
        return await chain.ainvoke(inputs)

    from langchain_core.runnables import RunnableLambda

    return RunnableLambda(run, afunc=arun)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("detail", ["evaluations", "failures", "stages"])
async def test_env_tracing_follows_detail(
    recorder, case, inner, llm, detail: str, asynchronous: bool
) -> None:
    retriever = ClearingRetriever(
        retriever=inner, agent=flaky(llm), llm=llm, tracing=TraceSettings(detail=detail)
    )
    config = reference_config(case.reference)  # no tracer passed: the environment's
    if asynchronous:
        out = await retriever.ainvoke(case.query, config=config)
    else:
        out = retriever.invoke(case.query, config=config)
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]
    wait_for_all_tracers()
    runs = posted_runs(recorder)
    names = Counter(r.get("name") for r in runs.values())
    (clearance,) = [r for r in runs.values() if r.get("name") == CLEARANCE_RUN_NAME]
    evaluations = [r for r in runs.values() if r.get("name") == EVALUATE_RUN_NAME]
    failed = [r for r in evaluations if r.get("error")]
    models = [r for r in runs.values() if r.get("run_type") in ("llm", "chat_model")]
    if detail == "evaluations":
        assert len(evaluations) >= 52 and len(failed) == FAILURES and models, names
        tags = {tag for r in models for tag in r.get("tags", [])}
        assert "meclear:internal" in tags  # internal runs are tagged for filtering
    elif detail == "failures":
        # the retriever, its inner retriever, the clearance run and the failed calls
        assert len(runs) == 3 + FAILURES <= 5, names
        assert len(failed) == len(evaluations) == FAILURES
        assert all(r["parent_run_id"] == clearance["id"] for r in failed)
        assert all("connection reset" in r["error"] for r in failed)
        assert not models
    else:
        assert len(runs) == 3 and not evaluations and not models, names
    # the clearance run's outputs are always there
    assert clearance["outputs"]["cleared_ids"] == ["f1", "f2"]


def test_env_tracing_untouched_outside_the_clearance(recorder, case, llm) -> None:
    """The user's own model runs after a clearance are traced as usual (the quiet context
    does not leak)."""
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    retriever = ClearingRetriever(retriever=RunnableLambda(lambda q: list(docs)), llm=llm)
    retriever.invoke(case.query, config=reference_config(case.reference))
    llm.invoke("What is the capital of France?")
    wait_for_all_tracers()
    runs = posted_runs(recorder)
    models = [r for r in runs.values() if r.get("run_type") in ("llm", "chat_model")]
    assert len(models) == 1 and not models[0].get("parent_run_id")
