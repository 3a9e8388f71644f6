"""ContextCite and ProxySPEX with the answer-backed flag rule (methods of their own)."""

from __future__ import annotations

import pytest

from meclear_bench import BenchSettings, load_builtin_cases
from meclear_bench.methods.registry import build_method, method_names
from meclear_bench.runner import run_benchmark
from meclear_integrations.simulation import JudgeSignal


def _cases() -> list:
    return [c for c in load_builtin_cases() if len(c.memories) == 5 and c.targets][:10]


@pytest.mark.parametrize("family", ["contextcite", "proxyspex"])
def test_answer_variants_read_the_answers_and_verify_what_they_delete(family: str) -> None:
    assert f"{family}-answers" in method_names()
    cases = _cases()
    assert cases
    settings = BenchSettings(judge=JudgeSignal.parse("noisy:0.1"), surrogate_budget=32)
    plain = build_method(family, settings)
    backed = build_method(f"{family}-answers", settings)
    run = run_benchmark(cases, settings, methods=[plain, backed])
    plain_out = {o.case_id: o for o in run.outcomes[family]}
    backed_out = {o.case_id: o for o in run.outcomes[f"{family}-answers"]}
    assert set(backed_out) == set(plain_out)
    # the same ablations (same seed, same calls for the surrogate); the flags may differ,
    # and only where the full table's answers back them
    assert any(backed_out[c].flagged != plain_out[c].flagged for c in backed_out)
    for o in backed_out.values():
        assert set(o.cleared) <= set(o.flagged)
