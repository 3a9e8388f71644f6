"""``meclear bench`` with real-model plumbing end to end, offline: the text-reading stand-in
served on 127.0.0.1 as an OpenAI-compatible endpoint, reached through ``ChatOpenAI``.

Build and verify (real-model verification), every method, cache hits on a rerun (zero new
calls), resume after a budget stop, shards merged equal to one run, provider errors, the
dry run; on a synthetic conversation always, and on a few LoCoMo questions when the data is
present."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from meclear_bench.reader_server import ReaderServer, serve_reader
from meclear_bench.settings import DEFAULT_METHODS
from meclear_integrations.cli import main
from tests.unit_tests.bench.real_fixtures import (
    comparable,
    load_results,
    model_flags,
    write_conversations,
)

LOCOMO = Path("/work/shared/data/locomo10")


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, ReaderServer]]:
    with serve_reader() as served:
        yield served


@pytest.fixture(scope="module")
def built(server, tmp_path_factory) -> Path:
    """Cases built from the synthetic conversations, verified by the stand-in."""
    url, _ = server
    root = tmp_path_factory.mktemp("built")
    data = write_conversations(root / "locomo")
    out = root / "cases"
    code = main(
        [
            "bench",
            "--locomo",
            str(data),
            "--max-queries",
            "2",
            *model_flags(url, root / "cache.sqlite"),
            "--build-only",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    return out / "cases.jsonl"


def _bench(*args: str) -> int:
    return main(["bench", *args])


@pytest.mark.slow
def test_build_run_and_rerun_without_new_calls(server, tmp_path: Path) -> None:
    url, state = server
    data = write_conversations(tmp_path / "locomo")
    flags = ["--locomo", str(data), "--max-queries", "2", *model_flags(url, tmp_path / "c.db")]
    flags += ["--methods", ",".join((*DEFAULT_METHODS[:-1], "llm-direct", "none"))]
    first = tmp_path / "first"
    before = state.calls
    assert _bench(*flags, "--out", str(first)) == 0
    made = state.calls - before
    results = load_results(first)
    assert results["simulated"] is False
    assert results["models"]["agent"]["label"] == "text-reader"
    funnel = results["funnel"]
    assert funnel["simulated"] is False and "text-reader" in funnel["verified_with"]
    verified = funnel["verified"]
    assert verified["all"]["all"] + verified["clean"]["all"] == results["n_cases"]
    assert verified["all"]["all"] > 0 and verified["clean"]["all"] > 0
    assert all(results["methods"][m]["status"] == "ok" for m in DEFAULT_METHODS)
    overall = {m: b["overall"] for m, b in results["methods"].items()}
    # Verification guarantees: the clean context answers, the faulted one does not.
    assert overall["oracle"]["recovery"] == 1.0
    none = results["methods"]["none"]["by_structure"]
    assert none["clean"]["recovery"] == 1.0
    assert all(none[s]["recovery"] == 0.0 for s in none if s != "clean")
    assert overall["meclear"]["recovery"] >= overall["loo"]["recovery"]
    assert overall["meclear"]["model_calls_per_case"] > overall["loo"]["model_calls_per_case"] > 0
    assert overall["meclear"]["prompt_tokens_per_case"] > 0
    direct = overall["llm-direct"]  # one rating call per case, then its verification
    rater = direct["model_calls_per_case"] - direct["agent_calls_per_case"]
    assert rater - direct["judge_calls_per_case"] == pytest.approx(1.0)
    assert results["calls"]["provider_calls"] == made > 0
    report = (first / "report.md").read_text(encoding="utf-8")
    assert "text-reader" in report and "SIMULATED" not in report

    second = tmp_path / "second"
    before = state.calls
    assert _bench(*flags, "--out", str(second)) == 0
    assert state.calls == before  # every call answered from the response cache
    rerun = load_results(second)
    assert rerun["calls"]["provider_calls"] == 0 and rerun["calls"]["cache_hits"] > 0
    assert comparable(rerun) == comparable(results)


def test_free_text_verdicts_match_structured_ones_and_hit_the_cache(
    server, built: Path, tmp_path: Path
) -> None:
    url, state = server
    flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
    flags += ["--methods", "meclear,loo,none"]
    assert _bench(*flags, "--out", str(tmp_path / "structured")) == 0
    text = [*flags, "--judge-output", "text"]
    assert _bench(*text, "--out", str(tmp_path / "text")) == 0
    before = state.calls
    assert _bench(*text, "--out", str(tmp_path / "again")) == 0
    assert state.calls == before  # fresh nonces, same cached verdicts
    runs = [load_results(tmp_path / d)["methods"] for d in ("structured", "text", "again")]
    assert comparable(runs[1]) == comparable(runs[2])
    # The two verdict formats decide alike; only the judge prompts' lengths differ.
    assert _without_tokens(runs[0]) == _without_tokens(runs[1])


def _without_tokens(block: object) -> object:
    if isinstance(block, dict):
        kept = comparable(block)
        return {k: _without_tokens(v) for k, v in kept.items() if "tokens" not in k}
    return comparable(block)


@pytest.mark.slow
def test_budget_stop_then_resume_equals_one_run(server, built: Path, tmp_path: Path) -> None:
    url, _ = server
    flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
    flags += ["--methods", "meclear,loo,none"]  # a stop and its resume; every method: above
    out = tmp_path / "run"
    assert _bench(*flags, "--max-calls", "60", "--out", str(out)) == 3
    partial = load_results(out)
    assert partial["stopped"] == "--max-calls 60 reached" and partial["partial"] is True
    assert partial["incomplete"] and partial["calls"]["provider_calls"] <= 60
    assert "PARTIAL" in (out / "report.md").read_text(encoding="utf-8")
    assert json.loads((out / "run.json").read_text())["status"] == "stopped"

    assert _bench(*flags, "--resume", "--out", str(out)) == 0
    resumed = load_results(out)
    assert not resumed["partial"] and resumed["stopped"] is None
    lines = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    done = Counter((e["case_id"], e["method"]) for e in lines if e["type"] == "outcome")
    assert max(done.values()) == 1  # nothing written before the stop was recomputed

    whole = tmp_path / "whole"
    assert _bench(*flags, "--out", str(whole)) == 0
    assert comparable(resumed) == comparable(load_results(whole))


@pytest.mark.slow
def test_shards_merge_to_the_single_run(server, built: Path, tmp_path: Path) -> None:
    url, _ = server
    flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
    flags += ["--methods", "meclear,loo,none"]  # shards and their merge; every method: above
    assert _bench(*flags, "--out", str(tmp_path / "single")) == 0
    for i in (1, 2):
        assert _bench(*flags, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}")) == 0
    parts = [load_results(tmp_path / f"s{i}")["n_cases"] for i in (1, 2)]
    assert all(parts) and sum(parts) == load_results(tmp_path / "single")["n_cases"]
    merged = tmp_path / "merged"
    assert _bench("merge", str(tmp_path / "s2"), str(tmp_path / "s1"), "--out", str(merged)) == 0
    assert comparable(load_results(merged)) == comparable(load_results(tmp_path / "single"))
    assert (merged / "report.md").exists()
    # Shards of different runs, or a missing shard, are refused.
    assert _bench("merge", str(tmp_path / "s1"), "--out", str(tmp_path / "m2")) == 2
    assert _bench("merge", str(tmp_path / "s1"), str(tmp_path / "single"), "--out", "x") == 2


def test_provider_errors_are_retried_or_recorded_per_case(built: Path, tmp_path: Path) -> None:
    def fail(prompt: str, n: int) -> int | None:
        if n <= 3:
            return 429  # transient: retried
        return 500 if "Madrid" in prompt else None  # never heals for one query

    with serve_reader(fail=fail) as (url, _):
        out = tmp_path / "run"
        flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
        assert _bench(*flags, "--methods", "meclear,loo,none", "--out", str(out)) == 0
    results = load_results(out)
    assert results["calls"]["retries"] >= 3
    failed = {f["case_id"] for f in results["failures"]}
    cases = [json.loads(x) for x in built.read_text().splitlines()]
    madrid = {c["case_id"] for c in cases if any("Madrid" in m["text"] for m in c["memories"])}
    assert failed and failed <= madrid
    assert results["n_cases"] == len(cases) - len(failed)


def test_a_refusing_provider_stops_the_run_at_once(built: Path, tmp_path: Path, capsys) -> None:
    with serve_reader(fail=lambda prompt, n: 401) as (url, state):
        flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
        assert _bench(*flags, "--out", str(tmp_path / "run")) == 2
    assert state.calls <= 8  # the first call of each worker at most, never every case
    assert "HTTP 401" in capsys.readouterr().err
    assert load_results(tmp_path / "run")["stopped_fatal"] is True


def test_token_budget_stops_cleanly(server, built: Path, tmp_path: Path) -> None:
    url, _ = server
    flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
    assert _bench(*flags, "--max-tokens", "2000", "--out", str(tmp_path / "run")) == 3
    results = load_results(tmp_path / "run")
    assert results["stopped"].startswith("--max-tokens 2000 reached")
    calls = results["calls"]
    assert calls["prompt_tokens"] + calls["completion_tokens"] < 2000 + 4000  # one call over


def test_dry_run_estimates_without_calling(server, built: Path, tmp_path: Path, capsys) -> None:
    url, state = server
    before = state.calls
    flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
    assert _bench(*flags, "--dry-run", "--dry-run-cases", "3", "--out", str(tmp_path)) == 0
    assert state.calls == before
    estimate = json.loads((tmp_path / "dry_run.json").read_text())
    assert estimate["sample"] == 3 and estimate["run_calls"] > 0 and estimate["run_tokens"] > 0
    assert estimate["per_method"]["meclear"]["model_calls_per_case"] > 0
    assert "DRY RUN" in capsys.readouterr().out


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")
def test_locomo_questions_end_to_end(server, tmp_path: Path) -> None:
    url, _ = server
    flags = ["--locomo", str(LOCOMO), "--conversations", "26", "--max-queries", "2"]
    out = tmp_path / "run"
    assert _bench(*flags, *model_flags(url, tmp_path / "c.db"), "--out", str(out)) == 0
    results = load_results(out)
    funnel = results["funnel"]
    assert funnel["simulated"] is False
    assert funnel["dropped_queries"]["clean_incorrect"] > 0  # what the stand-in could not read
    verified = funnel["verified"]
    assert results["n_cases"] == verified["all"]["all"] + verified["clean"]["all"]
    assert verified["all"]["all"] > 0
    assert all(results["methods"][m]["status"] == "ok" for m in DEFAULT_METHODS)
    assert results["methods"]["oracle"]["overall"]["recovery"] == 1.0
