"""The bench's real-model judge against a llama.cpp server stub: ``--judge-output auto``
falls back from json_schema (HTTP 500) to JSON mode at once, never retrying the rejection."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from meclear_bench.cache import ResponseCache
from meclear_bench.model_client import CallGate, ModelClient
from meclear_bench.model_spec import ModelSpec
from meclear_bench.real_query import judge_for
from meclear_integrations.core.config import RetryPolicy
from meclear_integrations.judges.model import ENDPOINT_FORMATS
from tests.support.llama_cpp_stub import LlamaCppStub
from tests.support.servers import serve


@pytest.fixture(autouse=True)
def _fresh_endpoints(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    ENDPOINT_FORMATS.clear()
    yield
    ENDPOINT_FORMATS.clear()


def _gate() -> CallGate:
    retry = RetryPolicy(max_attempts=4, initial_backoff=0.0, jitter=0.0, retry_unreadable=False)
    return CallGate(ResponseCache(":memory:"), retry=retry)


def test_the_bench_judge_falls_back_to_json_mode_without_retrying() -> None:
    stub = LlamaCppStub()
    with serve(stub) as url:
        gate = _gate()
        client = ModelClient("judge", ModelSpec(name="smollm2", base_url=f"{url}/v1"), gate)
        judge = judge_for(client, "reference")
        right = judge.score("When?", "December 2023", reference="December 2023")
        wrong = judge.score("When?", "Paris", reference="December 2023")
    assert (right.score, wrong.score) == (1.0, 0.0)
    assert stub.kinds() == ["json_schema", "json_object", "json_object"]
    totals = gate.totals.as_dict()
    assert totals["retries"] == 0 and totals["failed_calls"] == 1
    assert totals["provider_calls"] == 2 and totals["tokens_estimated"] is False


def test_judge_output_text_reads_the_small_model_through_the_one_word_call() -> None:
    stub = LlamaCppStub()
    with serve(stub) as url:
        gate = _gate()
        spec = ModelSpec(name="smollm2", base_url=f"{url}/v1")
        client = ModelClient("judge", spec, gate, structured_output=False)
        verdict = judge_for(client, "reference").score("When?", "Paris", reference="Paris")
    assert (verdict.score, verdict.parsed_by) == (1.0, "word")
    assert stub.kinds() == ["text", "text"]  # the nonce reply (a bare label), then one word
