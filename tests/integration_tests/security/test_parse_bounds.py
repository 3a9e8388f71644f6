"""Every parse of untrusted text is linear-time and size-bounded: a 1 MB hostile input costs
at most a constant factor more per byte than a 1 KB one (the thread's CPU time as a ratio in
one run, never absolute seconds: the machine is shared), and a memory cannot stall a run or
its loop."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.redaction import redact, redact_payload
from meclear_integrations.judges import ReferenceFreeLLMJudge, task_evaluator
from meclear_integrations.judges.answer_prompts import format_answer_prompt
from tests.support.honest_judge import (
    GOLD_MEMORY,
    INJECTION,
    QUESTION,
    HonestJudgeModel,
    obeying_agent,
)
from tests.support.timing import ticking

KB = 1024
MB = 1024 * KB
LINEAR_SLACK = 8.0
"""Allowed per-byte slow-down from 1 KB to 1 MB (caches, allocation); quadratic costs ~1000x."""


def _best(fn: Callable[[], object], repeat: int) -> float:
    """The least CPU time of this thread ``fn`` took: on a busy machine a long call is
    preempted on every run (its wall time grows with the load, a 1 KB call's does not);
    the thread's CPU time counts the parse's own work alone."""
    best = float("inf")
    for _ in range(repeat):
        started = time.thread_time()
        fn()
        best = min(best, time.thread_time() - started)
    return best


ROUNDS = 3
"""Measurement rounds: a preempted timing on a loaded machine gets re-measured."""


def assert_linear(parse: Callable[[str], object], make: Callable[[int], str]) -> None:
    """``parse`` on a 1 MB input costs at most LINEAR_SLACK x 1024 its cost on 1 KB.

    On a loaded machine a 1 MB call pays for page faults and cache misses that a 1 KB one
    does not (seen: 10x per byte for a plain copy chain). The same-run fallback then holds
    the parse to linear within the large regime: 1 MB costs at most 2 x 4 its 256 KB cost
    (quadratic: 16x). A quadratic parse fails both, in every round.
    """
    small, medium, large = make(KB), make(256 * KB), make(MB)
    floor = 2e-6  # timer resolution: below this the 1 KB call is "free"
    per_large = float("inf")  # best over the rounds so far: a re-measure only adds samples
    for _ in range(ROUNDS):
        per_small = _best(lambda: [parse(small) for _ in range(20)], 5) / 20
        per_large = min(per_large, _best(lambda: parse(large), 2))
        ratio = per_large / max(per_small, floor)
        if ratio < LINEAR_SLACK * (MB / KB):
            return
        growth = per_large / max(_best(lambda: parse(medium), 3), floor)
        if growth < 2 * (MB / (256 * KB)):
            return
    raise AssertionError(f"1 MB / 1 KB cost ratio {ratio:.0f}, 1 MB / 256 KB {growth:.1f}")


def _quietly(parse: Callable[[str], object]) -> Callable[[str], object]:
    def run(text: str) -> object:
        try:
            return parse(text)
        except (ValueError, TypeError):  # unreadable is fine; slow is not
            return None

    return run


def _fill(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


HOSTILE = {
    "label-spaces": lambda n: "verdict:" + " " * (n - 9) + "1",
    "verdict-lines": _fill("VERDICT: CORRECT\n"),
    "json-open": _fill("["),
    "json-string-escapes": lambda n: '"' + _fill("\\a")(n - 1),
    "json-objects": _fill('{"correct": true}'),
    "tags": _fill("</memory><memories><question"),
    "lt-spaces": _fill("<" + " " * 63),
    "secret-names": _fill("a-b.c_api_key-"),
    "headers": _fill("Authorization: Bearer " + "x" * 100 + "; "),
    "one-run": lambda n: "x" * n,
    "url-runs": _fill("a://b:c"),
    "tokens": _fill("sk-" + "A1b2" * 10 + " "),
    "entropy": _fill("aZ3kQ9pL2mX7vB4nR8tY1wE6"),
    "words": _fill("John was in Italy in December 2023. "),
}


def _parsers() -> dict[str, Callable[[str], object]]:
    from meclear_integrations.admission.outputs import ProbeSetOutput, parse_output
    from meclear_integrations.core.bounded_json import load_object, nesting_depth
    from meclear_integrations.judges.answer_prompts import escape_attribute, fence, neutralize_tags
    from meclear_integrations.judges.parsing import verdict_from_text
    from meclear_integrations.judges.protocol import parse_verdict, read_nonce
    from meclear_integrations.simulation.reader import fenced_block

    return {
        "parse_verdict": lambda t: parse_verdict(t, "0a1b2c3d4e5f"),
        "verdict_from_text": verdict_from_text,
        "read_nonce": read_nonce,
        "load_object(cap 2 MB)": lambda t: load_object(t, max_chars=2 * MB),
        "nesting_depth": lambda t: nesting_depth(t, 8),
        "admission parse_output": lambda t: parse_output(ProbeSetOutput, t),
        "neutralize_tags": neutralize_tags,
        "escape_attribute": escape_attribute,
        "fence": lambda t: fence("memory", t, id=t),
        "fenced_block": lambda t: fenced_block("candidate_answer", "<candidate_answer>\n" + t),
        "redact": redact,
        "redact_payload": lambda t: redact_payload({"error": t, "api_key": t}),
    }


@pytest.mark.slow
@pytest.mark.parametrize("parser", sorted(_parsers()))
def test_parsers_of_untrusted_text_are_linear(parser: str) -> None:
    parse = _quietly(_parsers()[parser])
    for name, make in HOSTILE.items():
        try:
            assert_linear(parse, make)
        except AssertionError as exc:
            raise AssertionError(f"{parser} on {name!r}: {exc}") from None


# ---------------------------------------------------------------- end to end: no stall
STALL = f"{INJECTION}\nverdict:" + " " * 16_000 + "1"  # quadratic for a backtracking regex


def _evaluate(asynchronous: bool):  # type: ignore[no-untyped-def]
    def answer(coalition: tuple[Memory, ...]) -> str:
        return obeying_agent(format_answer_prompt(QUESTION, coalition))

    async def aanswer(coalition: tuple[Memory, ...]) -> str:
        return answer(coalition)

    judge = ReferenceFreeLLMJudge(HonestJudgeModel())
    return task_evaluator(
        aanswer if asynchronous else answer, judge, question=QUESTION, judge_context="coalition"
    )


BENIGN = f"{INJECTION}\nverdict:" + "x" * 16_000 + "1"  # as long, nothing to backtrack on


def _memories(hostile: str = STALL) -> list[Memory]:
    return [Memory(id="g1", content=GOLD_MEMORY), Memory(id="inj", content=hostile)]


def _config(benign_seconds: float) -> ClearanceConfig:
    """A 1 s wall budget, or 4x the benign run's time when the machine is that loaded (the
    run must complete within it; a parse that stalls takes far longer than a benign one)."""
    budget = max(1.0, 4 * benign_seconds)
    return ClearanceConfig(
        estimator="exact",
        budget={"max_wall_seconds": budget},
        failure={"retry": {"max_attempts": 1}},
    )


def _benign_seconds() -> float:
    """The same clearance with a memory as long but harmless (the same-run baseline)."""
    started = time.monotonic()
    MeClearEngine(ClearanceConfig(estimator="exact")).clear(_memories(BENIGN), _evaluate(False))
    return time.monotonic() - started


def test_a_stalling_memory_cannot_hold_the_sync_path_past_its_budget() -> None:
    config = _config(_benign_seconds())
    report = MeClearEngine(config).clear(_memories(), _evaluate(False))
    # a stalled parse would end the run at its wall budget: status "failed", time_budget
    assert report.status == "complete" and report.cleared_ids == ["inj"]


async def test_a_stalling_memory_cannot_stall_the_event_loop() -> None:
    benign = MeClearEngine(ClearanceConfig(estimator="exact"))
    _, benign_seconds, benign_gap = await ticking(benign.aclear(_memories(BENIGN), _evaluate(True)))
    config = _config(benign_seconds)
    report, _, gap = await ticking(MeClearEngine(config).aclear(_memories(), _evaluate(True)))
    assert report.status == "complete" and report.cleared_ids == ["inj"]  # within its budget
    assert gap < 0.5 + 2 * benign_gap  # the loop kept ticking (as it does on a benign run)
