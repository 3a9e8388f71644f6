"""Every LangChain cookbook script runs offline and shows what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
OFFLINE_ENV = {
    k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_"))
}


def run(script: str) -> str:
    result = subprocess.run(
        [sys.executable, str(ROOT / "cookbook" / script)],
        capture_output=True,
        text=True,
        env=OFFLINE_ENV,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_rag_chain_swap_flips_the_answer() -> None:
    out = run("langchain_rag_chain.py")
    assert "SIMULATED" in out
    assert "plain retriever      -> January 2023" in out
    assert "ClearingRetriever    -> December 2023" in out
    assert "cleared for this query: f2, f1" in out


@pytest.mark.slow
def test_langsmith_tracing_cookbook() -> None:
    out = run("langsmith_tracing.py")
    assert "- chain: meclear_clearance" in out and "llm: SimulatedChatModel" in out
    assert "cleared_ids ['f1', 'f2']" in out
    assert "event meclear.clearance" in out


@pytest.mark.parametrize("script", ["langchain_rag_chain.py", "langsmith_tracing.py"])
def test_cookbooks_import_in_process(script: str) -> None:
    import runpy

    result = runpy.run_path(str(ROOT / "cookbook" / script))["main"]()
    assert result


@pytest.mark.slow
def test_without_reference_cookbook_offline() -> None:
    out = run("langchain_without_reference.py")
    assert "SIMULATED" in out and "(no reference answer)" in out
    assert "plain retriever              -> January 2023" in out
    assert "shadow mode (drops nothing)  -> would clear ['f1', 'f2']" in out
    assert "ClearingRetriever            -> December 2023" in out
    assert "status unverified (accepted_two_answers)" in out


def test_without_reference_cookbook_real_provider_path_against_the_stub(monkeypatch) -> None:
    """With OPENAI_API_KEY / OPENAI_BASE_URL the cookbook uses ChatOpenAI as agent and
    reference-free judge; the stub answers and judges as the simulated world, which sees
    the whole context, and is fooled by the two stale notes: nothing is cleared and the
    answer is the plain chain's (never worse)."""
    import runpy

    from meclear_integrations.simulation import redundant_harm_example
    from tests.support.servers import OpenAIStub, serve

    stub = OpenAIStub.for_case(redundant_harm_example())
    with serve(stub) as url:
        monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
        result = runpy.run_path(str(ROOT / "cookbook" / "langchain_without_reference.py"))["main"]()
    assert result["plain"] == result["cleared"] == "January 2023"
    assert result["kept"] == ["g1", "b1", "f1", "b2", "f2", "b3"]
    assert result["model_calls"]["judge"] >= 1 and result["model_calls"]["agent"] >= 1
    assert {r["model"] for r in stub.requests} == {"gpt-4o-mini"}


def test_live_cost_cookbook() -> None:
    """The cost table's rows: a clean query with a deterministic agent costs one agent and
    one judge call; deduplication never changes what is kept; totals add up."""
    import runpy

    rows = runpy.run_path(str(ROOT / "cookbook" / "live_cost.py"))["main"]()
    by = {(r["preset"], r["deterministic_agent"], r["query"]): r for r in rows}
    clean = by[("default", True, "clean")]
    assert (clean["agent"], clean["judge"]) == (1, 1)
    assert by[("default", False, "clean")]["agent"] > clean["agent"]  # a trial per call
    for r in rows:
        assert r["total"] == r["agent"] + r["judge"]
        faulty = r["query"] == "faulty"
        assert (r["kept"] == ["g1", "b1", "b2", "b3"]) is faulty
    assert by[("default", True, "faulty")]["total"] < by[("default", False, "faulty")]["total"]
    # the cheap preset: the same clearance for fewer calls; a clean query costs the same
    assert by[("cheap", True, "faulty")]["total"] < by[("default", True, "faulty")]["total"]
    assert by[("cheap", True, "clean")]["total"] == clean["total"]


def test_the_readme_swap_states_what_the_cookbook_measures() -> None:
    """The README's swap says what a query costs, with the figures ``live_cost.py`` measures
    (SIMULATED), the command that measures them, and where the triggers are."""
    import re
    import runpy

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    swap = readme.split("## The swap", 1)[1].split("\n## ", 1)[0]
    assert "3 calls instead of 1" in swap and "SIMULATED" in swap
    assert "python cookbook/live_cost.py" in swap and "meclear bench-sweep cost" in swap
    assert "(docs/production/index.md#triggers)" in swap and "## Triggers" in (
        ROOT / "docs" / "production" / "index.md"
    ).read_text(encoding="utf-8")
    rows = runpy.run_path(str(ROOT / "cookbook" / "live_cost.py"))["measure"]()
    by = {(r["preset"], r["deterministic_agent"], r["query"]): r for r in rows}
    clean = by[("default", True, "clean")]
    assert 1 + clean["total"] == 3  # your own answer, plus the verification of the full context
    stated = re.search(
        r"clean\s+1 \+ 1, faulty (\d+) \+ (\d+) with the default, (\d+) \+ (\d+) with", swap
    )
    assert stated is not None
    default, cheap = by[("default", True, "faulty")], by[("cheap", True, "faulty")]
    assert [int(g) for g in stated.groups()] == [
        default["agent"],
        default["judge"],
        cheap["agent"],
        cheap["judge"],
    ]
