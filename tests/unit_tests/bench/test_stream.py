"""The stream benchmark: persistent recurring faults, methods x policies, the ledger on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meclear_bench.stream_build import PARAPHRASES, build_streams
from meclear_bench.stream_report import stream_results
from meclear_bench.stream_run import run_config
from meclear_integrations import ClearanceConfig
from meclear_integrations.cli import main
from meclear_integrations.core.engine import verifier

REAL = [
    p
    for p in (
        Path("/work/shared/data/locomo10"),
        Path(__file__).parents[4] / "shared/data/locomo10",
    )
    if p.is_dir()
]
pytestmark = pytest.mark.skipif(not REAL, reason="LoCoMo data not present")
ENGINE = ClearanceConfig(seed=0, budget={"max_concurrency": 1})


@pytest.fixture(scope="module")
def build():
    return build_streams(REAL[0], conversations=["26"], max_queries_per_conversation=60)


def test_faults_persist_and_recur(build) -> None:
    [stream] = build.streams
    assert stream.faults and len({f.memory_id for f in stream.faults}) == len(stream.faults)
    targets = {f.target for f in stream.faults}
    by_question: dict[int, list] = {}
    for q in stream.queries:
        by_question.setdefault(q.question, []).append(q)
    for target in targets:
        occurrences = by_question[target]
        kinds = [q.kind for q in occurrences]
        assert kinds[0] == "original" and sorted(kinds[1:]) == ["paraphrase", "repeat"]
        original = occurrences[0]
        repeat = next(q for q in occurrences if q.kind == "repeat")
        paraphrase = next(q for q in occurrences if q.kind == "paraphrase")
        assert repeat.case.query == original.case.query
        assert paraphrase.case.query != original.case.query
        assert any(t.split("{")[0].strip(" {") in paraphrase.case.query for t in PARAPHRASES)
        assert original.position < min(repeat.position, paraphrase.position)
    # every fault record that a query retrieves is the same persistent record
    retrieved = {m.id for q in stream.queries for m in q.case.memories}
    assert {f.memory_id for f in stream.faults} & retrieved
    assert [q.position for q in stream.queries] == list(range(len(stream.queries)))
    again = build_streams(REAL[0], conversations=["26"], max_queries_per_conversation=60)
    assert again == build


def test_repeat_clearances_are_cheap_at_equal_recovery(build, tmp_path) -> None:
    cold = run_config(build, "meclear", "judge", engine=ENGINE, ledger_dir=tmp_path)
    warm = run_config(build, "meclear+ledger", "judge", engine=ENGINE, ledger_dir=tmp_path)
    assert Path(warm.ledger_path).exists() and warm.ledger_path != cold.ledger_path
    pairs = [
        (w, c) for w, c in zip(warm.outcomes, cold.outcomes, strict=True) if w.warm and w.failing
    ]
    assert len(pairs) >= 5
    for w, c in pairs:
        # the baseline's T trials and the prior candidate's recovery test; model calls are
        # what a user pays for them (agent and judge, deduplicated by the answer cache)
        assert w.mode == "ledger_guided"
        assert w.evaluator_calls == ENGINE.trials + verifier(ENGINE).verify_trials
        assert 0 < w.model_calls <= 2 * w.evaluator_calls
        assert c.mode == "full" and c.model_calls > 3 * w.model_calls
        assert w.correct == c.correct
    results = stream_results(build, [cold, warm], replicates=200)
    repeat = results["repeat_cost"]["judge"]
    fixable = repeat["recoverable"]
    assert fixable["ratio"] <= 0.25 and fixable["ratio_ci"][1] <= 0.25
    assert fixable["recovery_difference"] == 0.0 and repeat["target_met"]
    assert repeat["all"]["pairs"] >= fixable["pairs"]
    review = results["configs"]["meclear+ledger / judge"]["review"]
    assert review["precision"] == 1.0 and review["recall_eligible"] >= 0.8


def test_untriggered_queries_cost_nothing_and_none_is_the_floor(build, tmp_path) -> None:
    none = run_config(build, "none", "-", engine=ENGINE, ledger_dir=tmp_path)
    sampled = run_config(build, "meclear+ledger", "sample:0.3", engine=ENGINE, ledger_dir=tmp_path)
    skipped = [o for o in sampled.outcomes if not o.triggered]
    assert skipped and all(o.model_calls == 0 and o.mode == "skipped" for o in skipped)
    for s, n in zip(sampled.outcomes, none.outcomes, strict=True):
        if not s.triggered:
            assert s.correct == n.correct  # the context came back unchanged
        assert s.correct >= n.correct  # clearance never makes an answer worse
    assert all(o.model_calls == 0 for o in none.outcomes)


def test_feedback_replays_are_offline_calls(build, tmp_path) -> None:
    run = run_config(
        build, "meclear+ledger", "known+feedback", engine=ENGINE, ledger_dir=tmp_path,
        feedback_rate=1.0,
    )  # fmt: skip
    failing_first = [o for o in run.outcomes if o.failing and not o.triggered]
    assert failing_first and all(o.offline_calls > 0 for o in failing_first if not o.correct)
    later = [o for o in run.outcomes if o.failing and o.warm]
    assert later and all(o.triggered for o in later)
    with pytest.raises(ValueError, match="unknown trigger policy"):
        run_config(build, "meclear", "sometimes", engine=ENGINE, ledger_dir=tmp_path)


def test_cli(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "bench", "--stream", "--locomo", str(REAL[0]), "--conversations", "26",
            "--max-queries", "12", "--policies", "judge,every:3", "--bootstrap", "50",
            "--no-progress", "--out", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    results = json.loads((out / "stream_results.json").read_text())
    assert results["simulated"] and set(results["configs"]) == {
        "none / -",
        "meclear / judge",
        "meclear / every:3",
        "meclear+ledger / judge",
        "meclear+ledger / every:3",
    }
    assert (out / "stream_calls.png").stat().st_size > 10_000
    assert "SIMULATED" in (out / "stream_report.md").read_text()
    assert len((out / "stream_queries.jsonl").read_text().splitlines()) == 5 * len(
        build_streams(REAL[0], conversations=["26"], max_queries_per_conversation=12)
        .streams[0]
        .queries
    )
    assert main(["ledger", "--ledger", str(out / "ledgers/meclear+ledger__judge.db"),
                 "--namespace", "26", "review"]) == 0  # fmt: skip
    assert main(["bench", "--stream", "--out", str(out)]) == 2
    assert "--stream needs --locomo" in capsys.readouterr().err
