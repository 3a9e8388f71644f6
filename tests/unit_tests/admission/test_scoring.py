"""CMTE arithmetic (Sec. 4.5) per role and label, weights, tie-break near zero."""

from __future__ import annotations

import pytest

from meclear_integrations.admission import AdmissionConfig, ConMemAdmitter
from meclear_integrations.admission.config import CMTEWeights, RoleWeights
from meclear_integrations.admission.decision import AttributionAudit
from meclear_integrations.admission.scoring import contribution, effect, unit_score
from tests.support.stage_models import Script, StageModel

CANDIDATE, CONTEXT = "User is vegetarian.", "user: I don't eat meat, any ideas for dinner?"

# (role, auditor label, judge preference) -> paper contribution (Sec. 4.5).
PAPER = [
    ("relevant", "utility", "treatment", 1.0),
    ("relevant", "utility", "control", 0.0),
    ("relevant", "utility", "tie", 0.0),
    ("relevant", "unnecessary", "tie", 0.0),
    ("relevant", "risk", "control", -1.0),
    ("relevant", "neutral", "treatment", 0.0),
    ("irrelevant", "utility", "treatment", 0.0),
    ("irrelevant", "unnecessary", "tie", -0.5),
    ("irrelevant", "risk", "treatment", -1.0),
    ("irrelevant", "neutral", "control", 0.0),
    ("risk", "utility", "treatment", 0.5),
    ("risk", "utility", "control", 0.0),
    ("risk", "unnecessary", "treatment", -0.5),
    ("risk", "risk", "tie", -1.5),
    ("risk", "neutral", "tie", 0.0),
]


def audit(label: str, used: bool = True) -> AttributionAudit:
    return AttributionAudit(memory_used=used, materially_changed=used, label=label, explanation="")


@pytest.mark.parametrize(("role", "label", "pref", "expected"), PAPER)
def test_contribution_matches_the_paper(role, label, pref, expected) -> None:
    a = audit(label, used=label != "neutral")
    assert contribution(role, a, effect(a, pref), CMTEWeights()) == expected


@pytest.mark.parametrize("label", ["utility", "unnecessary", "risk"])
def test_unattributed_use_contributes_nothing(label: str) -> None:
    a = audit(label, used=False)
    assert effect(a, "treatment") == "neutral"
    for role in ("relevant", "irrelevant", "risk"):
        assert contribution(role, a, "neutral", CMTEWeights()) == 0.0


def test_effect_needs_attribution_and_judge() -> None:
    assert effect(audit("utility"), "treatment") == "helpful"
    assert effect(audit("risk"), "control") == "harmful"
    assert effect(audit("utility"), "tie") == "neutral"
    assert effect(audit("utility", used=False), "treatment") == "neutral"


@pytest.mark.parametrize(("role", "label", "pref", "expected"), PAPER)
def test_engine_cmte_is_the_mean_of_contributions(role, label, pref, expected) -> None:
    labels = {"relevant": "neutral", "irrelevant": "neutral", "risk": "neutral", role: label}
    prefs = {"relevant": "tie", "irrelevant": "tie", "risk": "tie", role: pref}
    model = StageModel(Script(labels=labels, preferences=prefs, tie_break="DO_NOT_STORE"))
    d = ConMemAdmitter(model).decide(CANDIDATE, CONTEXT)
    by_role = {p.role: p.contribution for p in d.probes}
    assert by_role[role] == expected
    assert d.cmte == pytest.approx(expected / 3)
    if expected > 0:
        assert d.decision == "store" and not d.tie_break_ran
    elif expected < 0:
        assert d.decision == "do_not_store" and not d.tie_break_ran
    else:  # exactly zero: the tie-break judge decides
        assert d.tie_break_ran and d.decision == "do_not_store"
        assert model.count("tie_break") == 1


def test_all_three_roles_add_up() -> None:
    script = Script(
        labels={"relevant": "utility", "irrelevant": "unnecessary", "risk": "risk"},
        preferences={"relevant": "treatment", "irrelevant": "tie", "risk": "control"},
    )
    d = ConMemAdmitter(StageModel(script)).decide(CANDIDATE, CONTEXT)
    assert [p.contribution for p in d.probes] == [1.0, -0.5, -1.5]
    assert d.cmte == pytest.approx(-1.0 / 3)
    assert d.decision == "do_not_store"


def test_weights_are_configurable() -> None:
    weights = CMTEWeights(risk=RoleWeights(helpful_utility=0.0, unnecessary=-0.25, risk=-2.0))
    script = Script(
        labels={"relevant": "utility", "irrelevant": "neutral", "risk": "risk"},
        preferences={"relevant": "treatment", "irrelevant": "tie", "risk": "control"},
    )
    d = ConMemAdmitter(StageModel(script), AdmissionConfig(weights=weights)).decide(
        CANDIDATE, CONTEXT
    )
    assert [p.contribution for p in d.probes] == [1.0, 0.0, -2.0]
    assert d.cmte == pytest.approx(-1.0 / 3)


@pytest.mark.parametrize("verdict", ["STORE", "DO_NOT_STORE"])
def test_cancelling_evidence_goes_to_the_tie_break(verdict: str) -> None:
    # relevant +1.0 and irrelevant risk -1.0 cancel: CMTE = 0 exactly.
    script = Script(
        labels={"relevant": "utility", "irrelevant": "risk", "risk": "neutral"},
        preferences={"relevant": "treatment", "irrelevant": "control", "risk": "tie"},
        tie_break=verdict,
    )
    model = StageModel(script)
    d = ConMemAdmitter(model).decide(CANDIDATE, CONTEXT)
    assert d.cmte == 0.0 and d.score == 0.5
    assert d.tie_break is not None and d.decision == verdict.lower()
    assert model.count("tie_break") == 1
    prompt = next(p for s, p in model.calls if s == "tie_break")
    # The tie-break judge sees raw evidence only: no weights, no score.
    assert "-1.0" not in prompt and "+1.0" not in prompt and "c=" not in prompt
    assert "label=risk" in prompt and "label=utility" in prompt


def test_epsilon_widens_the_inconclusive_band() -> None:
    script = Script(
        labels={"relevant": "neutral", "irrelevant": "neutral", "risk": "utility"},
        preferences={"relevant": "tie", "irrelevant": "tie", "risk": "treatment"},
        tie_break="DO_NOT_STORE",
    )
    plain = ConMemAdmitter(StageModel(script)).decide(CANDIDATE, CONTEXT)
    assert plain.decision == "store" and not plain.tie_break_ran  # CMTE = 1/6
    wide = ConMemAdmitter(StageModel(script), AdmissionConfig(epsilon=0.2)).decide(
        CANDIDATE, CONTEXT
    )
    assert wide.tie_break_ran and wide.decision == "do_not_store"
    assert wide.cmte == pytest.approx(1 / 6)


def test_unit_score_maps_bounds_and_zero() -> None:
    w = CMTEWeights()
    low, high = w.bounds()
    assert (low, high) == pytest.approx((-3.5 / 3, 1.5 / 3))
    assert unit_score(low, w) == 0.0 and unit_score(high, w) == 1.0
    assert unit_score(0.0, w) == 0.5
    assert 0.5 < unit_score(0.1, w) < 1.0 and 0.0 < unit_score(-0.1, w) < 0.5
