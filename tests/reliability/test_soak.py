"""A short ``meclear soak``: bounded, no error surfaces, nothing changed."""

from __future__ import annotations

import json

from meclear_integrations.cli import main
from meclear_integrations.cli.soak import run_soak


def test_short_soak_serves_every_query_and_changes_nothing() -> None:
    result = run_soak(queries=12, concurrency=6, fault_rate=0.1, seconds=20, seed=3)
    assert result.queries == 12 and result.served == 12 and result.errors_surfaced == 0
    assert result.verified + result.failed_open + result.other == 12
    assert result.faults_injected > 0 and result.failed_open >= 1 and result.verified >= 1
    assert result.inputs_unchanged


def test_soak_without_faults_verifies_every_query() -> None:
    result = run_soak(queries=6, concurrency=3, fault_rate=0.0, seconds=20)
    assert result.verified == 6 and result.failed_open == 0 and result.faults_injected == 0


def test_soak_time_bound_is_honoured() -> None:
    result = run_soak(queries=10_000, concurrency=4, fault_rate=0.0, seconds=0.5)
    assert result.queries < 10_000 and result.wall_seconds < 5


def test_soak_command(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["soak", "--queries", "4", "--concurrency", "2", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["served"] == 4 and figures["inputs_unchanged"] is True
