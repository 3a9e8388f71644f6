"""LangSmith tracing pointed at a recorder on 127.0.0.1 stores the clearance decision."""

from __future__ import annotations

import re

import pytest
from langchain_core.tracers.langchain import LangChainTracer, wait_for_all_tracers
from langsmith import Client
from langsmith import utils as ls_utils

from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.langchain.clearing_step import CLEARANCE_RUN_NAME
from tests.support.servers import LangSmithRecorder, serve


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch):
    recorder = LangSmithRecorder()
    with serve(recorder) as url:
        monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
        monkeypatch.setenv("LANGSMITH_API_KEY", "dummy")
        monkeypatch.setenv("LANGSMITH_TRACING", "true")
        monkeypatch.setenv("LANGSMITH_DISABLE_RUN_COMPRESSION", "true")
        ls_utils.get_env_var.cache_clear()
        yield recorder
    ls_utils.get_env_var.cache_clear()


def test_posted_payload_holds_contributions_and_cleared_ids(recorder, case, inner, llm) -> None:
    client = Client()  # endpoint and key from LANGSMITH_ENDPOINT / LANGSMITH_API_KEY
    assert client.api_url.startswith("http://127.0.0.1:")
    tracer = LangChainTracer(client=client, project_name="meclear-test")
    retriever = ClearingRetriever(retriever=inner, llm=llm)
    config = reference_config(case.reference, {"callbacks": [tracer]})
    out = retriever.invoke(case.query, config=config)
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]
    wait_for_all_tracers()
    client.flush()
    body = recorder.body.decode("utf-8", "replace")
    assert recorder.requests, "nothing was posted to the recorder"
    assert CLEARANCE_RUN_NAME in body
    # The clearance run's outputs: contributions and the cleared ids.
    assert re.search(r'"cleared_ids":\s*\[\s*"f1",\s*"f2"\s*\]', body)
    assert re.search(r'"contributions":\s*\{\s*"g1":\s*\{\s*"loo_effect"', body)
    assert '"shapley":' in body and '"harmful":true' in body.replace(" ", "")
    # The retriever run's outputs: the returned documents with their metadata.
    assert '"meclear":' in body and '"memory_id":"g1"' in body.replace(" ", "")
