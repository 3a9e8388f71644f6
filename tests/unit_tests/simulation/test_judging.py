"""Simulated judges (reference, full:q, noisy:e, coalition) and the paid-for query."""

from __future__ import annotations

import pytest

from meclear_integrations import Memory
from meclear_integrations.core.errors import InconsistentVerdictsError
from meclear_integrations.simulation import (
    Claim,
    EvidenceWorld,
    JudgeSignal,
    SimulatedJudge,
    SimulatedQuery,
)

REF, WRONG = "December 2023", "January 2023"
IDS = ("g", "f", "b")


def world(**kw: object) -> EvidenceWorld:
    claims = {"g": Claim(answer=REF, weight=1.0), "f": Claim(answer=WRONG, weight=1.5)}
    return EvidenceWorld(claims=claims, ties="prompt", **kw)  # type: ignore[arg-type]


def judge(signal: str, case_id: str = "c") -> SimulatedJudge:
    return SimulatedJudge(
        world(), REF, case_id=case_id, context_ids=IDS, signal=JudgeSignal.parse(signal)
    )


def test_signal_syntax() -> None:
    assert str(JudgeSignal.parse("full:0.7")) == "full:0.7"
    assert JudgeSignal.parse("coalition").reference_free
    assert not JudgeSignal.parse("noisy:0.05").reference_free
    for bad in ("full", "noisy:2", "reference:0.5", "oracle", "full:x"):
        with pytest.raises(ValueError):
            JudgeSignal.parse(bad)


def test_reference_and_full_judges() -> None:
    assert judge("reference").accepts("december 2023.", IDS, 0)
    assert not judge("reference").accepts(WRONG, IDS, 0)
    knows = judge("full:1")
    assert knows.accepts(REF, IDS, 0) and not knows.accepts(WRONG, IDS, 0)
    fooled = judge("full:0")  # the faults dominate the whole context: the wrong answer wins
    assert fooled.fooled and fooled.accepts(WRONG, ("g",), 0) and not fooled.accepts(REF, ("g",), 0)
    share = sum(judge("full:0.7", f"case-{i}").fooled for i in range(2000)) / 2000
    assert share == pytest.approx(0.3, abs=0.04)


def test_noisy_judge_flips_each_call_independently() -> None:
    assert judge("noisy:0").accepts(REF, IDS, 3) and not judge("noisy:0").accepts(WRONG, IDS, 3)
    assert not judge("noisy:1").accepts(REF, IDS, 0) and judge("noisy:1").accepts(WRONG, IDS, 0)
    j = judge("noisy:0.2")
    verdicts = [j.accepts(REF, IDS, trial) for trial in range(4000)]
    assert sum(verdicts) / len(verdicts) == pytest.approx(0.8, abs=0.03)
    # seeded by content: the same evaluation always gets the same verdict, whatever the order
    assert [j.accepts(REF, IDS, t) for t in reversed(range(50))] == verdicts[:50][::-1]
    assert j.key(REF, IDS, 7) != j.key(REF, ("g",), 7) != j.key(REF, ("g",), 8)
    by_coalition = [j.accepts(REF, (f"m{i}",), 0) for i in range(4000)]
    assert sum(by_coalition) / 4000 == pytest.approx(0.8, abs=0.03)  # fresh per coalition
    other_seed = SimulatedJudge(
        world(), REF, case_id="c", context_ids=IDS, signal=JudgeSignal.parse("noisy:0.2"), seed=1
    )
    assert [other_seed.accepts(REF, IDS, t) for t in range(4000)] != verdicts


def test_persistent_judge_repeats_its_mistakes() -> None:
    signal = JudgeSignal.parse("persistent:0.3")
    assert str(signal) == "persistent:0.3" and signal.persistent_error == 0.3
    wrong_on_truth = 0
    for i in range(2000):
        j = SimulatedJudge(
            world(), REF, case_id=f"c{i}", context_ids=IDS, signal=signal, question=f"q{i}"
        )
        verdicts = {j.accepts(REF, ids, t) for ids in (IDS, ("g",)) for t in range(5)}
        assert len(verdicts) == 1  # the same on every call, coalition and trial
        assert j.key(REF, IDS, 0) == j.key(REF, ("g",), 4)  # asked once per answer
        wrong_on_truth += not verdicts.pop()
    assert wrong_on_truth / 2000 == pytest.approx(0.3, abs=0.04)
    # the question and answer decide, not the case: a second case of one question agrees
    a = SimulatedJudge(world(), REF, case_id="c1", context_ids=IDS, signal=signal, question="q")
    b = SimulatedJudge(world(), REF, case_id="c2", context_ids=IDS, signal=signal, question="q")
    assert [a.accepts(x, IDS, 0) for x in (REF, WRONG, "x", "y", "z")] == [
        b.accepts(x, IDS, 0) for x in (REF, WRONG, "x", "y", "z")
    ]


def test_mixed_judge_adds_fresh_flips_to_a_persistent_error() -> None:
    signal = JudgeSignal.parse("mixed:0.2:0.1")
    assert str(signal) == "mixed:0.2:0.1" and signal.per_evaluation
    assert (signal.persistent_error, signal.call_error) == (0.2, 0.1)
    for bad in ("mixed:0.2", "persistent:0.1:0.1", "mixed:a:b"):
        with pytest.raises(ValueError):
            JudgeSignal.parse(bad)
    rates = []
    for i in range(400):
        j = SimulatedJudge(
            world(), REF, case_id=f"c{i}", context_ids=IDS, signal=signal, question=f"q{i}"
        )
        rates.append(sum(j.accepts(REF, IDS, t) for t in range(50)) / 50)
    # persistent wrong: about 0.1 pass (only fresh flips rescue it); else about 0.9
    low = [r for r in rates if r < 0.5]
    assert len(low) / 400 == pytest.approx(0.2, abs=0.06)
    assert sum(low) / len(low) == pytest.approx(0.1, abs=0.03)


def test_coalition_judge_is_fooled_once_the_truth_is_deleted() -> None:
    j = judge("coalition")
    assert j.accepts(REF, ("g", "f"), 0) and not j.accepts(WRONG, ("g", "f"), 0)
    assert j.accepts(WRONG, ("f", "b"), 0)  # no memory states the truth: the favoured wins
    assert j.accepts("I don't know", ("b",), 0)  # nothing claimed: abstaining "passes"


def memories(*ids: str) -> tuple[Memory, ...]:
    return tuple(Memory(id=i, content=f"text {i}") for i in ids)


def test_query_pays_as_a_user_with_an_answer_cache_would() -> None:
    q = SimulatedQuery(world(), REF, case_id="c", context_ids=IDS)
    for trial in range(4):
        for ids in (IDS, ("g", "b"), ("g",), ("b",)):
            q(memories(*ids), trial)
    # deterministic reader: one agent call per prompt; reference judge: one per answer
    assert (q.agent_calls, q.judge_calls, q.model_calls) == (4, 3, 7)
    sampled = SimulatedQuery(world(temperature=0.3), REF, case_id="c", context_ids=IDS)
    for trial in range(4):
        sampled(memories(*IDS), trial)
    assert sampled.agent_calls == 4
    noisy = SimulatedQuery(
        world(), REF, case_id="c", context_ids=IDS, signal=JudgeSignal.parse("noisy:0.1")
    )
    for trial in range(3):
        noisy(memories("g"), trial)
    assert (noisy.agent_calls, noisy.judge_calls) == (1, 3)  # a fresh verdict per trial


def test_reference_free_judge_accepting_two_answers_raises() -> None:
    q = SimulatedQuery(
        world(), REF, case_id="c", context_ids=IDS, signal=JudgeSignal.parse("coalition")
    )
    assert q(memories("g"), 0) == 1.0
    with pytest.raises(InconsistentVerdictsError) as err:
        q(memories("f"), 0)  # the judge now also accepts the wrong answer
    assert err.value.reason == "accepted_two_answers"
    with pytest.raises(InconsistentVerdictsError):
        q(memories("g"), 1)  # it stays inconsistent
    noisy = SimulatedQuery(
        world(), REF, case_id="c", context_ids=IDS, signal=JudgeSignal.parse("noisy:1")
    )
    assert noisy(memories("g", "f"), 0) == 1.0 and noisy(memories("f"), 1) == 1.0  # no raise


def test_world_abstain_weight_ties_and_correct_probability() -> None:
    w = EvidenceWorld(
        claims={"g": Claim(answer=REF, weight=0.6), "b": Claim(answer=REF, weight=0.2)},
        abstain_weight=0.7,
        ties="prompt",
    )
    assert w.answer(["g"]) == "I don't know" and w.answer(["g", "b"]) == REF
    assert w.favoured(["g"]) == "I don't know" and w.correct_probability(["g", "b"], REF) == 1.0
    hot = w.model_copy(update={"temperature": 0.2})
    assert not hot.deterministic and 0.5 < hot.correct_probability(["g", "b"], REF) < 1.0
    assert hot.correct_probability(["g", "b"], REF) > hot.correct_probability(["g"], REF)
    tie = EvidenceWorld(
        claims={"a": Claim(answer="x", weight=1.0), "b": Claim(answer="y", weight=1.0)},
        ties="prompt",
    )
    assert len({tie.answer(["a", "b"], case_id="c", trial=t) for t in range(20)}) == 1
    coin = tie.model_copy(update={"ties": "trial"})
    assert len({coin.answer(["a", "b"], case_id="c", trial=t) for t in range(20)}) == 2
    assert tie.correct_probability(["a", "b"], "x", case_id="c") in (0.0, 1.0)
    assert coin.correct_probability(["a", "b"], "x") == 0.5


def test_world_favours_the_reference_only_outright() -> None:
    w = world()
    assert not w.favours(IDS, REF) and w.favours(("g", "b"), "december 2023.")
    assert not w.favours(("b",), REF)  # nothing claimed favours nothing
    tie = EvidenceWorld(claims={"g": Claim(answer=REF), "f": Claim(answer=WRONG)})
    assert not tie.favours(("g", "f"), REF)
    hot = w.model_copy(update={"temperature": 5.0})  # the reader's temperature does not move it
    assert hot.favours(("g", "b"), REF) and not hot.favours(IDS, REF)
