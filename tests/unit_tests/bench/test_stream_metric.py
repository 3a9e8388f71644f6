"""The loop benchmark's off-topic count: unrelated questions only, same-fact ones apart."""

from __future__ import annotations

import pytest

from meclear_bench.stream_loop import classify_withheld

from .test_stream import REAL


def test_off_topic_is_a_harm_proven_on_an_unrelated_question() -> None:
    evidence_of = {
        52: ["D13:4", "D7:18"],  # "What are Melanie's pets' names?"
        124: ["D13:4"],  # "What pets does Melanie have?" (shares D13:4: the same fact)
        40: ["D1:8"],  # "What is Jon's favorite style of dance?"
        39: ["D1:9"],  # "What is Gina's favorite style of dance?"
    }
    off, same = classify_withheld(124, evidence_of[124], [("fault", 52), ("own", 124)], evidence_of)
    assert (off, same) == ([], ["fault"])  # the same fact: in scope by design
    off, same = classify_withheld(39, evidence_of[39], [("jon-fault", 40)], evidence_of)
    assert (off, same) == (["jon-fault"], [])  # another person: off-topic
    off, same = classify_withheld(39, evidence_of[39], [("b", 7), ("a", 40)], evidence_of)
    assert (off, same) == (["a", "b"], [])  # an unknown question counts as unrelated
    assert classify_withheld(39, [], [("x", 39)], evidence_of) == ([], [])


@pytest.mark.skipif(not REAL, reason="LoCoMo data not present")
def test_stream_queries_carry_their_gold_evidence() -> None:
    from meclear_bench.stream_build import build_streams

    build = build_streams(REAL[0], conversations=["26"], max_queries_per_conversation=10)
    queries = build.streams[0].queries
    assert queries and all(q.evidence for q in queries)
    for q in queries:  # the same LoCoMo question always has the same evidence
        assert {tuple(o.evidence) for o in queries if o.question == q.question} == {
            tuple(q.evidence)
        }
