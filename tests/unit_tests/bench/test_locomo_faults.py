"""Fault proposals: records read as statements, wrong answers come from the conversation."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from meclear_bench.faults import (
    answers_conflict,
    fault_texts,
    is_temporal,
    same_kind_distractor,
    temporal_distractor,
    wh_class,
)
from meclear_bench.statements import statement


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        (
            "When did Ana go to the support group?",
            "7 May 2023",
            "Ana went to the support group on 7 May 2023.",
        ),
        (
            "When is Ben planning on going camping?",
            "June 2023",
            "Ben is planning on going camping in June 2023.",
        ),
        ("Where did Ana move from?", "Porto", "Porto is where Ana moved from."),
        ("What is Ana's favorite dish?", "paella", "Ana's favorite dish is paella."),
        ("What area was hit by a flood?", "West County", "West County was hit by a flood."),
        (
            "Would Ana enjoy a cruise?",
            "Likely no",
            "On whether Ana would enjoy a cruise: likely no.",
        ),
    ],
)
def test_statements(question: str, answer: str, expected: str) -> None:
    assert statement(question, answer) == expected


def test_unparsed_question_falls_back_to_an_explicit_record() -> None:
    assert statement("How did the audience react?", "they cheered") == (
        'The answer to "How did the audience react?" is they cheered.'
    )


def test_temporal_distractor_uses_conversation_dates_at_the_same_granularity() -> None:
    dates = [date(2023, 5, 8), date(2023, 6, 21), date(2022, 1, 3)]
    for seed in range(5):
        rng = np.random.default_rng(seed)
        wrong = temporal_distractor("The week before 9 June 2023", dates, rng)
        assert wrong in {
            "The week before 8 May 2023",
            "The week before 21 June 2023",
            "The week before 3 January 2022",
        }
        assert temporal_distractor("June 2023", dates, rng) in {"May 2023", "January 2022"}
        assert temporal_distractor("2023", dates, rng) == "2022"
    assert temporal_distractor("4 years", dates, np.random.default_rng(0)) is None
    assert temporal_distractor("2023", [date(2023, 1, 1)], np.random.default_rng(0)) is None


def test_kinds_and_conflicts() -> None:
    assert wh_class("What kind of art does Ana make?") == "what art"
    assert wh_class("How old is Ben's dog?") == "how old"
    assert wh_class("What did Ana research?") == "what"
    assert is_temporal("When did Ana leave?", "May 2023", 4)
    assert not is_temporal("Which country was Ana visiting in 2010?", "France", 2)
    assert not answers_conflict("the Porto", "porto")
    assert not answers_conflict("Porto and Lisbon", "Porto")
    assert answers_conflict("Madrid", "Porto")
    rng = np.random.default_rng(0)
    assert same_kind_distractor("Porto", ["porto", "Porto city", "Madrid"], rng) == "Madrid"
    assert same_kind_distractor("Porto", ["porto"], rng) is None


@pytest.mark.parametrize("fault_type", ["explicit_conflict", "precise_factual", "precise_temporal"])
def test_fault_records_never_contain_each_other(fault_type: str) -> None:
    for structure, n in (("direct", 1), ("redundant", 2), ("joint", 2)):
        texts = fault_texts(
            fault_type,
            structure,
            question="Where did Ana move from?",
            wrong="Madrid",
            reference="Porto",
            speaker="Ana",
            other="Ben",
        )
        assert len(texts) == n and all("Madrid" in t for t in texts)
        assert not any(a in b for a in texts for b in texts if a is not b)
        if fault_type == "explicit_conflict":
            assert all("Porto" in t for t in texts)
