"""Per-memory scores as Phoenix document annotations on the retriever (or reranker) span.

Phoenix shows a retrieval span's documents with their annotations; an annotation names the
span (its OpenTelemetry span id, 16 hex characters) and the document's position in it. One
clearance writes, per memory, a ``meclear harm`` annotation (``score`` = harm, ``-psi_i``;
``label`` = the verdict; ``explanation`` = a one-line summary; ``metadata`` = the memory's
id, content hash and interval, never its text) at the memory's position in the retrieval
order: the position of its document on the span that lists the retrieved documents.

Needs the ``phoenix`` extra (``pip install 'meclear-integrations[phoenix]'``: the light
``arize-phoenix-client``, not the server); the client defaults to
``phoenix.client.Client()`` (``PHOENIX_COLLECTOR_ENDPOINT`` / ``PHOENIX_API_KEY``).
"""

from __future__ import annotations

from typing import Any

from .scores import memory_scores

__all__ = ["NAME", "phoenix_annotations", "phoenix_document_annotations"]

NAME = "meclear harm"
"""Annotation name of the per-memory harm scores."""


def phoenix_annotations(source: Any, span_id: str, *, name: str = NAME) -> list[dict[str, Any]]:
    """The document annotations of one clearance (Phoenix's ``SpanDocumentAnnotationData``).

    Args:
        source: A ``ClearanceReport`` or a ledger ``RunRecord``.
        span_id: The retriever span's id (16 hex characters).
        name: The annotation name.

    Returns:
        One annotation per memory, at its document position.
    """
    annotations: list[dict[str, Any]] = []
    for score in memory_scores(source):
        result: dict[str, Any] = {"label": score.verdict, "explanation": score.comment()}
        if score.harm is not None:
            result["score"] = score.harm
        annotations.append(
            {
                "name": name,
                "span_id": span_id,
                "document_position": score.position,
                "annotator_kind": "CODE",
                "result": result,
                "metadata": score.fields(),  # no identifier: Phoenix rejects one on documents
            }
        )
    return annotations


def phoenix_document_annotations(
    source: Any, span_id: str, *, client: Any = None, name: str = NAME
) -> int:
    """Write one clearance's per-memory scores as document annotations on a span.

    Args:
        source: A ``ClearanceReport`` or a ledger ``RunRecord``.
        span_id: The retriever span's id (16 hex characters).
        client: A ``phoenix.client.Client`` (default: one from the environment).
        name: The annotation name.

    Returns:
        The number of annotations written.
    """
    if client is None:
        try:
            from phoenix.client import Client
        except ImportError as exc:
            raise ImportError(
                "Phoenix export needs the phoenix extra: "
                "pip install 'meclear-integrations[phoenix]'"
            ) from exc
        client = Client()
    annotations = phoenix_annotations(source, span_id, name=name)
    if annotations:
        client.spans.log_document_annotations(document_annotations=annotations, sync=True)
    return len(annotations)
