"""The sequential verification rule: sound under disagreeing verdicts, the paper's choice
when verdicts agree, and abstention when the judge contradicts itself."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory, StageEvent
from meclear_integrations.core.errors import InconsistentVerdictsError
from meclear_integrations.core.verification.sequential import clopper_pearson, trials_to_verify
from tests.support.games import make_memories


def test_clopper_pearson_bounds() -> None:
    for n in (1, 4, 8):
        lower, upper = clopper_pearson(n, n, 0.1)
        assert lower == pytest.approx(0.1 ** (1 / n), abs=1e-9) and upper == 1.0
        assert clopper_pearson(0, n, 0.1) == pytest.approx((0.0, 1 - 0.1 ** (1 / n)))
    lower, upper = clopper_pearson(7, 8, 0.1)  # scipy.stats.beta.ppf(0.1, 7, 2), (0.9, 8, 1)
    assert lower == pytest.approx(0.59375, abs=1e-4) and upper == pytest.approx(0.98692, abs=1e-4)
    assert trials_to_verify(0.5, 0.1, 8) == 4 and trials_to_verify(0.5, 0.05, 8) == 5
    assert trials_to_verify(0.99, 0.1, 8) == 9  # unreachable within 8


def table_evaluator(scores: np.ndarray, memories: list[Memory]):
    position = {m.id: i for i, m in enumerate(memories)}

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return float(scores[sum(1 << position[m.id] for m in coalition), trial])

    return evaluate


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2**32 - 1), st.sampled_from(["exact", "kernel"]))
def test_agreeing_verdicts_select_what_the_papers_rule_selects(
    k: int, seed: int, estimator: str
) -> None:
    """A deterministic evaluator: the sequential rule spends more trials (free behind a
    deterministic answer cache) and selects exactly Eq. 20's candidate."""
    rng = np.random.default_rng(seed)
    values = rng.choice([0.0, 0.5, 1.0], size=(1 << k, 1), p=[0.4, 0.1, 0.5])
    scores = np.repeat(values, 16, axis=1)
    memories = make_memories(k)
    reports = {
        rule: MeClearEngine(
            ClearanceConfig(estimator=estimator, seed=seed, verification=rule)
        ).clear(memories, table_evaluator(scores, memories))
        for rule in ("paper", "sequential")
    }
    paper, sequential = reports["paper"], reports["sequential"]
    assert sequential.cleared_ids == paper.cleared_ids
    assert sequential.early_exit == paper.early_exit
    assert sequential.recovered == paper.recovered and sequential.status == "complete"
    # no more distinct coalitions (in a quiet run the sequential rule skips the fallback
    # family when a candidate before it is admissible at value 1: it could not be selected)
    assert sequential.cost.coalitions <= paper.cost.coalitions


def redundant_scores(k: int, trials: int = 16) -> np.ndarray:
    """m0 supports the answer, m1 and m2 each override it."""
    scores = np.zeros((1 << k, trials))
    for mask in range(1 << k):
        if mask & 1 and not mask & 0b110:
            scores[mask] = 1.0
    return scores


def test_a_lucky_full_context_is_no_early_exit() -> None:
    """The full context passes its first two trials by luck: the paper's rule (adaptive
    trials) stops there; the sequential rule asks for the trials its test needs, sees the
    failure and clears the two faults."""
    memories = make_memories(4)
    scores = redundant_scores(4)
    scores[0b1111, :2] = 1.0  # two lucky passes of the full context, then failures
    paper = MeClearEngine(ClearanceConfig(estimator="exact", verification="paper")).clear(
        memories, table_evaluator(scores, memories)
    )
    assert paper.early_exit and paper.cleared == []
    # (tau 0.01: the full context's lucky passes shrink the faults' contributions)
    sequential = MeClearEngine(ClearanceConfig(estimator="exact", harm_tolerance=0.01)).clear(
        memories, table_evaluator(scores, memories)
    )
    assert not sequential.early_exit and sequential.cleared_ids == ["m1", "m2"]


def test_a_tie_won_by_luck_is_broken_by_more_trials() -> None:
    """Joint-like harm under noise: clearing m1 alone passes its first four trials but not
    the later ones, clearing m1 and m2 always passes. Eq. 20's tie-break would keep the
    smaller one; the sequential rule gives both max_trials first and clears both."""
    memories = make_memories(4)
    scores = np.zeros((1 << 4, 16))
    for mask in range(1 << 4):
        has_gold, m1, m2 = mask & 1, mask & 2, mask & 4
        if has_gold and not (m1 and m2):
            scores[mask] = 1.0
    partial = 0b1101  # m1 cleared: right in its first four trials, then one time in three
    scores[partial, 4:] = [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    scores[0b1011, 1:] = 0.0  # m2 cleared: fails after its first (attribution) trial
    config = ClearanceConfig(estimator="exact", clearance="nested")
    paper = MeClearEngine(config.updated(verification={"rule": "paper"})).clear(
        memories, table_evaluator(scores, memories)
    )
    assert len(paper.cleared_ids) == 1
    report = MeClearEngine(config).clear(memories, table_evaluator(scores, memories))
    assert sorted(report.cleared_ids) == ["m1", "m2"] and report.recovered
    tried = {tuple(sorted(c.memory_ids)): c for c in report.candidates}
    assert tried[("m1",)].trials == tried[("m1", "m2")].trials == config.verification.max_trials


def test_trials_that_keep_disagreeing_abstain() -> None:
    """The only candidate that looks better than the full context keeps disagreeing: its
    recovery can no longer be verified within max_trials, nor ruled out, and stays so
    through the close trials (``close_trials``, 24). The run returns the context
    unchanged, status unverified."""
    memories = make_memories(3)
    scores = np.zeros((1 << 3, 24))
    scores[0b101] = [1, 0, 0, 0] * 6  # m1 cleared: right one time in four
    scores[0b001] = [1, 0, 0, 0] * 6
    events: list[StageEvent] = []
    report = MeClearEngine(ClearanceConfig(estimator="exact"), listener=events.append).clear(
        memories, table_evaluator(scores, memories)
    )
    assert report.status == "unverified" and report.status_reason == "inconsistent_trials"
    assert report.cleared == [] and [m.id for m in report.kept] == ["m0", "m1", "m2"]
    end = [e for e in events if e.stage == "clearance" and e.phase == "end"][-1]
    assert end.payload["status"] == "unverified" and end.payload["cleared_ids"] == []
    # H^'s candidate m1, then the default's surrogate candidates (m1 first, already tried,
    # then m1 and m2: the Lasso fit also weighs m2 below -tau), which do not verify either
    assert [(c.memory_ids, c.recovered, c.family) for c in report.candidates] == [
        ([], False, "minimal"),
        (["m1"], False, "minimal"),
        (["m1", "m2"], False, "surrogate"),
    ]


class ContradictingJudge:
    """Accepts the answer of every coalition holding m0, and (contradicting itself) the
    empty coalition's abstention: raises once both were accepted."""

    def __init__(self) -> None:
        self.accepted: set[str] = set()

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        answer = "gold" if "m0" in ids and "m1" not in ids else ("none" if not ids else "x")
        if answer in ("gold", "none"):
            self.accepted.add(answer)
        if len(self.accepted) > 1:
            raise InconsistentVerdictsError("two answers accepted", reason="accepted_two_answers")
        return 1.0 if answer in ("gold", "none") else 0.0


@pytest.mark.parametrize("on_failure", ["open", "closed"])
def test_inconsistent_verdicts_make_the_run_abstain(on_failure: str) -> None:
    events: list[StageEvent] = []
    config = ClearanceConfig(estimator="exact", failure={"mode": on_failure})
    memories = make_memories(3)
    report = MeClearEngine(config, listener=events.append).clear(memories, ContradictingJudge())
    assert report.status == "unverified" and report.status_reason == "accepted_two_answers"
    assert report.cleared == [] and report.kept == memories and not report.recovered
    error = next(e for e in events if e.phase == "error")
    assert error.payload["outcome"] == "unverified"
    assert error.payload["status_reason"] == "accepted_two_answers"


def test_inconsistent_verdicts_abstain_on_the_async_path() -> None:
    judge = ContradictingJudge()

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return judge(coalition, trial)

    memories = make_memories(3)
    report = asyncio.run(
        MeClearEngine(ClearanceConfig(estimator="exact")).aclear(memories, evaluate)
    )
    assert report.status == "unverified" and report.kept == memories
