"""``python -m meclear_bench.scope_threshold``: the name rule on LoCoMo question pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meclear_bench.scope_threshold import main, measure

from .test_stream import REAL

pytestmark = pytest.mark.skipif(not REAL, reason="LoCoMo data not present")


def test_rewordings_stay_in_scope_and_names_only_remove_pairs() -> None:
    path = Path(REAL[0])
    figures = measure(str(path / "30.json") if path.is_dir() else str(path))
    kinds = figures["kinds"]
    assert kinds["paraphrase"]["in_scope"]["0.6"] == 1.0
    assert kinds["paraphrase"]["names_disagree"] == 0.0
    for kind in ("natural", "unrelated"):
        with_names, alone = kinds[kind]["in_scope"], kinds[kind]["in_scope_without_names"]
        assert all(with_names[t] <= alone[t] for t in alone)
        assert kinds[kind]["names_disagree"] > 0.3  # most pairs are about other people
    # conversation 30 holds "What is Jon's / Gina's favorite style of dance?" (Jaccard 0.6)
    assert (
        kinds["unrelated"]["in_scope"]["0.6"] < kinds["unrelated"]["in_scope_without_names"]["0.6"]
    )


def test_the_command_prints_json(capsys) -> None:
    path = Path(REAL[0])
    assert main(["--locomo", str(path / "30.json") if path.is_dir() else str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["threshold_in_use"] == 0.6
