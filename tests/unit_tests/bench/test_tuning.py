"""Dev tuning of every method alike, and the regenerated ``tuned.py``."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from meclear_bench import BenchSettings, load_builtin_cases
from meclear_bench import tuned as tuned_module
from meclear_bench.runner import run_benchmark
from meclear_bench.sweeps import standard
from meclear_bench.tune_grid import Axis
from meclear_bench.tuned_module import render_tuned_module, tuned_source
from meclear_bench.tuning import baseline_settings, tune, tuning_grid
from meclear_integrations.core import ClearanceConfig


@pytest.fixture(scope="module")
def cases():
    return [c for c in load_builtin_cases() if c.case_id.startswith("builtin-ana-ben")]


BASE = BenchSettings(engine=ClearanceConfig(budget={"max_concurrency": 1}), bootstrap_replicates=0)


def _verify(rate: tuple[float, ...], cap: tuple[int, ...]) -> list[Axis]:
    return [
        Axis("verification.recovery_rate", rate, low=0.05, high=1.0),
        Axis("verification.max_trials", cap, low=2, high=100, integer=True),
    ]


def test_each_baseline_verifies_with_its_own_settings() -> None:
    s = BenchSettings(verification={"loo": {"recovery_rate": 0.5, "max_trials": 4}})
    assert s.trial_policy("loo").verification.max_trials == 4
    assert s.trial_policy("loo:x").verification.recovery_rate == 0.5
    assert s.trial_policy("contextcite") == s.engine  # no own settings: the engine's
    assert s.trial_policy() == s.engine
    tuned = BenchSettings()
    for name, own in tuned_module.TUNED_VERIFICATION.items():
        assert tuned.trial_policy(name).verification.max_trials == own["max_trials"]


def test_a_baselines_trial_cap_changes_what_it_spends(cases) -> None:
    noisy = standard(BASE, "noisy")
    spent = []
    for cap in (2, 16):
        settings = baseline_settings(
            noisy, "loo", {"tolerance": 0.0, "verification.max_trials": cap}
        ).model_copy(update={"methods": ("loo",)})
        run = run_benchmark(cases, settings)
        spent.append(sum(o.model_calls for o in run.outcomes["loo"]))
    assert spent[0] < spent[1]


def test_tune_searches_every_baseline_on_one_objective_beside_the_package_default(
    cases,
) -> None:
    grid = tuning_grid()
    assert "meclear" not in grid  # MeClear is the package default, never tuned here
    grid["loo"] = (grid["loo"][0], [[Axis("tolerance", (0.0, 0.05))], _verify((0.3,), (4, 12))])
    for name in ("contextcite", "proxyspex"):
        grid[name] = (grid[name][0], [[Axis("flag_rule", ("tolerance", "relative"))]])
    doc = tune(
        cases,
        base=BASE,
        grid=grid,
        settings=("noisy", "persistent"),
        check=("deterministic",),
        max_deleted_background=0.5,
        fixed_methods=("newest", "llm-filter"),
    )
    assert set(doc["chosen"]) == {
        "meclear",
        "loo",
        "contextcite",
        "proxyspex",
        "newest",
        "llm-filter",
    }
    me = doc["methods"]["meclear"]
    assert len(me["rows"]) == 1 and doc["chosen"]["meclear"] == {} and me["axes"] == {}
    assert me["rows"][0]["model_calls"] > 0
    for block in doc["methods"].values():
        assert set(block["check"]) == {"deterministic"}
        for row in block["rows"]:
            assert set(row["points"]) == {"noisy", "persistent"}
            mean = sum(p["expected_recovery"] for p in row["points"].values()) / 2
            assert row["objective"] == pytest.approx(mean)
    # LOO searched its verification cap too (4 and 12 trials), alike with MeClear
    caps = {r["settings"]["verification.max_trials"] for r in doc["methods"]["loo"]["rows"]}
    assert {4, 12} <= caps  # (12 on the edge widens the grid to 20)
    assert doc["chosen"]["newest"] == {} and doc["methods"]["newest"]["rows"][0]["model_calls"] == 0

    text = render_tuned_module(doc, command="meclear bench-sweep tune --write", date="2026-12-01")
    assert "Generated on 2026-12-01 by ``meclear bench-sweep tune --write``" in text
    namespace: dict[str, Any] = {}
    exec(compile(text, "tuned.py", "exec"), namespace)
    assert "TUNED_MECLEAR" not in namespace and "tuned_engine" not in namespace
    assert "- meclear: the package default." in text
    assert namespace["TUNED_LOO_TOLERANCE"] == doc["chosen"]["loo"]["tolerance"]
    assert namespace["TUNED_CONTEXTCITE"]["flag_rule"] == doc["chosen"]["contextcite"]["flag_rule"]
    cap = doc["chosen"]["loo"]["verification.max_trials"]
    assert namespace["TUNED_VERIFICATION"]["loo"]["max_trials"] == cap
    assert all(len(line) <= 100 for line in text.splitlines())
    ast.parse(text)


def test_the_recorded_tune_command_keeps_write_and_passes() -> None:
    from meclear_bench.cli.bench_sweep import _command
    from meclear_integrations.cli import build_parser

    args = build_parser().parse_args(
        ["bench-sweep", "tune", "--out", "OUT", "--passes", "2", "--write"]
    )
    command = _command(args)
    assert command.startswith("meclear bench-sweep tune") and command.endswith("--write")
    assert "--passes 2" in command


def test_the_tuned_module_names_the_command_that_regenerates_it() -> None:
    doc = ast.get_docstring(ast.parse(tuned_source())) or ""
    assert "meclear bench-sweep tune" in doc and "--write" in doc
