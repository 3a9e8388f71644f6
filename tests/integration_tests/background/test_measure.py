"""``meclear worker --measure``: no model call on the background request path, and audit
throughput grows with workers on a latency-bound stub (real clocks: integration tier)."""

from __future__ import annotations

from meclear_integrations.bench.background_perf import audit_throughput, request_overhead


def test_the_background_request_path_calls_no_model() -> None:
    result = request_overhead(k=20, queries=30, ledger_runs=50)
    assert result["request_path_model_calls"] == 0
    assert result["jobs_queued"] == 30 + 20  # every timed and warm-up question queued once
    assert result["plain"]["p99_ms"] > 0 and result["p99_ratio"] > 0


def test_four_workers_drain_a_latency_bound_queue_faster() -> None:
    result = audit_throughput(jobs=16, audit_seconds=0.25, workers=4)
    assert result["speedup"] >= 2.5  # about 4 on an idle machine; bound loosely for CI
