"""The blind judge carries information the auditor lacks (offline reader), so its ablation
measures something: where it does not confirm an audited utility, the probe contributes 0
and the tie-break, reading that disagreement in the raw evidence, rejects; without the
judge the same evidence stores."""

from __future__ import annotations

from meclear_integrations.admission.config import AdmissionConfig
from meclear_integrations.admission.engine import ConMemAdmitter
from meclear_integrations.admission.reader import AdmissionReader
from meclear_integrations.admission.rescore import redecide

CONTEXT = (
    "[session 3, 2022-02-07]\n"
    "Joanna: Your cooking skills are awesome. Seen any good movies lately?\n"
    "Nate: Not recently. Any good ones you'd recommend?\n"
    'Joanna: I just watched "Little Women" and it was amazing! It\'s a great story about '
    "sisterhood, love, and reaching for your dreams.\n"
    "Nate: Oh, that sounds like a great one! Thanks for the recommendation!"
)


def test_removing_the_judge_stores_what_the_judge_did_not_confirm() -> None:
    weights = AdmissionConfig().weights
    wrong = ConMemAdmitter(AdmissionReader()).decide(
        "Dragons is what Joanna recently watched and recommended to Nate on February 7, 2022.",
        CONTEXT,
    )
    relevant = next(p for p in wrong.probes if p.role == "relevant")
    assert relevant.audit is not None and relevant.audit.label == "utility"
    assert relevant.judge is not None and relevant.judge.preference != "treatment"
    assert relevant.control_response != relevant.treatment_response
    assert "Dragons is what" not in relevant.treatment_response  # the answer never quotes it
    assert wrong.cmte == 0 and wrong.decision == "do_not_store"
    assert wrong.tie_break is not None and "blind judge" in wrong.tie_break.explanation
    decision, value, _ = redecide(
        wrong.probes, weights=weights, variant="no_quality_judge", zero="do_not_store"
    )
    assert value > 0 and decision == "store"  # without the judge the wrong memory is stored


def test_a_memory_the_judge_confirms_is_stored_with_or_without_it() -> None:
    weights = AdmissionConfig().weights
    right = ConMemAdmitter(AdmissionReader()).decide(
        "Joanna recently watched Little Women and recommended it to Nate on February 7, 2022.",
        CONTEXT,
    )
    assert right.decision == "store" and right.cmte is not None and right.cmte > 0
    decision, _, _ = redecide(
        right.probes, weights=weights, variant="no_quality_judge", zero="do_not_store"
    )
    assert decision == "store"
