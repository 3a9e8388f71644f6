"""MeClear's parts against their calls: the dev table behind the benchmark's defaults."""

from __future__ import annotations

import json
from pathlib import Path

from meclear_bench import BenchSettings, dump_cases, load_builtin_cases
from meclear_bench.tuned import tuned_engine
from meclear_bench.variants import meclear_variants, variant_sweep, variants_table
from meclear_integrations.cli import main
from meclear_integrations.simulation import JudgeSignal


def test_variants_run_on_the_same_cases_and_the_tuned_default_is_the_interval_rule() -> None:
    variants = meclear_variants(tuned_engine())
    assert variants["as configured"] == variants["interval"]  # what tuned.py chose
    assert not variants["interval, no escalation"].escalation
    assert variants["interval, nested"].clearance == "nested"
    base = BenchSettings(
        temperature=0.2, judge=JudgeSignal.parse("noisy:0.05"), bootstrap_replicates=0
    )
    doc = variant_sweep(load_builtin_cases()[:10], base=base)
    assert list(doc["rows"]) == list(variants) and doc["n_cases"] == 10
    assert doc["rows"]["as configured"] == doc["rows"]["interval"]
    twice = doc["rows"]["interval, T = 2 everywhere"]["model_calls_per_case"]
    assert twice > doc["rows"]["interval"]["model_calls_per_case"]
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
    assert "SIMULATED" in report and "| interval, nested |" in report
