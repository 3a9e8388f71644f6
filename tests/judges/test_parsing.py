"""Tolerant verdict parsing; an unreadable verdict is an error, never a default score."""

from __future__ import annotations

import pytest

from meclear_integrations.judges import VerdictParseError, parse_verdict


@pytest.mark.parametrize(
    ("reply", "score", "method"),
    [
        ("Yes, correct because both say December 2023.", 1.0, "label"),
        ("yes", 1.0, "label"),
        ("No.", 0.0, "label"),
        ("Incorrect - the reference says December.", 0.0, "label"),
        ("VERDICT: CORRECT\nThe dates match.", 1.0, "label"),
        ("**Verdict:** incorrect", 0.0, "label"),
        ("Reasoning first. Grade: correct", 1.0, "label"),
        ("The answer is incorrect.", 0.0, "label"),
        ("The candidate answer is not correct.", 0.0, "label"),
        ("The candidate answer is right.", 1.0, "label"),
        ("1", 1.0, "number"),
        ("0", 0.0, "number"),
        ("0.75", 0.75, "number"),
        ('{"reason": "same date", "correct": true}', 1.0, "json"),
        ('Sure! ```json\n{"correct": false}\n```', 0.0, "json"),
        ('{"verdict": "INCORRECT"}', 0.0, "json"),
        ('{"score": 0.25}', 0.25, "json"),
    ],
)
def test_accepted_forms(reply: str, score: float, method: str) -> None:
    verdict = parse_verdict(reply)
    assert verdict.score == score
    assert verdict.parsed_by == method
    assert verdict.raw == reply


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "I cannot tell from this.",
        "Partially correct: the year is right.",
        "It is correct in one respect and wrong in another.",
        '{"thoughts": "hmm"}',
        "2",
    ],
)
def test_unreadable_verdicts_raise(reply: str) -> None:
    with pytest.raises(VerdictParseError) as info:
        parse_verdict(reply)
    assert info.value.raw == reply


def test_reason_is_kept() -> None:
    verdict = parse_verdict("Yes, correct because both say December 2023.")
    assert verdict.reason is not None and "December 2023" in verdict.reason
