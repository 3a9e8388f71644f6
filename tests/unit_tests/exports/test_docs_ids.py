"""docs/exports.md says where every id an export takes comes from: each ``*_id`` parameter of
the export functions has a row in its "Where each id comes from" table, and the expressions
the table gives for OpenTelemetry ids produce ids of the length it states."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from meclear_integrations.exports import langfuse, langsmith, phoenix

DOC = Path(__file__).resolve().parents[3] / "docs" / "exports.md"
FUNCTIONS = (
    langsmith.langsmith_scores,
    langsmith.langsmith_proposals,
    langfuse.langfuse_scores,
    phoenix.phoenix_annotations,
    phoenix.phoenix_document_annotations,
)


def _table() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Where each id comes from", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("id", "---"):
            rows[cells[0]] = cells[2]
    return rows


def test_every_id_parameter_has_a_row() -> None:
    rows = _table()
    named = {re.sub(r"`([^`]+)`.*", r"\1", key) for key in rows}
    params = {
        name
        for fn in FUNCTIONS
        for name in inspect.signature(fn).parameters
        if name.endswith("_id")
    }
    assert params == {"run_id", "session_id", "trace_id", "observation_id", "span_id"}
    assert params <= named, params - named
    for needed in ("ledger run id", "clearance span id", "trace id (Phoenix)"):
        assert needed in rows and len(rows[needed]) > 40


def test_the_otel_expressions_give_the_stated_lengths() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    span = TracerProvider().get_tracer("t").start_span("retriever")
    context = span.get_span_context()
    text = DOC.read_text(encoding="utf-8")
    assert 'format(span.context.span_id, "016x")' in text
    assert 'format(trace.get_current_span().get_span_context().trace_id, "032x")' in text
    assert re.fullmatch(r"[0-9a-f]{16}", format(context.span_id, "016x"))
    assert re.fullmatch(r"[0-9a-f]{32}", format(context.trace_id, "032x"))
    span.end()
