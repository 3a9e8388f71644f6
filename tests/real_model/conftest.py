"""The ``real_model`` tier: the package on a real chat model served on 127.0.0.1.

The server is the one ``tools/local_model.sh start`` runs (llama.cpp's OpenAI-compatible
server over a GGUF file from a PyPI package); ``.ci/run`` starts it when its cached runtime
exists and exports ``MECLEAR_REAL_MODEL_BASE_URL`` and ``MECLEAR_REAL_MODEL_NAME``. Without
them every test of the tier is skipped with a one-line reason. Agent and judge are both the
real model; the tests assert what holds for a tiny model (each flow completes and does not
fail open on a parse or format error; contributions and no-verdict counts are reported),
never answer quality.
"""

from __future__ import annotations

import json
import os
import urllib.request
from dataclasses import dataclass

import pytest

SKIP_REASON = (
    "real_model tier skipped: no local model server (MECLEAR_REAL_MODEL_BASE_URL unset; "
    "`tools/local_model.sh start` prints it)"
)
MAX_TOKENS = 48
"""Completion tokens per call: short answers and verdicts; keeps a 135M model's rambles short."""


@dataclass(frozen=True)
class RealModel:
    """Where the real model is served."""

    base_url: str
    """OpenAI-compatible endpoint (ends in ``/v1``)."""
    name: str
    """The served model's name."""


@pytest.fixture(scope="session")
def real_model() -> RealModel:
    """The served model; skips the tier when none is configured, fails when it is down."""
    base = os.environ.get("MECLEAR_REAL_MODEL_BASE_URL")
    if not base:
        pytest.skip(SKIP_REASON)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(base.rstrip("/") + "/models", timeout=120) as reply:  # down: an error
        served = [m["id"] for m in json.load(reply)["data"]]
    name = os.environ.get("MECLEAR_REAL_MODEL_NAME") or served[0]
    return RealModel(base.rstrip("/"), name)


@pytest.fixture
def chat_openai(real_model: RealModel):
    """A LangChain ``ChatOpenAI`` on the served model (temperature 0, short replies)."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=real_model.name,
        base_url=real_model.base_url,
        api_key="not-needed",
        temperature=0,
        max_tokens=MAX_TOKENS,
        timeout=120,
        max_retries=1,
    )


@pytest.fixture
def openai_like(real_model: RealModel):
    """A LlamaIndex ``OpenAILike`` chat model on the served model."""
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=real_model.name,
        api_base=real_model.base_url,
        api_key="not-needed",
        is_chat_model=True,
        temperature=0,
        max_tokens=MAX_TOKENS,
        timeout=120,
        max_retries=1,
        context_window=4096,
    )
