"""The graded CMTE option (AdmissionConfig.effect="graded") and the ROC AUC helper."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from meclear_integrations.admission import AdmissionConfig, ConMemAdmitter
from meclear_integrations.admission.metrics import roc_auc
from meclear_integrations.admission.reader import AdmissionReader
from meclear_integrations.admission.rescore import Grading, grid_weights, redecide
from meclear_integrations.admission.scoring import (
    graded_contribution,
    memory_change,
    probe_strength,
)
from meclear_integrations.core.errors import ConfigurationError
from tests.support.stage_models import Script, StageModel, role_of_query, section

CONTEXT = "[session 1, 2023-05-08]\nuser: I am allergic to shellfish and I love hiking in Oregon."
QUERY = "Any dinner idea for tonight?"
CONTROL = "Try a pasta dish for tonight."


# -- roc_auc ----------------------------------------------------------------------------
def _brute_auc(scores: list[float | None], gold: list[str]) -> float | None:
    pos = [s for s, g in zip(scores, gold, strict=True) if s is not None and g == "store"]
    neg = [s for s, g in zip(scores, gold, strict=True) if s is not None and g != "store"]
    if not pos or not neg:
        return None
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


@pytest.mark.parametrize("seed", range(25))
def test_roc_auc_matches_the_brute_force_pairwise_count(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 60)
    levels = rng.choice([3, 10, 1000])  # few levels: many ties
    scores: list[float | None] = [
        None if rng.random() < 0.1 else rng.randint(0, levels) / levels for _ in range(n)
    ]
    gold = [rng.choice(["store", "do_not_store"]) for _ in range(n)]
    expected = _brute_auc(scores, gold)
    got = roc_auc(scores, gold)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_roc_auc_extremes_and_errors() -> None:
    gold = ["store", "store", "do_not_store", "do_not_store"]
    assert roc_auc([4, 3, 2, 1], gold) == 1.0
    assert roc_auc([1, 2, 3, 4], gold) == 0.0
    assert roc_auc([1, 1, 1, 1], gold) == 0.5
    assert roc_auc([1, 2], ["store", "store"]) is None
    assert roc_auc([None, 2, 1], ["store", "store", "do_not_store"]) == 1.0
    assert roc_auc([1, 2, 3], ["do_not_store", "x", "store"], positive="store") == 1.0
    with pytest.raises(ConfigurationError):
        roc_auc([1.0], ["store", "do_not_store"])
    with pytest.raises(ConfigurationError):
        roc_auc([float("nan"), 1.0], ["store", "do_not_store"])


# -- strength and graded contributions ---------------------------------------------------
def test_memory_change_is_what_the_treatment_adds_beyond_control_and_probe() -> None:
    change = memory_change(
        QUERY, CONTROL, "Try a shellfish-free pasta dish for dinner, Oregon style."
    )
    words = {min(forms) for forms in change}
    assert words == {"shellfish", "free", "oregon", "style"}
    assert memory_change(QUERY, CONTROL, CONTROL) == []


def test_probe_strength_share_and_count() -> None:
    treatment = "Try a shellfish-free pasta dish, Oregon style."
    # changed: shellfish, free, oregon, style; the context has shellfish and oregon
    assert probe_strength(QUERY, CONTROL, treatment, CONTEXT, kind="grounded_share") == 0.5
    assert probe_strength(QUERY, CONTROL, treatment, CONTEXT, kind="grounded_count") == 0.5
    assert probe_strength(
        QUERY, CONTROL, treatment, CONTEXT, kind="grounded_count", half=1.0
    ) == pytest.approx(2 / 3)
    # more supported particulars: more strength (count); nothing supported: 0
    more = "Try a shellfish-free pasta dish after hiking in Oregon."
    assert probe_strength(QUERY, CONTROL, more, CONTEXT) > probe_strength(
        QUERY, CONTROL, treatment, CONTEXT
    )
    assert probe_strength(QUERY, CONTROL, "Try a pasta dish, Roman style.", CONTEXT) == 0.0
    # no change, or a response missing: no strength
    assert probe_strength(QUERY, CONTROL, CONTROL, CONTEXT) == 0.0
    assert probe_strength(QUERY, None, treatment, CONTEXT) == 0.0
    with pytest.raises(ConfigurationError):
        probe_strength(QUERY, CONTROL, treatment, CONTEXT, half=0.0)


def test_graded_contribution_scales_positive_evidence_and_keeps_penalties() -> None:
    assert graded_contribution(1.0, 0.25) == 0.25
    assert graded_contribution(0.5, 1.0) == 0.5
    assert graded_contribution(1.0, 7.0) == 1.0  # clamped to [0, 1]
    assert graded_contribution(1.0, -1.0) == 0.0
    for penalty in (-0.5, -1.0, -1.5):
        assert graded_contribution(penalty, 0.0) == penalty
    assert graded_contribution(0.0, 0.5) == 0.0


# -- in the admitter -----------------------------------------------------------------------
def _model(treatment: str, script: Script | None = None) -> StageModel:
    """A scripted model whose treatment response is ``treatment`` (control: CONTROL)."""
    model = StageModel(script)

    def respond(prompt: str) -> str:
        return treatment if section(prompt, "USER_INFORMATION") is not None else CONTROL

    def judge(prompt: str) -> str:
        # the scripted preference, mapped to where the treatment response was shown
        want = model.script.preferences[role_of_query(section(prompt, "CURRENT_QUERY") or "")]
        at = "B" if section(prompt, "RESPONSE_A") == CONTROL else "A"
        raw = {"treatment": at, "control": "A" if at == "B" else "B", "tie": "TIE"}[want]
        return json.dumps({"preference": raw, "explanation": f"prefers {want}"})

    model.handlers.update({"respond": respond, "judge": judge})
    return model


def test_default_is_the_papers_categorical_cmte() -> None:
    assert AdmissionConfig().effect == "categorical"
    model = _model("Try shellfish-free pasta, Roman style.")
    d = ConMemAdmitter(model).decide("User is allergic to shellfish.", CONTEXT)
    assert [p.contribution for p in d.probes] == [1.0, 0.0, 0.0]


def test_graded_admitter_grades_the_helpful_probe_by_its_strength() -> None:
    treatment = "Try a shellfish-free pasta dish, Oregon style."
    model = _model(treatment)
    cfg = AdmissionConfig(effect="graded", graded_strength="grounded_share")
    d = ConMemAdmitter(model, cfg).decide("User is allergic to shellfish.", CONTEXT)
    assert [p.contribution for p in d.probes] == [0.5, 0.0, 0.0]
    assert d.cmte == pytest.approx(0.5 / 3)
    assert d.decision == "store" and not d.tie_break_ran
    assert d.config.effect == "graded"


def test_graded_penalties_keep_their_full_weight() -> None:
    script = Script(
        labels={"relevant": "utility", "irrelevant": "unnecessary", "risk": "risk"},
        preferences={"relevant": "treatment", "irrelevant": "tie", "risk": "control"},
    )
    model = _model("Try shellfish-free pasta.", script)
    d = ConMemAdmitter(model, AdmissionConfig(effect="graded")).decide("m.", CONTEXT)
    # shellfish and free changed, shellfish grounded: count strength 1 / (1 + 2)
    assert [p.contribution for p in d.probes] == pytest.approx([1 / 3, -0.5, -1.5])


def test_positive_evidence_the_context_never_supports_goes_to_the_tie_break() -> None:
    # the treatment's change ("Roman", "style") is nowhere in the context: graded CMTE = 0
    model = _model("Try a pasta dish, Roman style.", Script(tie_break="DO_NOT_STORE"))
    d = ConMemAdmitter(model, AdmissionConfig(effect="graded")).decide("m.", CONTEXT)
    assert d.cmte == 0.0 and d.tie_break_ran and d.decision == "do_not_store"
    assert model.count("tie_break") == 1
    # the paper's categorical CMTE stores the same evidence outright
    plain = ConMemAdmitter(_model("Try a pasta dish, Roman style.")).decide("m.", CONTEXT)
    assert plain.cmte == pytest.approx(1 / 3) and plain.decision == "store"


CASES = [
    (
        "Caroline attended an LGBTQ support group recently and found the transgender "
        "stories inspiring.",
        "[session 1, 2023-05-08]\nCaroline: I went to a LGBTQ support group yesterday and it "
        "was so powerful.\nMelanie: Did you hear any inspiring stories?\nCaroline: The "
        "transgender stories were so inspiring!",
    ),
    (
        "Melanie is planning a camping trip with her kids to the mountains next month.",
        "[session 2, 2023-06-01]\nMelanie: We're going camping in the mountains with the kids "
        "next month!\nCaroline: That sounds fun.",
    ),
    (
        "User is allergic to shellfish.",
        "[session 1, 2024-01-02]\nuser: I am allergic to shellfish, any dinner ideas?",
    ),
    (
        "Correction: Jon moved to Boston, not Denver.",
        "[session 1, 2023-01-01]\nJon: I just moved to Denver for work.",
    ),
]


@pytest.mark.parametrize(("memory", "context"), CASES)
@pytest.mark.parametrize("kind", ["grounded_count", "grounded_share"])
def test_engine_and_redecision_of_recorded_evidence_agree(memory, context, kind) -> None:
    graded = ConMemAdmitter(
        AdmissionReader(), AdmissionConfig(effect="graded", graded_strength=kind)
    ).decide(memory, context)
    plain = ConMemAdmitter(AdmissionReader()).decide(memory, context)
    assert [p.control_response for p in graded.probes] == [p.control_response for p in plain.probes]
    zero = plain.tie_break.decision if plain.tie_break else "store"
    decision, value, at_zero = redecide(
        plain.probes, weights=plain.config.weights, zero=zero, grading=Grading(context, kind=kind)
    )
    assert value == pytest.approx(graded.cmte)
    if not at_zero:
        assert decision == graded.decision
    # graded evidence never outweighs the categorical: same sign or zero, never larger
    assert graded.cmte is not None and plain.cmte is not None
    assert abs(graded.cmte) <= abs(plain.cmte) + 1e-12
    assert graded.cmte * plain.cmte >= 0
    # and on every one of the 27 settings
    for _, weights in grid_weights():
        g = redecide(plain.probes, weights=weights, zero="store", grading=Grading(context))[1]
        c = redecide(plain.probes, weights=weights, zero="store")[1]
        assert g * c >= 0 and abs(g) <= abs(c) + 1e-12


def test_the_strength_never_reads_the_memory_or_a_label() -> None:
    # same probe, responses and context: same strength whatever the memory says
    a = ConMemAdmitter(AdmissionReader(), AdmissionConfig(effect="graded"))
    d = a.decide(*CASES[0])
    p = d.probes[0]
    s1 = probe_strength(p.query, p.control_response, p.treatment_response, CASES[0][1])
    assert 0.0 < s1 <= 1.0
    assert p.contribution == pytest.approx(graded_contribution(1.0, s1))


def test_a_graded_zero_is_sent_to_the_tie_break_in_re_decisions() -> None:
    from meclear_bench.admission_locomo_run import _ever_zero

    # categorical CMTE 1/3 (never zero on the primary setting), graded 0 (nothing grounded)
    d = ConMemAdmitter(_model("Try a pasta dish, Roman style.")).decide("m.", CONTEXT)
    primary = [(AdmissionConfig().weights, "full")]
    assert not _ever_zero(d, primary)  # type: ignore[arg-type]
    assert _ever_zero(d, primary, [Grading(CONTEXT)])  # type: ignore[arg-type]


def test_a_dev_threshold_decides_against_cmte_without_the_tie_break() -> None:
    treatment = "Try a shellfish-free pasta dish, Oregon style."  # graded share: 0.5 / 3
    cfg = AdmissionConfig(effect="graded", graded_strength="grounded_share")
    assert ConMemAdmitter(_model(treatment), cfg).decide("m.", CONTEXT).decision == "store"
    high = cfg.model_copy(update={"decision_threshold": 0.2})
    d = ConMemAdmitter(_model(treatment), high).decide("m.", CONTEXT)
    assert d.cmte == pytest.approx(0.5 / 3) and d.decision == "do_not_store"
    low = cfg.model_copy(update={"decision_threshold": 0.1})
    assert ConMemAdmitter(_model(treatment), low).decide("m.", CONTEXT).decision == "store"
    # a zero CMTE falls on the threshold's side, no tie-break call
    for t, expected in ((0.05, "do_not_store"), (-0.05, "store")):
        model = _model("Try a pasta dish, Roman style.", Script(tie_break="STORE"))
        cfg_t = AdmissionConfig(effect="graded", decision_threshold=t)
        z = ConMemAdmitter(model, cfg_t).decide("m.", CONTEXT)
        assert z.cmte == 0.0 and z.decision == expected and model.count("tie_break") == 0
    with pytest.raises(ValueError, match="irrelevant_probe"):
        AdmissionConfig(decision_threshold=0.2, irrelevant_probe="if_open")
