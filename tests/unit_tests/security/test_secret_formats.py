"""Round 2 of the secrets suite: hex-bodied key formats (Azure OpenAI, DigitalOcean,
Databricks, Shopify, Twilio, Mailgun) and a provider's 401 text repeated verbatim with a
short key; none of them reaches a span, even with ``capture_content=True``."""

from __future__ import annotations

import hashlib
import random
import string
import traceback
from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations import MeClearEngine, Memory
from meclear_integrations.core.redaction import REDACTED, redact
from meclear_integrations.judges import CallableJudge
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.telemetry import TraceSettings
from tests.unit_tests.telemetry.conftest import Traces

_rng = random.Random(28)
HEX = "0123456789abcdef"


def _chars(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


HEX_SECRETS = {
    "azure-openai": ("AZURE_OPENAI_API_KEY={s}", _chars(HEX, 32)),
    "azure-openai-prose": ("the Azure key for prod is {s}", _chars(HEX, 32)),
    "digitalocean": ("token {s}", "dop_v1_" + _chars(HEX, 64)),
    "digitalocean-oauth": ("{s}", "doo_v1_" + _chars(HEX, 64)),
    "databricks": ("{s}", "dapi" + _chars(HEX, 32)),
    "databricks-suffix": ("{s}", "dapi" + _chars(HEX, 32) + "-2"),
    "shopify": ("{s}", "shpat_" + _chars(HEX, 32)),
    "shopify-secret": ("{s}", "shpss_" + _chars(HEX, 32)),
    "twilio": ("{s}", "SK" + _chars(HEX, 32)),
    "mailgun": ("{s}", "key-" + _chars(string.ascii_letters + string.digits, 32)),
    "masked-openai": ("{s}", "sk-proj-********************" + _chars(HEX, 4)),
}


@pytest.mark.parametrize("name", sorted(HEX_SECRETS))
def test_each_hex_bodied_format_is_redacted(name: str) -> None:
    template, secret = HEX_SECRETS[name]
    out = redact("upstream said: " + template.format(s=secret) + ", retry later")
    assert secret not in out and REDACTED in out and out.startswith("upstream said")


OPENAI_401 = (
    "Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-abc12. "
    "You can find your API key at https://platform.openai.com/account/api-keys.', "
    "'type': 'invalid_request_error', 'param': None, 'code': 'invalid_api_key'}}"
)
SHORT_KEY = "sk-abc12"
OTHER_401 = [
    ("invalid api key: k3y9", "k3y9"),
    ("Unauthorized: invalid token = tok_77", "tok_77"),
    ("401 Access denied due to invalid subscription key: 0f0f1234", "0f0f1234"),
]


@pytest.mark.parametrize(("body", "key"), [(OPENAI_401, SHORT_KEY), *OTHER_401])
def test_a_401_body_repeated_verbatim_keeps_no_short_key(body: str, key: str) -> None:
    out = redact(body)
    assert key not in out and REDACTED in out


class _Unauthorized(Exception):
    status_code = 401


def test_a_401_through_the_chain_raises_without_the_short_key() -> None:
    """Configuration errors stay loud, but the message carries no key."""

    def agent(prompt: object) -> str:
        raise _Unauthorized(OPENAI_401)

    docs = [Document(page_content=f"t{i}", id=f"d{i}") for i in range(2)]
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        llm=RunnableLambda(agent),
        judge=CallableJudge(lambda answer: 1.0),
    )
    with pytest.raises(Exception) as info:
        retriever.invoke("q", config=reference_config("x"))
    printed = "".join(traceback.format_exception(info.value))
    assert "401" in str(info.value)
    assert SHORT_KEY not in printed


ORDINARY_HEX = [
    hashlib.md5(b"y").hexdigest(),
    f"checksum {hashlib.md5(b'z').hexdigest()} matches",
    "commit 3f2a9c1 fixed the build; see 0123456789abcdef0123456789abcdef0123 (40 hex)",
    "the keynote was on 2024-01-07",
]


@pytest.mark.parametrize("text", ORDINARY_HEX)
def test_hashes_without_a_credential_word_are_kept(text: str) -> None:
    assert redact(text) == text


@pytest.fixture
def traces() -> Iterator[Traces]:
    yield Traces()


def test_no_format_reaches_a_span_with_capture_content(traces: Traces) -> None:
    memories = [
        Memory(id=f"m-{name}", content=template.format(s=secret))
        for name, (template, secret) in sorted(HEX_SECRETS.items())
    ]
    memories.append(Memory(id="401", content=OPENAI_401))
    tracing = TraceSettings(capture_content=True, tracer_provider=traces.provider)
    MeClearEngine(tracing=tracing).clear(memories, lambda coalition, trial: 1.0)
    text = traces.texts()
    assert "reranker.input_documents.0.document.content" in str(
        traces.one("meclear.clearance").attributes
    )
    for _, secret in HEX_SECRETS.values():
        assert secret not in text
    assert SHORT_KEY not in text
