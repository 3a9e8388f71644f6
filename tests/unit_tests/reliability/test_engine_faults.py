"""Engine faults: classification, retries with backoff, call budgets, fail-open / fail-closed.

The wall-time budget, on the real clock, is tested in the integration tier
(``reliability/test_engine_deadlines.py``)."""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations import ClearanceConfig, EvaluatorError, MeClearEngine
from meclear_integrations.core import StageEvent
from meclear_integrations.core.errors import TooManyMemoriesError, TransientError
from meclear_integrations.core.failures.faults import is_transient, retry_after
from tests.support.faults import AsyncScriptedEvaluator, HTTPError, ScriptedEvaluator, memories

EXACT = ClearanceConfig(estimator="exact")


class Sleeps:
    """Injected sleep: records the waits, never waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (TimeoutError("read timed out"), True),
        (TimeoutError(), True),
        (ConnectionResetError("reset"), True),
        (HTTPError(429, {"retry-after": "2"}), True),
        (HTTPError(429), True),
        (HTTPError(500), True),
        (HTTPError(503), True),
        (HTTPError(400), False),
        (HTTPError(401), False),
        (ValueError("bad verdict"), False),
        (TransientError("flaky"), True),
        (type("APITimeoutError", (Exception,), {})("t"), True),
        (type("RateLimitError", (Exception,), {})("r"), True),
    ],
)
def test_classifier(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


def test_classifier_follows_the_cause_chain() -> None:
    try:
        try:
            raise HTTPError(502)
        except HTTPError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert is_transient(outer)


def test_retry_after_headers() -> None:
    assert retry_after(HTTPError(429, {"retry-after-ms": "250"})) == 0.25
    assert retry_after(HTTPError(429, {"retry-after": "3"})) == 3.0
    assert retry_after(HTTPError(429)) is None
    assert retry_after(TransientError("x", retry_after=1.5)) == 1.5
    date = "Wed, 21 Oct 2015 07:28:00 GMT"  # in the past: wait nothing
    assert retry_after(HTTPError(503, {"retry-after": date})) == 0.0


def test_transient_errors_are_retried_and_retry_after_is_honoured() -> None:
    sleeps = Sleeps()
    evaluate = ScriptedEvaluator(
        faults={1: HTTPError(429, {"retry-after": "7"}), 2: HTTPError(429), 5: TimeoutError()}
    )
    config = EXACT.updated(budget={"max_concurrency": 1})
    report = MeClearEngine(config, sleep=sleeps).clear(memories(3), evaluate)
    assert report.status == "complete" and report.cleared_ids == ["m1", "m2"]
    # baseline: 429 + retry-after 7 s -> wait 7; 429 without -> backoff; then call 5 times out
    assert sleeps.waits[0] == 7.0
    assert len(sleeps.waits) == 3 and all(0 < w <= 8.25 for w in sleeps.waits[1:])
    assert report.cost.retries == 3 and report.cost.attempts == len(evaluate.calls)


async def test_async_retries_use_the_injected_sleep() -> None:
    sleeps = Sleeps()
    evaluate = AsyncScriptedEvaluator(faults={1: HTTPError(503), 2: ConnectionError()})
    engine = MeClearEngine(EXACT, asleep=sleeps.asleep)
    real_sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(delay: float, *args: object) -> object:
        real_sleeps.append(delay)
        return await real_sleep(delay, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(asyncio, "sleep", recorded)
        report = await engine.aclear(memories(3), evaluate)
    assert report.status == "complete" and len(sleeps.waits) == 2
    assert min(sleeps.waits) > 0  # the backoffs went to the injected sleep
    assert not [d for d in real_sleeps if d >= min(sleeps.waits)]  # none was waited for real


def test_permanent_errors_are_not_retried_and_never_fail_open() -> None:
    """Retrying cannot heal a 401: it raises at once, whatever ``on_failure`` says."""
    for on_failure in ("open", "closed"):
        sleeps = Sleeps()
        evaluate = ScriptedEvaluator(faults={1: HTTPError(401, msg="bad key")})
        # one call at a time: on a loaded machine a first call slower than the probe
        # (2 ms) would start the other workers, whose calls are not retries
        config = EXACT.updated(failure={"mode": on_failure}, budget={"max_concurrency": 1})
        with pytest.raises(EvaluatorError, match="HTTPError"):
            MeClearEngine(config, sleep=sleeps).clear(memories(3), evaluate)
        assert sleeps.waits == [] and len(evaluate.calls) == 1


def test_retries_exhausted_fail_open_with_the_full_context() -> None:
    faults = {n: HTTPError(500) for n in range(1, 4)}  # the baseline fails 3 times
    events: list[StageEvent] = []
    evaluate = ScriptedEvaluator(faults=faults)
    report = MeClearEngine(EXACT, listener=events.append, sleep=Sleeps()).clear(
        memories(3), evaluate
    )
    assert report.status == "failed" and report.failed
    assert report.kept_ids == ["m0", "m1", "m2"] and report.cleared == []
    assert report.recovered is False and report.candidates == []
    assert report.failure.reason == "evaluator_error" and report.failure.stage == "screening"
    assert report.failure.estimates_usable is False and report.attributions == []
    [failed] = report.failure.failed_coalitions
    assert failed.memory_ids == ["m0", "m1", "m2"] and failed.attempts == 3 and failed.transient
    assert [(e.stage, e.phase) for e in events if e.phase != "progress"] == [
        ("screening", "start"),
        ("screening", "error"),
    ]
    assert events[-1].payload["outcome"] == "fail_open"
    assert events[-1].payload["failed_coalitions"][0]["memory_ids"] == ["m0", "m1", "m2"]
    assert "FAILED OPEN" in report.to_table()


def test_fail_closed_raises() -> None:
    evaluate = ScriptedEvaluator(faults={n: HTTPError(500) for n in range(1, 4)})
    # One call at a time: calls 1-3 are then the first coalition's three attempts. (With
    # threads, a slow first call on a loaded machine spread them over three coalitions.)
    config = EXACT.updated(failure={"mode": "closed"}, budget={"max_concurrency": 1})
    with pytest.raises(EvaluatorError, match="HTTPError"):
        MeClearEngine(config, sleep=Sleeps()).clear(memories(3), evaluate)


def test_failure_after_attribution_keeps_usable_estimates() -> None:
    """A failure while verifying candidates: contributions are complete, nothing cleared."""

    class FailVerification(ScriptedEvaluator):
        def __call__(self, coalition, trial):  # type: ignore[no-untyped-def]
            if trial == 1 and {m.id for m in coalition} == {"m0"}:
                raise TimeoutError("judge timed out")  # only the verification asks trial 1
            return super().__call__(coalition, trial)

    report = MeClearEngine(EXACT, sleep=Sleeps()).clear(memories(3), FailVerification())
    assert report.status == "failed" and report.failure.stage == "clearance"
    assert report.failure.estimates_usable is True
    assert {a.memory_id for a in report.attributions if a.harmful} == {"m1", "m2"}
    assert not any(a.cleared for a in report.attributions) and report.cleared == []


def test_call_budget_is_never_exceeded() -> None:
    for cap in (1, 3, 5, 9, 20):
        evaluate = ScriptedEvaluator()
        config = ClearanceConfig(budget={"max_evaluator_calls": cap}, estimator="exact")
        report = MeClearEngine(config).clear(memories(4), evaluate)
        assert len(evaluate.calls) <= cap
        if report.failed:
            assert report.failure.reason == "call_budget"
        else:
            assert report.cleared_ids == ["m1", "m2"]


def test_call_budget_counts_retries() -> None:
    evaluate = ScriptedEvaluator(faults={n: TimeoutError() for n in range(1, 100)})
    config = ClearanceConfig(
        budget={"max_evaluator_calls": 2},
        failure={"retry": {"max_attempts": 10}},
        verification="paper",
    )  # the paper's rule: a first batch of T = 2 calls
    report = MeClearEngine(config, sleep=Sleeps()).clear(memories(3), evaluate)
    assert len(evaluate.calls) == 2 and report.failed and report.cost.attempts == 2


def test_too_many_memories_fails_open_or_raises() -> None:
    evaluate = ScriptedEvaluator()
    report = MeClearEngine(ClearanceConfig(budget={"max_memories": 5})).clear(
        memories(40), evaluate
    )
    assert report.failed and report.failure.reason == "too_many_memories"
    assert len(report.kept) == 40 and evaluate.calls == []
    with pytest.raises(TooManyMemoriesError, match="max_memories=5"):
        MeClearEngine(
            ClearanceConfig(
                budget={"max_memories": 5},
                failure={"mode": "closed"},
            )
        ).clear(memories(40), evaluate)


def test_invalid_scores_fail_open_with_reason() -> None:
    report = MeClearEngine(EXACT).clear(memories(2), lambda c, t: 3.0)
    assert report.failed and report.failure.reason == "invalid_score"


def test_bugs_are_never_swallowed() -> None:
    """Not an evaluator failure (a broken listener is logged; a bad input raises)."""
    from meclear_integrations import DuplicateMemoryError, Memory

    with pytest.raises(DuplicateMemoryError):
        MeClearEngine().clear([Memory(id="a", content="x"), Memory(id="a", content="y")], max)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_evaluator_calls", 0),
        ("max_wall_seconds", -1),
        ("max_memories", 0),
        ("on_failure", "maybe"),
        ("retry", {"max_attempts": 0}),
        ("retry", {"initial_backoff": -1}),
        ("retry", {"unknown": 1}),
    ],
)
def test_invalid_config_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        ClearanceConfig(**{field: value})
