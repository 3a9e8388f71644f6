"""``meclear bench`` with real models survives what a real server does to a run.

Against the text-reading stand-in served on 127.0.0.1: a reply cut at the provider's token
limit, an empty reply and a server that dies mid-run are each a clear per-call failure,
counted in the run's call totals and listed per case, and the run finishes with its results
written; ``--judge exact`` grades with normalised containment of the gold answer and sends
no judge call to the server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from meclear_bench.reader_server import ReaderServer, serve_reader
from meclear_integrations.cli import main
from tests.unit_tests.bench.real_fixtures import load_results, model_flags, write_conversations

_AGENT = "Answer the question"
"""A phrase of the agent's answer prompt only (not of a judge's)."""


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, ReaderServer]]:
    with serve_reader() as served:
        yield served


@pytest.fixture(scope="module")
def built(server, tmp_path_factory) -> Path:
    url, _ = server
    root = tmp_path_factory.mktemp("built")
    data = write_conversations(root / "locomo")
    out = root / "cases"
    flags = ["--locomo", str(data), "--max-queries", "2", *model_flags(url, root / "c.db")]
    assert main(["bench", *flags, "--build-only", "--out", str(out)]) == 0
    return out / "cases.jsonl"


def _run(url: str, cases: Path, tmp_path: Path, *extra: str) -> tuple[int, dict]:
    flags = ["--cases", str(cases), *model_flags(url, tmp_path / "c.db"), "--retries", "1"]
    flags += ["--methods", "meclear,loo,none", *extra]
    code = main(["bench", *flags, "--out", str(tmp_path / "run")])
    return code, load_results(tmp_path / "run")


def _failures(results: dict) -> str:
    return "\n".join(f["error"] for f in results.get("failures") or [])


def test_the_agent_prompt_marker_is_real(server) -> None:
    from meclear_integrations.judges.answer_prompts import format_answer_prompt

    assert _AGENT in format_answer_prompt("Q?", [])


def test_exact_judge_sends_no_judge_call(built: Path, tmp_path: Path) -> None:
    with serve_reader() as (url, state):
        code, results = _run(url, built, tmp_path, "--judge", "exact")
        prompts = [str(r.get("messages")) for r in state.requests]
    assert code == 0 and results["n_cases"] > 0
    assert results["judge"].startswith("exact match")
    assert results["models"]["judge"]["identity"] == {"provider": "rule", "name": "exact-contains"}
    assert results["calls"]["provider_calls_by_role"].get("judge", 0) == 0
    assert prompts and all(_AGENT in p for p in prompts)  # every call is the agent's


def test_exact_grader_beside_a_model_judge_is_named(built: Path, tmp_path: Path) -> None:
    with serve_reader() as (url, _):
        code, results = _run(url, built, tmp_path, "--judge", "full", "--grade", "exact")
    assert code in (0, 2)  # a reference-free judge may abstain; the run is written either way
    assert results["models"]["grader"]["label"].startswith("exact match")
    assert "full" in results["judge"]


def test_exact_judge_refuses_a_model_grade(built: Path, tmp_path: Path, capsys) -> None:
    with serve_reader() as (url, _):
        flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
        flags += ["--judge", "exact", "--grade", "model", "--out", str(tmp_path / "run")]
        assert main(["bench", *flags]) == 2
    assert "--judge exact" in capsys.readouterr().err


def _first_question(cases: Path) -> str:
    import json

    return json.loads(cases.read_text(encoding="utf-8").splitlines()[0])["query"]


def test_a_reply_cut_at_the_token_limit_is_a_counted_failure(built: Path, tmp_path: Path) -> None:
    question = _first_question(built)
    with serve_reader(truncate=lambda prompt, n: _AGENT in prompt and question in prompt) as (
        url,
        _,
    ):
        code, results = _run(url, built, tmp_path)
    assert code in (0, 2)
    assert results["calls"]["truncated_replies"] >= 1
    assert results["calls"]["failed_calls"] >= results["calls"]["truncated_replies"]
    assert "cut at the provider's token limit" in _failures(results)
    assert results["n_cases"] >= 1  # the other cases finished


def test_an_empty_reply_is_a_counted_failure(built: Path, tmp_path: Path) -> None:
    question = _first_question(built)

    def rewrite(prompt: str, text: str) -> str:
        return "" if _AGENT in prompt and question in prompt else text

    with serve_reader(rewrite=rewrite) as (url, _):
        code, results = _run(url, built, tmp_path)
    assert code in (0, 2)
    assert results["calls"]["empty_replies"] >= 1
    assert "was empty" in _failures(results)
    assert results["n_cases"] >= 1


def test_a_server_dying_mid_run_fails_calls_and_the_run_finishes(
    built: Path, tmp_path: Path
) -> None:
    with serve_reader(die_after=5) as (url, state):
        code, results = _run(url, built, tmp_path)
        assert state.dead.is_set()
    assert code == 2  # no case finished by every method: said, not hidden
    assert results["calls"]["provider_calls"] == 5
    assert results["calls"]["failed_calls"] >= 1
    assert results["failures"]  # each case's failure recorded
    assert (tmp_path / "run" / "report.md").is_file()


def test_the_text_reader_judge_is_not_sent_to_the_agents_endpoint(
    built: Path, tmp_path: Path
) -> None:
    with serve_reader() as (url, state):
        code, results = _run(url, built, tmp_path, "--judge-model", "meclear-text-reader")
        prompts = [str(r.get("messages")) for r in state.requests]
    assert code == 0 and results["calls"]["provider_calls_by_role"]["judge"] > 0
    assert prompts and all(_AGENT in p for p in prompts)  # the judge ran in this process
