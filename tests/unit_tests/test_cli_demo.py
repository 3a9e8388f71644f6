"""`meclear demo` and `meclear --help`."""

from __future__ import annotations

import json

import pytest

from meclear_integrations.cli import main


@pytest.mark.parametrize("preset", ["default", "paper"])
def test_demo_shows_loo_missing_both_and_meclear_clearing_both(
    capsys: pytest.CaptureFixture[str], preset: str
) -> None:
    assert main(["demo", "--preset", preset]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out
    assert "leave-one-out (d_i < -0.05) clears [] -> value 0.00 (NOT recovered)" in out
    assert "MeClear clears [f1, f2] -> value 1.00 (recovered)" in out
    assert "exact target match: yes" in out


def test_demo_json_is_a_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json", "--estimator", "exact", "--interactions"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [m["id"] for m in report["cleared"]] == ["f1", "f2"]
    pair = next(p for p in report["interactions"] if p["memory_ids"] == ["f1", "f2"])
    assert pair["label"] == "redundant"


def test_demo_permutations_flag_sets_the_permutation_estimator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--estimator", "permutation", "--permutations", "8", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["config"]["estimator"] == {"name": "permutation", "permutations": 8, "seed": None}
    assert main(["demo", "--permutations", "8"]) == 2  # no estimator samples permutations
    assert "--estimator permutation" in capsys.readouterr().err
