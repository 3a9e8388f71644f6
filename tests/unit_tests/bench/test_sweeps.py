"""Sweeps on a few built-in cases: quality vs cost, L, judge signals (tuning: test_tuning)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from meclear_bench import BenchSettings, dump_cases, load_builtin_cases
from meclear_bench.cli_args import engine_config
from meclear_bench.sweeps import (
    budget_sweep,
    judge_sweep,
    permutation_sweep,
    standard,
)
from meclear_integrations.cli import build_parser, main
from meclear_integrations.core import ClearanceConfig


@pytest.fixture(scope="module")
def cases():
    chosen = [c for c in load_builtin_cases() if c.case_id.startswith("builtin-ana-ben")]
    assert {c.structure for c in chosen} >= {"clean", "direct", "redundant", "joint"}
    return chosen


BASE = BenchSettings(engine=ClearanceConfig(budget={"max_concurrency": 1}), bootstrap_replicates=50)


def test_standard_settings() -> None:
    noisy = standard(BASE, "noisy")
    assert noisy.temperature == 0.2 and str(noisy.judge) == "noisy:0.05"
    assert standard(BASE, "deterministic").temperature is None


def test_budget_sweep_has_a_curve_per_method(cases) -> None:
    doc = budget_sweep(cases, base=BASE, meclear_budgets=(3.0, 5.0), surrogate_budgets=(8, 32))
    assert set(doc["curves"]) == {
        "meclear",
        "meclear (exact)",
        "contextcite",
        "proxyspex",
        "loo",
        "oracle",
        "none",
    }
    cc = doc["curves"]["contextcite"]
    assert cc[0]["model_calls_per_case"] < cc[1]["model_calls_per_case"]
    assert doc["curves"]["oracle"][0]["recovery"] == 1.0


def test_permutation_sweep_l(cases) -> None:
    doc = permutation_sweep(cases, base=BASE, permutations=(4, 16))
    assert [(r["preset"], r["permutations"]) for r in doc["rows"]] == [
        ("paper", 4),
        ("paper", 16),
        ("default", 4),
        ("default", 16),
    ]


def test_judge_sweep_safety_net(cases) -> None:
    doc = judge_sweep(cases, base=BASE, signals=("reference", "coalition"))
    reference, coalition = doc["rows"]
    assert reference["accuracy_gain"] > 0.3 and reference["harm_rate"] == 0.0
    # the coalition judge accepts whatever the coalition favours: MeClear abstains
    assert coalition["unverified_rate"] > 0.5 and coalition["harm_rate"] == 0.0


def _few(cases, tmp_path: Path) -> list[str]:
    """``--cases FILE --split all``: the module's few built-in cases (the command, not the
    figures, is under test)."""
    path = tmp_path / "cases.jsonl"
    dump_cases(cases, path)
    return ["--cases", str(path), "--split", "all"]


def test_cli_writes_the_sweep(cases, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    argv = ["bench-sweep", "permutations", *_few(cases, tmp_path)]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    doc = json.loads((out / "permutations.json").read_text())
    assert doc["simulated"] and "bench-sweep permutations" in doc["command"]
    assert (out / "permutations.png").read_bytes().startswith(b"\x89PNG")
    assert "SIMULATED" in (out / "permutations.md").read_text()


def test_the_recorded_command_reproduces_the_engine_flags(cases, tmp_path: Path) -> None:
    """A sweep run with engine flags records them: its command parses back to the same
    engine configuration."""
    out = tmp_path / "sweep"
    argv = ["bench-sweep", "permutations", *_few(cases, tmp_path)]
    argv += ["--preset", "default", "--trials", "3"]
    argv += ["--no-figures", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    command = json.loads((out / "permutations.json").read_text())["command"]
    recorded = build_parser().parse_args(shlex.split(command)[1:])
    assert recorded.preset == "default" and recorded.trials == 3
    assert engine_config(recorded) == engine_config(build_parser().parse_args(argv))
