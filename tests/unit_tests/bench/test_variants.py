"""MeClear's parts against their calls: the dev table behind the benchmark's defaults."""

from __future__ import annotations

import json
from pathlib import Path

from meclear_bench import BenchSettings, dump_cases, load_builtin_cases
from meclear_bench.variants import (
    FORMER_BENCHMARK_RULES,
    meclear_variants,
    variant_sweep,
    variants_table,
)
from meclear_integrations.cli import main
from meclear_integrations.core import AutoShapley, ClearanceConfig
from meclear_integrations.simulation import JudgeSignal


def test_the_package_default_carries_the_rules_that_earned_their_calls() -> None:
    variants = meclear_variants(ClearanceConfig())
    assert variants["package default"] == ClearanceConfig()
    # the automatic estimator's defaults are the four estimator rules chosen on dev ...
    assert AutoShapley() == variants["+ exact, pooled, residual, answer flags"].estimator
    assert variants["before (KernelSHAP at K = 5)"].estimator != AutoShapley()
    # ... and the verification rule that did not earn its calls is not the default
    assert ClearanceConfig().verification.recovery_rate == 0.3
    former = variants["former benchmark configuration"]
    assert former.verification.recovery_rate == 0.1 and former.verification.max_trials == 16
    assert former.estimator == FORMER_BENCHMARK_RULES["estimator"] == AutoShapley()
    # the surrogate candidates earned their calls too: the default is the last row, and
    # every row measured before them runs without them
    last = variants["+ exact, pooled, residual, answer flags, surrogate"]
    assert last.estimator == AutoShapley()
    assert last.verification == ClearanceConfig().verification
    before = [
        label for label in variants if "surrogate" not in label and label != "package default"
    ]
    assert all(variants[label].verification.surrogate is None for label in before)


def test_variants_run_on_the_same_cases() -> None:
    variants = meclear_variants(ClearanceConfig(budget={"max_concurrency": 1}))
    base = BenchSettings(
        temperature=0.2, judge=JudgeSignal.parse("noisy:0.05"), bootstrap_replicates=0
    )
    doc = variant_sweep(load_builtin_cases()[:10], base=base)
    assert list(doc["rows"]) == list(variants) and doc["n_cases"] == 10
    rows = doc["rows"]
    assert rows["package default"] == rows["+ exact, pooled, residual, answer flags, surrogate"]
    spent = rows["+ recovery rate 0.1, cap 16"]["model_calls_per_case"]
    assert spent >= rows["before (KernelSHAP at K = 5)"]["model_calls_per_case"]
    assert variants_table(doc).count("\n") == len(variants) + 1


def test_cli_writes_the_variants_table(tmp_path: Path) -> None:
    out = tmp_path / "variants"
    cases = tmp_path / "cases.jsonl"  # a few built-in cases: the command, not the figures
    dump_cases(load_builtin_cases()[:6], cases)
    argv = ["bench-sweep", "variants", "--cases", str(cases), "--split", "all", "--bootstrap", "0"]
    argv += ["--setting", "persistent", "--out", str(out)]
    assert main([*argv, "--no-progress", "--no-figures"]) == 0
    doc = json.loads((out / "variants.json").read_text())
    assert doc["judge"] == "persistent:0.05" and "bench-sweep variants" in doc["command"]
    report = (out / "variants.md").read_text()
    assert "SIMULATED" in report and "| package default |" in report
