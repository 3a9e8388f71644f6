"""The offline reader's stand-ins cannot leak: no memory copied into answers, meaning-based
contradiction instead of the builder's wording."""

from __future__ import annotations

import json

import pytest

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission import prompts as P
from meclear_integrations.admission.reader import AdmissionReader
from meclear_integrations.admission.reading import contradicts, read

CONTEXT = (
    "[session 1, 2023-05-08]\n"
    "Caroline: I went to a pottery class yesterday and made a blue bowl for my mom.\n"
    "Melanie: That sounds lovely, Caroline!"
)
MEMORIES = [
    "Caroline made a blue bowl for her mom in a pottery class.",
    "Caroline made a blue bowl for her mom at Denver Clay Studio in 2019.",
    "User is allergic to shellfish.",
]


@pytest.mark.parametrize("memory", MEMORIES)
def test_no_answer_carries_the_memory_sentence(memory: str) -> None:
    decision = ConMemAdmitter(AdmissionReader()).decide(memory, CONTEXT)
    for probe in decision.probes:
        for answer in (probe.control_response, probe.treatment_response):
            assert answer is not None and memory not in answer
            assert memory.rstrip(".") not in answer


def test_a_treatment_answer_applies_the_particulars_the_query_lacks() -> None:
    reader = AdmissionReader()
    query = "What should I cook tonight, given that I am allergic?"
    answer = reader.complete(P.response_prompt(query, "User is allergic to shellfish."))
    assert answer == f"Tailored answer to: {query} (with your shellfish)"
    assert "User is allergic to shellfish" not in answer


def test_the_blind_judge_cannot_do_the_auditors_reading() -> None:
    """Details the history never mentions: the auditor says risk, the blind judge TIE."""
    wrong = "Caroline made a blue bowl for her mom at Denver Clay Studio in 2019."
    decision = ConMemAdmitter(AdmissionReader()).decide(wrong, CONTEXT)
    relevant = decision.probes[0]
    assert relevant.audit is not None and relevant.judge is not None
    assert relevant.audit.memory_used and relevant.audit.label == "risk"
    assert relevant.judge.preference == "tie"  # it cannot check what it never saw
    assert "Denver" in str(relevant.treatment_response)  # the answer shows the particulars


@pytest.mark.parametrize(
    "memory",
    [
        "Correction: Caroline made the bowl for her aunt, not her mom.",
        "Caroline made the bowl for her aunt rather than her mom.",
        "Caroline made the bowl for her aunt; it wasn't for her mom.",
        "Caroline no longer makes bowls for her mom but for her aunt.",
    ],
)
def test_a_contradiction_is_read_by_meaning_whatever_the_wording(memory: str) -> None:
    assert contradicts(memory, CONTEXT)
    assert not read(memory, CONTEXT).grounded


@pytest.mark.parametrize(
    ("memory", "context"),
    [
        ("User prefers tea, not coffee.", "user: I prefer tea, not coffee, in the morning."),
        ("Andrew does not have any pets.", "Andrew: I don't have any pets right now."),
        ("Caroline made a blue bowl, not a vase.", CONTEXT),
    ],
)
def test_a_true_memory_with_a_negation_is_not_a_contradiction(memory: str, context: str) -> None:
    assert not contradicts(memory, context)


def test_a_user_preference_said_verbatim_is_stored() -> None:
    context = "user: I prefer tea, not coffee, so please never offer me coffee in the morning."
    decision = ConMemAdmitter(AdmissionReader()).decide("User prefers tea, not coffee.", context)
    assert decision.reason is None or decision.reason.reason_type != "false_memory_use"
    assert json.loads(decision.model_dump_json())["decision"] == decision.decision


def test_the_wording_table_counts_every_rewording() -> None:
    from meclear_bench.admission_locomo import BenchCandidate
    from meclear_bench.admission_wording import REWORDINGS, wording_table

    context = CONTEXT
    wrong = BenchCandidate(
        id="w",
        split="test",
        source="t",
        kind="wrong_correction",
        candidate_memory="Correction: Caroline made the bowl for her aunt, not her mom.",
        historical_context=context,
        candidate_date="2023-05-08",
        label="do_not_store",
        reason_type="false_memory_use",
        evidence=[],
    )
    true = wrong.model_copy(
        update={"id": "u", "kind": "useful", "label": "store", "candidate_memory": MEMORIES[0]}
    )
    assert REWORDINGS["rather_than"](wrong.candidate_memory) == (
        "Caroline made the bowl for her aunt, rather than her mom."
    )
    table = wording_table([wrong, true], "test")
    assert table["wrong_correction"] == {
        "n": 1,
        "not_grounded": {"builder": 1, "rather_than": 1, "no_negation": 0},
        # the paraphrase ("...; what I had noted (her mom) was an error.") has no negation
        # the reader reads and no detail the context lacks: like "no_negation", not flagged
        "not_grounded_paraphrased": 0,
    }
    assert table["useful"] == {"n": 1, "not_grounded": 0}
