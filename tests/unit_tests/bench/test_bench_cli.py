"""End to end: ``meclear bench`` and ``meclear explain`` on a small case file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meclear_bench import dump_cases
from meclear_bench.figures import FIGURE_FILES
from meclear_integrations.cli import main

from .cases_fixture import clean_case, direct_case, joint_case, redundant_case

SCHEMA_KEYS = {
    "recall_at_m",
    "complete_recall",
    "exact_match",
    "deleted_exact",
    "recovery",
    "expected_recovery",
    "verified_recovery",
    "accuracy",
    "accuracy_gain",
    "harm_rate",
    "unverified_rate",
    "extra_background",
    "cleared_extra_background",
    "model_calls_per_case",
    "agent_calls_per_case",
    "judge_calls_per_case",
    "evaluator_calls_per_case",
    "coalitions_per_case",
    "n_cases",
}


@pytest.fixture
def case_file(tmp_path: Path) -> Path:
    cases = [
        direct_case(case_id="d1", cluster="c1", query_id="q1"),
        redundant_case(case_id="r1", cluster="c1", query_id="q1"),
        joint_case(case_id="j1", cluster="c2", query_id="q2"),
        redundant_case(case_id="r2", cluster="c2", query_id="q3"),
        clean_case(case_id="n1", cluster="c3", query_id="q4"),
    ]
    path = tmp_path / "cases.jsonl"
    dump_cases(cases, path)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"case_id": "broken"}\n')
    return path


def test_bench_end_to_end(case_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "bench",
            "--cases",
            str(case_file),
            "--out",
            str(out),
            "--bootstrap",
            "200",
            "--no-progress",
            "--estimator",
            "permutation",
            "--seed",
            "1",
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "line 6" in err
    results = json.loads((out / "results.json").read_text())
    assert results["n_cases"] == 5 and results["simulated"] is True
    assert results["skipped_lines"][0]["line"] == 6
    methods = results["methods"]
    assert list(methods) == [
        "oracle",
        "meclear",
        "loo",
        "contextcite",
        "proxyspex",
        "none",
    ]  # the defaults need no rater model (llm-direct joins with --rater-model)
    assert results["judge"] == "reference" and results["temperature"] is None
    for name in ("oracle", "meclear", "loo", "contextcite", "proxyspex", "none"):
        block = methods[name]
        assert set(block["overall"]) >= SCHEMA_KEYS
        assert set(block["by_structure"]) == {"clean", "direct", "joint", "redundant"}
        assert set(block["by_fault_type"]) == {"none", "precise_temporal"}
        for key in ("recall_at_m", "complete_recall", "exact_match", "recovery"):
            assert 0.0 <= block["overall"][key] <= 1.0
            lo, hi = block["ci"][key]
            assert 0.0 <= lo <= block["overall"][key] <= hi <= 1.0
    # the redundant rows: LOO collapses, MeClear holds
    red = {n: methods[n]["by_structure"]["redundant"] for n in ("meclear", "loo")}
    assert red["loo"]["recall_at_m"] == 0.0 and red["loo"]["recovery"] == 0.0
    assert red["meclear"]["recall_at_m"] == 1.0 and red["meclear"]["recovery"] == 1.0
    assert methods["none"]["overall"]["evaluator_calls_per_case"] == 0
    assert methods["none"]["overall"]["model_calls_per_case"] == 0
    assert methods["oracle"]["overall"]["recovery"] == 1.0
    assert methods["oracle"]["overall"]["model_calls_per_case"] == 0
    # harm is measured against no clearance: none has neither gain nor harm
    assert methods["none"]["overall"]["accuracy_gain"] == 0.0
    assert methods["none"]["overall"]["harm_rate"] == 0.0
    assert methods["meclear"]["overall"]["accuracy_gain"] > 0.5
    assert set(results["paired"]) == {"oracle", "loo", "contextcite", "proxyspex", "none"}
    loo = results["paired"]["loo"]["recovery"]
    assert set(loo) == {"delta", "ci", "wins", "losses"}
    assert loo["delta"] == pytest.approx(2 / 5) and (loo["wins"], loo["losses"]) == (2, 0)
    for name in FIGURE_FILES:
        data = (out / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 1000
    report = (out / "report.md").read_text()
    assert "SIMULATED" in report and "## By structure" in report
    assert not (out / "cases.jsonl").exists()  # only written when built from LoCoMo
    assert "Answer accuracy with the returned context" in report
    assert len((out / "outcomes.jsonl").read_text().splitlines()) == 6 * 5


def test_the_defaults_take_llm_direct_only_with_a_rater_model() -> None:
    from argparse import Namespace

    from meclear_bench.cli.bench_inputs import _method_specs
    from meclear_bench.settings import DEFAULT_METHODS

    assert "llm-direct" not in DEFAULT_METHODS
    plain = _method_specs(Namespace(methods=None, rater_model=None))
    rated = _method_specs(Namespace(methods=None, rater_model="gpt-4o-mini"))
    assert plain == DEFAULT_METHODS
    assert rated == (*DEFAULT_METHODS[:-1], "llm-direct", "none")
    assert _method_specs(Namespace(methods="meclear,none", rater_model="m")) == ("meclear", "none")


def test_bench_methods_flag_and_verified_mode(case_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "o2"
    assert (
        main(
            [
                "bench",
                "--cases",
                str(case_file),
                "--out",
                str(out),
                "--methods",
                "loo,none",
                "--clearance",
                "verified",
                "--bootstrap",
                "0",
                "--no-figures",
                "--no-progress",
            ]
        )
        == 0
    )
    results = json.loads((out / "results.json").read_text())
    assert list(results["methods"]) == ["loo", "none"]
    assert results["reference"] is None and results["paired"] == {}
    assert results["methods"]["loo"]["ci"] == {}


def test_bench_rejects_unknown_method(case_file: Path, tmp_path: Path, capsys) -> None:
    code = main(
        [
            "bench",
            "--cases",
            str(case_file),
            "--out",
            str(tmp_path / "x"),
            "--methods",
            "magic",
            "--no-progress",
        ]
    )
    assert code == 2 and "unknown method" in capsys.readouterr().err


def test_explain_writes_a_png(case_file: Path, tmp_path: Path, capsys) -> None:
    fig = tmp_path / "fig.png"
    code = main(["explain", "--cases", str(case_file), "--case-id", "r1", "--out", str(fig)])
    assert code == 0
    assert fig.read_bytes().startswith(b"\x89PNG")
    out = capsys.readouterr().out
    assert "SIMULATED" in out and "clearance candidates" in out and "f1" in out
    missing = main(["explain", "--cases", str(case_file), "--case-id", "nope", "--out", str(fig)])
    assert missing == 2


def test_split_selects_locomo_conversations(case_file: Path, tmp_path: Path, capsys) -> None:
    from meclear_bench.split import LOCOMO_SPLITS, split_cases

    assert not set(LOCOMO_SPLITS["dev"]) & set(LOCOMO_SPLITS["test"])
    assert len(LOCOMO_SPLITS["dev"]) + len(LOCOMO_SPLITS["test"]) == 10
    cases = [
        direct_case(case_id="a", cluster="locomo-26"),
        direct_case(case_id="b", cluster="locomo-42"),
    ]
    assert [c.case_id for c in split_cases(cases, "dev")] == ["a"]
    assert [c.case_id for c in split_cases(cases, "test")] == ["b"]
    assert len(split_cases(cases, "all")) == 2
    code = main(
        ["bench", "--cases", str(case_file), "--split", "dev", "--out", str(tmp_path / "s")]
    )
    assert code == 2 and "no case of the dev split" in capsys.readouterr().err
