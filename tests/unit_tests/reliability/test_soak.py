"""A short ``meclear soak``: bounded, no error surfaces, nothing changed."""

from __future__ import annotations

import json

import pytest

from meclear_integrations.cli import main
from meclear_integrations.cli.soak import run_soak

ROOMY = 300.0
"""Soak and per-query time bounds no loaded machine reaches: these tests count queries and
outcomes, which a bound run out (a query skipped, a query failed open on ``time_budget``)
would change; the bounds themselves are tested by ``test_soak_time_bound_is_honoured``."""


def test_short_soak_serves_every_query_and_changes_nothing() -> None:
    # Random faults at 10% plus a deterministic outage on queries 0, 4 and 8. How many of
    # the other nine fail open depends on how concurrent retries interleave, so only the
    # outage queries are counted on.
    result = run_soak(
        queries=12,
        concurrency=6,
        fault_rate=0.1,
        seconds=ROOMY,
        seed=3,
        outage_share=0.25,
        query_seconds=ROOMY,
    )
    assert result.queries == 12 and result.served == 12 and result.errors_surfaced == 0
    assert result.verified + result.failed_open + result.other == 12
    assert result.faults_injected > 0 and result.failed_open >= 3 and result.verified >= 1
    assert set(result.failure_reasons) == {"evaluator_error"}
    assert result.inputs_unchanged


def test_outage_queries_fail_open_while_concurrent_ones_verify() -> None:
    result = run_soak(
        queries=12,
        concurrency=6,
        fault_rate=0.0,
        seconds=ROOMY,
        query_seconds=ROOMY,
        outage_share=0.25,
    )
    assert result.served == 12 and result.errors_surfaced == 0
    assert result.failed_open == 3 and result.verified == 9 and result.other == 0
    assert result.failure_reasons == {"evaluator_error": 3}
    assert result.inputs_unchanged


def test_soak_with_every_call_faulty_fails_every_query_open() -> None:
    result = run_soak(
        queries=6, concurrency=3, fault_rate=1.0, seconds=ROOMY, query_seconds=ROOMY, seed=1
    )
    assert result.served == 6 and result.failed_open == 6 and result.errors_surfaced == 0
    assert result.faults_injected == result.model_calls and result.inputs_unchanged


def test_soak_rejects_a_bad_outage_share() -> None:
    with pytest.raises(ValueError, match="outage_share"):
        run_soak(queries=1, outage_share=1.5)


def test_soak_without_faults_verifies_every_query() -> None:
    result = run_soak(queries=6, concurrency=3, fault_rate=0.0, seconds=ROOMY, query_seconds=ROOMY)
    assert result.verified == 6 and result.failed_open == 0 and result.faults_injected == 0


def test_soak_time_bound_is_honoured() -> None:
    """No query starts after ``seconds``; the ones in flight are bounded by ``query_seconds``
    (each query's ``max_wall_seconds``). Ignoring the bound would run all 10,000 queries."""
    # The same-run baseline: four queries at once without any bound coming into play.
    baseline = run_soak(queries=4, concurrency=4, fault_rate=0.0, seconds=ROOMY).wall_seconds
    result = run_soak(queries=10_000, concurrency=4, fault_rate=0.0, seconds=0.5, query_seconds=2.0)
    # 0.5 s of starts + at most 2 s per query in flight + scheduling slack, which grows with
    # the machine's load as the baseline does
    assert result.queries < 10_000 and result.wall_seconds < max(8.0, 2.5 + 4 * baseline)


def test_soak_command(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["soak", "--queries", "4", "--concurrency", "2", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["served"] == 4 and figures["inputs_unchanged"] is True
