"""``meclear judge-check``: labelled triples, agreement counts, no verdicts counted apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from meclear_bench.judge_check import Triple, calibrate, locomo_triples, wilson
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.judges import VerdictParseError
from tests.unit_tests.bench.real_fixtures import write_conversations


def test_triples_are_half_right_half_wrong_with_exact_labels(tmp_path: Path) -> None:
    data = write_conversations(tmp_path / "locomo", ids=("1", "2"))
    triples = locomo_triples(data, questions=6, seed=3)
    kinds = {t.kind for t in triples}
    assert {"gold", "gold_sentence", "same_kind", "other"} <= kinds
    for t in triples:
        assert t.label is (t.kind in ("gold", "gold_sentence"))
    assert locomo_triples(data, questions=6, seed=3) == triples  # seeded


def test_calibrate_counts_false_accepts_rejects_and_no_verdicts() -> None:
    right = Triple("Q?", "Paris", "Paris", "gold", "t")
    wrong = Triple("Q?", "Rome", "Paris", "other", "t")
    broken = Triple("Q?", "Lyon", "Paris", "other", "t")

    def judge(t: Triple) -> float:
        if t.answer == "Lyon":
            raise VerdictParseError("no verdict line", raw="CORRECT")
        return 1.0  # accepts everything

    report = calibrate([right, wrong, broken], judge, label="yes-man").as_dict()
    assert report["verdicts"] == 2 and report["no_verdict"] == 1
    assert report["no_verdict_reasons"] == {"VerdictParseError": 1}
    assert report["false_accept"]["k"] == 1 and report["false_accept"]["n"] == 1
    assert report["false_reject"]["k"] == 0 and report["agreement"]["k"] == 1
    assert report["rows"][2]["verdict"] is None


def test_wilson_interval_contains_the_rate() -> None:
    low, high = wilson(3, 10)
    assert low < 0.3 < high and low >= 0 and high <= 1
    assert wilson(0, 0) == (0.0, 1.0)


def test_cli_needs_data(capsys) -> None:
    with pytest.raises(ConfigurationError):
        from argparse import Namespace

        from meclear_bench.cli.judge_check import run_judge_check

        run_judge_check(Namespace(locomo=None, clark=None, judge_model="exact"))
