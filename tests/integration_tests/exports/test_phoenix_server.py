"""Per-memory scores in a real Arize Phoenix (opt-in: needs a running server).

``arize-phoenix`` takes minutes to install with many dependencies, so it is not in the
default install and this test is skipped unless ``MECLEAR_TEST_PHOENIX_URL`` names a
running Phoenix, e.g.::

    python -m venv /tmp/phoenix && /tmp/phoenix/bin/pip install arize-phoenix
    PHOENIX_PORT=16006 PHOENIX_GRPC_PORT=14317 /tmp/phoenix/bin/phoenix serve &
    MECLEAR_TEST_PHOENIX_URL=http://127.0.0.1:16006 \\
        python -m pytest tests/integration_tests/exports/test_phoenix_server.py

It runs ``cookbook/phoenix_review.py`` against that server, then reads the retriever span's
document evaluations back through Phoenix's GraphQL API: one ``meclear harm`` annotation
per retrieved document, the two stale records labelled ``cleared`` at their positions. With
Debian's ``chromium`` installed it also screenshots the span's page in Phoenix's UI.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

URL = os.environ.get("MECLEAR_TEST_PHOENIX_URL", "").rstrip("/")
COOKBOOK = Path(__file__).resolve().parents[3] / "cookbook" / "phoenix_review.py"

pytestmark = [
    pytest.mark.skipif(not URL, reason="no Phoenix server (set MECLEAR_TEST_PHOENIX_URL)"),
    pytest.mark.enable_socket,
]


def _cookbook():
    spec = importlib.util.spec_from_file_location("phoenix_review", COOKBOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_document_annotations_show_on_the_retriever_span(tmp_path: Path) -> None:
    pytest.importorskip("phoenix.client")
    pytest.importorskip("openinference.instrumentation.langchain")
    import httpx
    from phoenix.client import Client

    cookbook = _cookbook()
    shot = tmp_path / "span.png" if shutil.which("chromium") else None
    result = cookbook.main(URL, shot)
    assert result["annotations"] == 6 and result["kept"] == ["g1", "b1", "b2", "b3"]
    (span,) = Client(base_url=URL).spans.get_spans(
        project_identifier=cookbook.PROJECT, span_ids=[result["span_id"]]
    )
    assert span["name"] == "VectorStoreRetriever"
    fields = "numDocuments documentEvaluations { name label score documentPosition }"
    query = '{ node(id: "' + span["id"] + '") { ... on Span { ' + fields + " } } }"
    node = httpx.post(f"{URL}/graphql", json={"query": query}, timeout=30).json()["data"]["node"]
    assert node["numDocuments"] == 6
    mine = [e for e in node["documentEvaluations"] if e["name"] == "meclear harm"]
    labels = {result["order"][e["documentPosition"]]: e["label"] for e in mine}
    assert labels == {
        "f1": "cleared",
        "f2": "cleared",
        **dict.fromkeys(["g1", "b1", "b2", "b3"], "kept"),
    }
    scores = {result["order"][e["documentPosition"]]: e["score"] for e in mine}
    assert scores["f1"] > 0 and scores["f2"] > 0 and scores["g1"] < 0
    assert result["url"].startswith(f"{URL}/projects/") and span["id"] in result["url"]
    if shot is not None:  # headless Chromium rendered the span's page
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
