"""Model specs, the response cache and the call gate of real-model runs, against the
stand-in served on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from meclear_bench.cache import CachedReply, ResponseCache, cache_key
from meclear_bench.model_client import (
    CallGate,
    CallLimits,
    CallMeter,
    ModelClient,
    metering,
)
from meclear_bench.model_spec import TEXT_READER, ModelSpec, is_import_path
from meclear_bench.reader_server import ReaderServer, serve_reader
from meclear_bench.stopping import BudgetReached, ProviderRejected, stop_cause
from meclear_integrations.core.errors import EvaluatorError, RedactedError
from meclear_integrations.core.failures.faults import is_transient
from meclear_integrations.judges import ReferenceLLMJudge
from meclear_integrations.judges.parsing import VERDICT_SCHEMA
from meclear_integrations.judges.protocol import reference_prompt

PROMPT = reference_prompt("Where is Ana?", "Lisbon", "Lisbon", structured=True)


@pytest.fixture
def server() -> Iterator[tuple[str, ReaderServer]]:
    with serve_reader() as served:
        yield served


def _client(url: str, gate: CallGate, role: str = "judge", **spec: object) -> ModelClient:
    return ModelClient(role, ModelSpec(name="stub", base_url=url, **spec), gate)  # type: ignore[arg-type]


# ---------------------------------------------------------------- specs
def test_model_names_and_import_paths() -> None:
    assert is_import_path("langchain_openai:ChatOpenAI")
    assert not is_import_path("qwen2.5:7b") and not is_import_path("mistral:latest")
    assert not is_import_path("gpt-4o-mini")
    assert ModelSpec(name="langchain_anthropic:ChatAnthropic").provider == "langchain"
    assert ModelSpec(name=TEXT_READER).provider == "text-reader"
    assert "stand-in" in ModelSpec(name=TEXT_READER).label


def test_keys_never_reach_labels_or_cache_identities() -> None:
    spec = ModelSpec(
        name="langchain_openai:ChatOpenAI",
        kwargs={"model": "m", "api_key": "sk-secret", "temperature": 0.3},
    )
    assert "sk-secret" not in spec.label and "sk-secret" not in str(spec.identity())
    assert spec.effective_temperature == 0.3 and not spec.deterministic
    other = spec.model_copy(update={"kwargs": {"model": "m", "temperature": 0.3}})
    assert other.identity() == spec.identity()  # the key is not part of the model
    local = ModelSpec(name="m", base_url="http://127.0.0.1:1/v1")
    remote = local.model_copy(update={"base_url": "http://127.0.0.1:2/v1"})
    assert local.identity() == remote.identity()  # the endpoint is not part of the model


def test_missing_key_and_unknown_classes_say_what_to_do(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        ModelSpec(name="gpt-4o-mini").build()
    with pytest.raises(ImportError, match="pip install no-such-package"):
        ModelSpec(name="no_such_package.chat:Model").build()
    with pytest.raises(ValueError, match="not a LangChain chat model"):
        ModelSpec(name="pathlib:Path").build()


def test_any_langchain_chat_model_by_import_path(tmp_path: Path) -> None:
    spec = ModelSpec(
        name="langchain_core.language_models.fake_chat_models:FakeListChatModel",
        kwargs={"responses": ["Lisbon"]},
    )
    client = ModelClient("agent", spec, CallGate(ResponseCache()), structured_output=False)
    assert client.complete("Where is Ana?") == "Lisbon"
    assert client.gate.totals.provider_calls == 1 and client.gate.totals.estimated_tokens


# ---------------------------------------------------------------- cache
def test_cache_keys_separate_models_kinds_schemas_and_draws(tmp_path: Path) -> None:
    a = {"provider": "openai", "name": "m"}
    keys = {
        cache_key(a, kind="text", prompt="p"),
        cache_key({**a, "name": "n"}, kind="text", prompt="p"),
        cache_key(a, kind="json", prompt="p", schema={"x": 1}),
        cache_key(a, kind="json", prompt="p", schema={"x": 2}),
        cache_key(a, kind="text", prompt="p", draw=1),
        cache_key(a, kind="text", prompt="q"),
    }
    assert len(keys) == 6
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("k", model="m", kind="json", reply=CachedReply({"correct": True}, 3, 1, False))
    with ResponseCache(path) as reopened:  # on disk, committed at once
        assert reopened.get("k") == CachedReply({"correct": True}, 3, 1, False)
        assert reopened.get("other") is None and len(reopened) == 1


# ---------------------------------------------------------------- calls
def test_a_cached_reply_costs_no_call_but_is_charged_at_its_price(server) -> None:
    url, state = server
    gate = CallGate(ResponseCache())
    client = _client(url, gate)
    assert client.structured
    first, second = CallMeter(), CallMeter()
    with metering(first):
        verdict = client.complete_json(PROMPT, VERDICT_SCHEMA)
    with metering(second):
        assert client.complete_json(PROMPT, VERDICT_SCHEMA) == verdict
    assert verdict["correct"] is True and state.calls == 1
    assert gate.totals.provider_calls == 1 and gate.totals.cache_hits == 1
    assert first.judge_calls == second.judge_calls == 1
    assert first.prompt_tokens == second.prompt_tokens == -(-len(PROMPT) // 4)


def test_free_text_verdicts_are_cached_across_nonces(server) -> None:
    url, state = server
    gate = CallGate(ResponseCache())
    client = ModelClient(
        "judge", ModelSpec(name="stub", base_url=url), gate, structured_output=False
    )
    judge = ReferenceLLMJudge(client.text_model())
    verdicts = [judge.score("Where is Ana?", "Lisbon", reference="Lisbon") for _ in range(3)]
    assert [v.score for v in verdicts] == [1.0, 1.0, 1.0]  # each read under its own nonce
    assert state.calls == 1 and gate.totals.cache_hits == 2
    assert judge.score("Where is Ana?", "Porto", reference="Lisbon").score == 0.0


def test_sampled_draws_are_separate_calls(server) -> None:
    url, state = server
    client = _client(url, CallGate(ResponseCache()), role="agent", temperature=0.7)
    for draw in (0, 1, 1, 0):
        client.complete("<question>\nWhere?\n</question>", draw=draw)
    assert state.calls == 2


def test_concurrent_identical_calls_are_made_once(server) -> None:
    url, state = server
    client = _client(url, CallGate(ResponseCache(), concurrency=8))
    threads = [
        threading.Thread(target=client.complete_json, args=(PROMPT, VERDICT_SCHEMA))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state.calls == 1


def test_budget_stops_before_the_call_past_it(server) -> None:
    url, state = server
    gate = CallGate(ResponseCache(), limits=CallLimits(max_calls=2))
    client = _client(url, gate, role="agent")
    client.complete("one")
    client.complete("two")
    with pytest.raises(BudgetReached) as info:
        client.complete("three")
    assert info.value.reason == "max_calls" and state.calls == 2
    client.complete("one")  # cached replies stay free
    wrapped = EvaluatorError("evaluator raised", coalition=("a",), trial=0)
    wrapped.__cause__ = info.value
    assert stop_cause(wrapped) is info.value


def test_transient_errors_are_retried_and_permanent_ones_surface(tmp_path: Path) -> None:
    with serve_reader(fail=lambda p, n: 429 if n <= 2 else None) as (url, state):
        gate = CallGate(ResponseCache())
        assert _client(url, gate, role="agent").complete("hi")
        assert gate.totals.retries >= 2 and gate.totals.provider_calls == 1
    with serve_reader(fail=lambda p, n: 500) as (url, state):
        gate = CallGate(ResponseCache())
        with pytest.raises(RedactedError) as info:
            _client(url, gate, role="agent").complete("hi")
        assert not is_transient(info.value)  # retried here: the engine must not again
        assert gate.totals.failed_calls == 1 and state.calls >= gate.retry.max_attempts
    with serve_reader(fail=lambda p, n: 401) as (url, state):
        with pytest.raises(ProviderRejected, match="HTTP 401"):
            _client(url, CallGate(ResponseCache()), role="agent").complete("hi")
        assert state.calls == 1  # a refusal is never retried


def test_a_token_cap_reaches_a_compatible_server_and_the_cache_identity() -> None:
    # langchain-openai sends max_tokens as max_completion_tokens, which llama.cpp ignores
    spec = ModelSpec(name="m", base_url="http://127.0.0.1:9/v1", kwargs={"max_tokens": 48})
    model = spec.build()
    assert model.max_tokens == 48 and model.extra_body == {"max_tokens": 48}
    assert spec.identity()["kwargs"] == {"max_tokens": 48}  # replies depend on the cap
    keyed = ModelSpec(name="m", kwargs={"max_tokens": 48, "api_key": "sk-x", "access_token": "t"})
    assert keyed.identity()["kwargs"] == {"max_tokens": 48}  # secrets stay out
