"""The library's path for one simulated ``ClearingRetriever.invoke`` stays short.

Measured by ``tools/path_length.py`` (a ``sys.setprofile`` hook over the second of two
identical queries on the simulated model), in a fresh interpreter: what other tests imported
into this process (the LlamaIndex integration adds its events module to the path) must not
count. The bounds pin today's path so that a change
that lengthens it shows here; lower them as the path shrinks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.support.tools import loaded_tool

ROOT = Path(__file__).resolve().parents[3]

MAX_FILES = 63
"""Library files one query enters, the engine's worker threads and the simulated model's
own files included (67 before the evaluator's call dispatch, the coalition game and its
bitmasks, a run's close and its reports, and the simulated reader and its prompt blocks
became one module each; 84 before fragments of one concept became one module each: the
judges' verdict protocol, prompts and formats, the runtime's retries, cost and preflight,
the estimators' guard, the OpenTelemetry switch, the LangChain usage callback; and before
the interactions stage was skipped when off; 72 before the candidate families joined the
verification rule, the flow's drivers the flow, the judge resolution the LLM judges, the
framing check the clearance stage and a gated query's metadata the result's; the target
is 35)."""
MAX_FILES_WITHOUT_MODEL = 59
"""The same, the simulated model's own files (``simulation/``, ``langchain/simulated.py``)
left out: what a real application's model would leave of the path."""
MAX_REDACTION_CALLS = 300
"""Python calls into ``core/redaction.py`` in one query (1,294 before one walk per payload)."""


@pytest.fixture(scope="module")
def path_length():
    yield from loaded_tool("path_length")


@pytest.fixture(scope="module")
def langchain_run() -> dict:
    """The tool's JSON for one query, measured in a fresh process."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "path_length.py"), "--target", "langchain", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def langchain_path(langchain_run) -> tuple[Counter[str], Counter[tuple[str, str]]]:
    """Calls per file and per (file, function) of one query."""
    seen = langchain_run
    functions: Counter[tuple[str, str]] = Counter()
    for f, name, _line, n in seen["per_function"]:
        functions[(f, name)] += n
    return Counter(seen["per_file"]), functions


def test_one_query_enters_a_bounded_number_of_library_files(langchain_path) -> None:
    files, _ = langchain_path
    assert "langchain/clearing_step.py" in files  # the hook saw the query
    assert "core/engine.py" in files
    assert "llama_index/events.py" not in files  # a fresh process: nothing else imported
    assert len(files) <= MAX_FILES, sorted(files)


def test_without_the_simulated_model_fewer_files_count(langchain_run, path_length) -> None:
    files = set(langchain_run["per_file"])
    own = {f for f in files if f.startswith(path_length.MODEL_FILES)}
    assert "simulation/world.py" in own and "langchain/simulated.py" in own
    assert langchain_run["files_without_model"] == len(files - own)
    assert langchain_run["files_without_model"] <= MAX_FILES_WITHOUT_MODEL, sorted(files - own)


def test_redaction_walks_each_payload_once(langchain_path) -> None:
    files, functions = langchain_path
    walks = functions[("core/redaction.py", "redact_payload")]
    assert 0 < walks <= 40  # one per event payload and one for the run's outputs
    assert files["core/redaction.py"] <= MAX_REDACTION_CALLS


def test_the_hook_counts_only_library_frames(path_length) -> None:
    seen = path_length.measure(lambda: sorted([3, 1, 2]))
    assert seen.summary() == {"files": 0, "functions": 0, "max_depth": 0, "calls": 0}
