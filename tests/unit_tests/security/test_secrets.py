"""Secrets stay out of every exit: one test per credential format, no false alarm on
ordinary text, ids or hashes, and the agent's answers, exception chains and logs redacted."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import string
import traceback
import uuid

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core import EvaluatorError
from meclear_integrations.core.redaction import REDACTED, redact, redact_payload
from meclear_integrations.judges import CallableJudge, ExactMatchJudge
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.llama_index import MeClearPostprocessor
from meclear_integrations.runtime.payloads import content_memory_id
from meclear_integrations.telemetry import TraceSettings

_rng = random.Random(12)


def _chars(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
SECRETS = {
    "openai": "sk-proj-" + _chars(ALNUM, 40),
    "anthropic": "sk-ant-api03-" + _chars(ALNUM + "-_", 40),
    "stripe-live": "sk_live_" + _chars(ALNUM, 24),
    "stripe-restricted": "rk_test_" + _chars(ALNUM, 24),
    "groq": "gsk_" + _chars(ALNUM, 52),
    "gitlab": "glpat-" + _chars(ALNUM + "-_", 20),
    "google-oauth": "ya29." + _chars(ALNUM + "-_", 60),
    "google-api": "AIza" + _chars(ALNUM + "-_", 35),
    "perplexity": "pplx-" + _chars(ALNUM, 48),
    "replicate": "r8_" + _chars(ALNUM, 37),
    "xai": "xai-" + _chars(ALNUM, 60),
    "langsmith": "lsv2_pt_" + _chars(ALNUM, 32),
    "huggingface": "hf_" + _chars(ALNUM, 34),
    "github": "ghp_" + _chars(ALNUM, 36),
    "github-fine-grained": "github_pat_" + _chars(ALNUM + "_", 60),
    "slack": "xoxb-" + _chars(string.digits, 12) + "-" + _chars(ALNUM, 24),
    "aws": "AKIA" + _chars(string.ascii_uppercase + string.digits, 16),
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + _chars(ALNUM, 30) + "." + _chars(ALNUM + "-_", 30),
    "high-entropy": "Zq3" + _chars(ALNUM, 37),
}
HEADERS = {
    "authorization": "Authorization: Bearer {secret}",
    "proxy-authorization": "Proxy-Authorization: Basic {secret}",
    "azure": "Ocp-Apim-Subscription-Key: {secret}",
    "x-api-key": "x-api-key: {secret}",
    "api-key-json": '{{"api_key": "{secret}"}}',
    "password-pair": "password={secret}",
    "url": "https://alice:{secret}@api.example.com/v1",
}
PLAIN_SECRET = "correct-horse-battery-staple"  # no format of its own: found by its key


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_provider_format_is_redacted(name: str) -> None:
    secret = SECRETS[name]
    text = f"upstream said: invalid credential {secret}, retry later"
    out = redact(text)
    assert secret not in out and REDACTED in out and out.startswith("upstream said")


@pytest.mark.parametrize("name", sorted(HEADERS))
def test_each_header_and_pair_format_is_redacted(name: str) -> None:
    text = "request failed: " + HEADERS[name].format(secret=PLAIN_SECRET)
    out = redact(text)
    assert PLAIN_SECRET not in out and REDACTED in out


ORDINARY = [
    "John was in Italy in December 2023; he flew back on 2024-01-07 at 10:00.",
    "The meeting moved from Tuesday to Thursday (see ticket OPS-4521).",
    content_memory_id("a memory text"),
    content_memory_id("another") + "#2",
    str(uuid.UUID(int=_rng.getrandbits(128))),
    hashlib.sha256(b"x").hexdigest(),
    hashlib.md5(b"y").hexdigest().upper(),
    "locomo-conv-26-session-3-dia-12",
    "ThisIsAVeryLongCamelCaseIdentifier2",
    "getUserAccountBalanceForYear2024Q3",
    "RFC2616-Section14-Header-Field-Definitions",
    "https://example.com/docs/getting-started/InstallationGuide2024",
    "/home/user/projects/meclear/tests/security/test_secrets.py",
    "state-of-the-art-retrieval-augmented-generation",
    "ISO8601 2023-12-01T10:00:00Z, amount 1234567890123456789012345",
    "tokenizer settings: vocab 32000, a secret of good cooking is patience.",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_ids_and_hashes_are_not_redacted(text: str) -> None:
    assert redact(text) == text
    assert redact_payload({"memory_id": text, "ids": [text]}) == {"memory_id": text, "ids": [text]}


KEY = SECRETS["openai"]


def test_the_agents_answer_in_trace_outputs_is_redacted() -> None:
    """A memory holding a key; the agent repeats it; the meclear_evaluate run outputs
    (what a tracing backend stores) must not hold it."""
    docs = [
        Document(page_content="John was in Italy in December 2023.", id="g"),
        Document(page_content=f"the deploy key is {KEY}", id="k"),
    ]

    def agent(inputs: dict) -> str:
        return f"December 2023 (key {KEY})" if "deploy key" in inputs["context"] else "?"

    collector = RunCollectorCallbackHandler()
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        agent=RunnableLambda(agent),
        judge=CallableJudge(lambda answer: "December 2023" in answer),
        clearance=ClearanceConfig(estimator="exact"),
        tracing=TraceSettings(detail="evaluations"),  # every evaluation's outputs traced
    )
    retriever.invoke("When?", config={"callbacks": [collector]})
    evaluate_runs = [
        r for root in collector.traced_runs for r in _walk(root) if r.name == "meclear_evaluate"
    ]
    assert evaluate_runs
    outputs = json.dumps([r.outputs for r in evaluate_runs])
    assert KEY not in outputs and REDACTED in outputs


def _walk(run):  # type: ignore[no-untyped-def]
    yield run
    for child in run.child_runs:
        yield from _walk(child)


def _leaking_judge(answer: str) -> float:
    raise RuntimeError(f"401 from provider: Authorization: Bearer {KEY}")


def test_the_exception_chain_of_a_fail_closed_run_is_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def evaluate(coalition, trial):  # type: ignore[no-untyped-def]
        try:
            raise ConnectionError(f"connect failed with api_key={KEY}")
        except ConnectionError as exc:
            raise ValueError(f"wrapped: token {KEY}") from exc

    memories = [Memory(id="a", content="x"), Memory(id="b", content="y")]
    with pytest.raises(EvaluatorError) as info:
        config = ClearanceConfig(
            failure={"mode": "closed", "retry": {"initial_backoff": 0.0, "jitter": 0.0}}
        )
        MeClearEngine(config).clear(memories, evaluate)
    printed = "".join(traceback.format_exception(info.value))
    assert KEY not in printed and REDACTED in printed
    assert isinstance(info.value.__cause__, ValueError)  # types are kept where possible
    logging.getLogger("app").exception("clearance failed", exc_info=info.value)
    assert KEY not in caplog.text


def test_llama_index_fail_closed_error_and_its_cause_hold_no_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from llama_index.core.llms import MockLLM

    nodes = [NodeWithScore(node=TextNode(id_=f"n{i}", text=f"text {i}")) for i in range(2)]
    postprocessor = MeClearPostprocessor(
        llm=MockLLM(), judge=CallableJudge(_leaking_judge), reference="x", on_failure="closed"
    )
    with pytest.raises(Exception) as info:
        postprocessor.postprocess_nodes(nodes, query_str="q")
    logging.getLogger("app").exception("postprocessing failed", exc_info=info.value)
    assert KEY not in "".join(traceback.format_exception(info.value))
    assert KEY not in caplog.text


def test_langchain_fail_closed_error_holds_no_secret() -> None:
    docs = [Document(page_content=f"t{i}", id=f"d{i}") for i in range(2)]
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        llm=RunnableLambda(lambda p: "x"),
        judge=CallableJudge(_leaking_judge),
        on_failure="closed",
    )
    with pytest.raises(Exception) as info:
        retriever.invoke("q", config=reference_config("x"))
    assert KEY not in "".join(traceback.format_exception(info.value))


def test_a_rejected_score_names_no_secret_and_serialises() -> None:
    memories = [Memory(id="a", content="x", metadata={"obj": object(), "when": {1, 2}})]
    report = MeClearEngine().clear(memories, lambda c, t: f"score {KEY}")
    assert report.failed and KEY not in report.model_dump_json()
    assert ExactMatchJudge().score("q", "a", reference="a").score == 1.0
