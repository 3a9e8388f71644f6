"""A feedback replay and a settlement re-verification take the same steps on both paths.

Each is one flow (``core.concurrency.step_driver``): the sync call and its async twin make
the same evaluator calls, record the same runs and reach the same verdicts; on the async
path a coroutine evaluator runs on the event loop itself (never in a worker thread).
SIMULATED: the scripted agents of ``test_replay`` and ``test_settlement_reverify``.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from meclear_integrations.ledger import HarmLedger, replay_pending
from meclear_integrations.ledger.replay import areplay_feedback, replay_feedback
from meclear_integrations.ledger.reverify import areverify_settlement, reverify_settlement
from tests.unit_tests.ledger import test_replay as ann
from tests.unit_tests.ledger import test_settlement_reverify as sam


class Evaluators:
    """``evaluator_for`` of a scripted judge, sync or coroutine, logging where each call ran."""

    def __init__(self, judge_for: Any, asynchronous: bool) -> None:
        self.judge_for = judge_for
        self.asynchronous = asynchronous
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.threads: set[int] = set()

    def __call__(self, query: str, reference: str, memories: list[Any]) -> Any:
        judge = self.judge_for(query, reference, memories)

        def evaluate(coalition: Any, trial: int) -> float:
            self.calls.append((reference, tuple(sorted(m.id for m in coalition))))
            self.threads.add(threading.get_ident())
            return float(judge(coalition, trial))

        if not self.asynchronous:
            return evaluate

        async def aevaluate(coalition: Any, trial: int) -> float:
            return evaluate(coalition, trial)

        return aevaluate


def _replayed(path: Path, mode: str) -> tuple[Any, Evaluators]:
    with HarmLedger(path, store_text=False) as ledger:
        original = ann.live_run(ledger, judge_accepts={"Rome"})
        fb = ledger.feedback(
            original.run_id, correct=False, correction="Paris", memory_ids=["stale"],
            authority="operator",
        )  # fmt: skip
        evaluators = Evaluators(lambda q, ref, ms: ann.against(ref), mode == "async")
        kwargs: dict[str, Any] = {
            "evaluator_for": evaluators,
            "query": ann.QUERY,
            "resolve": lambda ids: {i: ann.STORE[i] for i in ids},
            "agent_model": "agent-x",
        }
        if mode == "async":
            result = asyncio.run(areplay_feedback(ledger, fb.feedback_id, **kwargs))
        else:
            result = replay_feedback(ledger, fb.feedback_id, **kwargs)
        assert ledger.pending_replays() == []
        return result, evaluators


def test_a_feedback_replay_is_the_same_on_both_paths(tmp_path: Path) -> None:
    sync, s_eval = _replayed(tmp_path / "sync.db", "sync")
    asynchronous, a_eval = _replayed(tmp_path / "async.db", "async")
    for result in (sync, asynchronous):
        assert result.report.cleared_ids == ["stale"] and result.report.recovered
        assert result.run.origin == "replay" and result.run.agent_model == "agent-x"
    assert s_eval.calls and s_eval.calls == a_eval.calls
    assert sync.report.cost.evaluator_calls == asynchronous.report.cost.evaluator_calls
    assert (sync.restored, sync.exonerated) == (asynchronous.restored, asynchronous.exonerated)
    assert a_eval.threads == {threading.get_ident()}  # the loop's own thread: native async


def _reverified(path: Path, mode: str) -> tuple[Any, Evaluators]:
    with HarmLedger(path) as ledger:
        memories = sam._memories()
        assert sam._ask(ledger, memories).recovered
        right = ledger.runs()[0]
        ledger.feedback(
            right.run_id, correct=False, correction="OldCo", memory_ids=["t1"],
            authority="operator", source_id="ops",
        )  # fmt: skip
        replay_pending(ledger, evaluator_for=sam.evaluator_for)
        sam._ask(ledger, memories)  # withholds the settled memory: a challenge
        challenge = ledger.runs()[0]
        evaluators = Evaluators(sam.evaluator_for, mode == "async")
        if mode == "async":
            result = asyncio.run(
                areverify_settlement(ledger, challenge.run_id, evaluator_for=evaluators)
            )
        else:
            result = reverify_settlement(ledger, challenge.run_id, evaluator_for=evaluators)
        assert [e.event for e in ledger.history("t1").events].count("upheld") == 1
        return result, evaluators


def test_a_re_verification_is_the_same_on_both_paths(tmp_path: Path) -> None:
    sync, s_eval = _reverified(tmp_path / "sync.db", "sync")
    asynchronous, a_eval = _reverified(tmp_path / "async.db", "async")
    for result in (sync, asynchronous):
        assert result.upheld == ["t1"] and not result.lifted and len(result.runs) == 1
        assert result.runs[0].origin == "reverify"
    assert s_eval.calls and s_eval.calls == a_eval.calls
    assert sync.runs[0].evaluator_calls == asynchronous.runs[0].evaluator_calls
    assert sorted(sync.reasons) == sorted(asynchronous.reasons)
    assert a_eval.threads == {threading.get_ident()}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_query_that_does_not_hash_to_the_run_fails_before_any_model_call(
    tmp_path: Path, mode: str
) -> None:
    with HarmLedger(tmp_path / "l.db", store_text=False) as ledger:
        original = ann.live_run(ledger, judge_accepts={"Rome"})
        fb = ledger.feedback(original.run_id, correct=False, correction="Paris")
        evaluators = Evaluators(lambda q, ref, ms: ann.against(ref), mode == "async")
        call = areplay_feedback if mode == "async" else replay_feedback
        with pytest.raises(ann.ReplayError, match="does not hash to the query id"):
            outcome = call(ledger, fb, evaluator_for=evaluators, query="Another question?")
            if mode == "async":
                asyncio.run(outcome)
        assert evaluators.calls == [] and ledger.pending_replays() == [
            ledger.get_feedback(fb.feedback_id)
        ]
