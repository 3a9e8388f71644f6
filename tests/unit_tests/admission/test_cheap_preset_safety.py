"""The cheap preset never rejects a memory that the default configuration stores."""

from __future__ import annotations

import importlib.util
import itertools
import random
import re
from pathlib import Path

import pytest

from meclear_integrations.admission import AdmissionConfig, ConMemAdmitter, cheap_config
from meclear_integrations.admission.reader import AdmissionReader
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from tests.support.stage_models import Script, StageModel

CONTEXT = "user: I'm vegetarian, please never suggest meat dishes."
MEMORY = "User is vegetarian."
ROOT = Path(__file__).resolve().parents[3]
LABELS = ("utility", "unnecessary", "neutral", "risk")
PREFERENCES = ("treatment", "control", "tie")
ROLES = ("relevant", "irrelevant", "risk")


def _scripts(n: int, seed: int = 7) -> list[Script]:
    outcomes = list(itertools.product(LABELS, PREFERENCES))
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        picks = [rng.choice(outcomes) for _ in ROLES]
        out.append(
            Script(
                labels=dict(zip(ROLES, (p[0] for p in picks), strict=True)),
                preferences=dict(zip(ROLES, (p[1] for p in picks), strict=True)),
                tie_break=rng.choice(["STORE", "DO_NOT_STORE"]),
            )
        )
    return out


def _stores(script: Script, config: AdmissionConfig) -> bool:
    return ConMemAdmitter(StageModel(script), config).decide(MEMORY, CONTEXT).store


def test_cheap_never_rejects_what_the_default_stores_over_scripted_outcomes() -> None:
    scripts = _scripts(160)
    default, cheap = AdmissionConfig(), cheap_config()
    lost = [s for s in scripts if _stores(s, default) and not _stores(s, cheap)]
    assert lost == []
    # the earlier preset (a fixed do_not_store at CMTE = 0) did lose some: the test can fail
    old = cheap.model_copy(update={"tie_break": "do_not_store"})
    assert any(_stores(s, default) and not _stores(s, old) for s in scripts)


def test_a_skip_only_ever_ends_in_store() -> None:
    # helpful relevant probe whose weight is 0: the partial CMTE is 0, so no skip
    weights = AdmissionConfig().weights
    zero = weights.model_copy(
        update={"relevant": weights.relevant.model_copy(update={"helpful_utility": 0.0})}
    )
    model = StageModel(Script())
    ConMemAdmitter(model, cheap_config(AdmissionConfig(weights=zero))).decide(MEMORY, CONTEXT)
    assert model.count("respond") == 6  # the irrelevant probe ran


def _cookbook():
    spec = importlib.util.spec_from_file_location(
        "admission_gate_cookbook", ROOT / "cookbook" / "admission_gate.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("model", [AdmissionReader, ScriptedAdmissionModel])
def test_the_cookbook_memories_the_default_stores_are_stored_by_the_cheap_preset(model) -> None:
    cookbook = _cookbook()
    default = ConMemAdmitter(model(), AdmissionConfig())
    cheap = ConMemAdmitter(model(), cheap_config())
    for cid, text in cookbook.CANDIDATES.items():
        full = default.decide(text, cookbook.CONVERSATION, candidate_id=cid)
        saved = cheap.decide(text, cookbook.CONVERSATION, candidate_id=cid)
        assert saved.store or not full.store, (cid, text)
        assert saved.cost.model_calls <= full.cost.model_calls
    allergy = cheap.decide(cookbook.CANDIDATES["m1"], cookbook.CONVERSATION)
    assert allergy.store  # "User is allergic to shellfish."


DATA = Path("/work/shared/data")
SAFETY = re.compile(
    r"allerg|medic|prescri|pill|appointment|doctor|dentist|hospital|injur|diagnos|therap|"
    r"health|surgery|sick",
    re.IGNORECASE,
)


@pytest.mark.skipif(not (DATA / "locomo10").is_dir(), reason="LoCoMo data not present")
def test_dev_split_safety_critical_facts_are_kept_by_the_cheap_preset() -> None:
    """The selection is the test's (a pattern over dev texts), not part of the method."""
    from meclear_bench.admission_locomo import build_locomo_admission

    candidates = build_locomo_admission(DATA / "locomo10", clark=DATA / "clark_news")
    picked = [c for c in candidates if c.split == "dev" and SAFETY.search(c.candidate_memory)]
    assert len(picked) >= 10
    default = ConMemAdmitter(AdmissionReader(), AdmissionConfig())
    cheap = ConMemAdmitter(AdmissionReader(), cheap_config())
    kept = 0
    for c in picked:
        full = default.decide(c.candidate_memory, c.historical_context)
        if full.store:
            kept += 1
            assert cheap.decide(c.candidate_memory, c.historical_context).store, c.id
    assert kept >= 5
