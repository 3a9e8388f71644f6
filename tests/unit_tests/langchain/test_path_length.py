"""The library's path for one simulated ``ClearingRetriever.invoke`` stays short.

Measured by ``tools/path_length.py`` (a ``sys.setprofile`` hook over the second of two
identical queries on the simulated model). The bounds pin today's path so that a change
that lengthens it shows here; lower them as the path shrinks.
"""

from __future__ import annotations

import pytest

from tests.support.tools import loaded_tool

MAX_FILES = 72
"""Library files one query enters, the engine's worker threads and the simulated model's
own files included (84 before fragments of one concept became one module each: the
judges' verdict protocol, prompts and formats, the runtime's retries, cost and preflight,
the estimators' guard, the OpenTelemetry switch, the LangChain usage callback; and before
the interactions stage was skipped when off; the target is 35)."""
MAX_REDACTION_CALLS = 300
"""Python calls into ``core/redaction.py`` in one query (1,294 before one walk per payload)."""


@pytest.fixture(scope="module")
def path_length():
    yield from loaded_tool("path_length")


def test_one_query_enters_a_bounded_number_of_library_files(path_length) -> None:
    seen = path_length.query_path("langchain")
    assert "langchain/clearing_step.py" in seen.files  # the hook saw the query
    assert "core/engine.py" in seen.files
    assert len(seen.files) <= MAX_FILES, sorted(seen.files)


def test_redaction_walks_each_payload_once(path_length) -> None:
    seen = path_length.query_path("langchain")
    walks = sum(
        n
        for (f, name, _), n in seen.functions.items()
        if f == "core/redaction.py" and name == "redact_payload"
    )
    assert 0 < walks <= 40  # one per event payload and one for the run's outputs
    assert seen.files["core/redaction.py"] <= MAX_REDACTION_CALLS


def test_the_hook_counts_only_library_frames(path_length) -> None:
    seen = path_length.measure(lambda: sorted([3, 1, 2]))
    assert seen.summary() == {"files": 0, "functions": 0, "max_depth": 0, "calls": 0}
