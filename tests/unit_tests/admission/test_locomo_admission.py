"""The LoCoMo admission benchmark: labels from the data, the split, the offline reader."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from meclear_bench.admission_locomo import (
    DEV_CONVERSATIONS,
    MISALIGNED_KINDS,
    build_locomo_admission,
    select,
)
from meclear_bench.admission_locomo_run import arun_locomo_admission, score_method
from meclear_bench.locomo_data import load_locomo
from meclear_bench.statements import lower_first
from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.reader import AdmissionReader
from meclear_integrations.admission.rescore import grid_weights, redecide

DATA = Path("/work/shared/data")
LOCOMO, CLARK = DATA / "locomo10", DATA / "clark_news"
needs_data = pytest.mark.skipif(
    not (LOCOMO.is_dir() and CLARK.is_dir()), reason="LoCoMo / CLARK-News data not present"
)


@pytest.fixture(scope="module")
def candidates():
    return build_locomo_admission(LOCOMO, clark=CLARK)


@needs_data
def test_observation_labels_come_from_qa_evidence(candidates) -> None:
    conversations = {c.conversation_id: c for c in load_locomo(LOCOMO)}
    for cand in [c for c in candidates if c.kind in ("useful", "unused")][::25]:
        cid, _, index = cand.id.split(":")
        conv = conversations[cid]
        fact = conv.facts[int(index)]
        assert fact.text == cand.candidate_memory
        cited = set().union(*(q.evidence for q in conv.questions if 1 <= q.category <= 4))
        assert (cand.kind == "useful") == bool(fact.dia_ids & cited)
        assert cand.label == ("store" if cand.kind == "useful" else "do_not_store")


@needs_data
def test_split_is_by_conversation_and_every_kind_is_present(candidates) -> None:
    by_source: dict[str, set[str]] = {}
    for c in candidates:
        by_source.setdefault(c.source, set()).add(c.split)
        if c.source.startswith("locomo:"):
            assert (c.split == "dev") == (c.source.split(":")[1] in DEV_CONVERSATIONS)
    assert all(len(splits) == 1 for s, splits in by_source.items() if s != "clark_news")
    for split in ("dev", "test"):
        kinds = {c.kind for c in candidates if c.split == split}
        assert kinds == {"useful", "unused", *MISALIGNED_KINDS, "clark_current"}
    assert len({c.id for c in candidates}) == len(candidates)


@needs_data
def test_misaligned_candidates_state_what_the_data_says_is_wrong(candidates) -> None:
    for c in candidates:
        if c.kind == "wrong_correction":
            assert c.candidate_memory.startswith("Correction:")
        if c.kind in ("clark_stale", "clark_current"):
            # both answers are in the context; the stale one was reported first
            lines = c.historical_context.splitlines()
            claim = "that " + lower_first(c.candidate_memory)
            said = [i for i, line in enumerate(lines) if line.endswith(claim)]
            assert said == ([0] if c.kind == "clark_stale" else [2])
            assert c.label == ("do_not_store" if c.kind == "clark_stale" else "store")


@needs_data
def test_the_reader_decides_from_prompt_text_not_labels(candidates) -> None:
    """Flipping every label, kind and id changes no decision; no prompt carries them."""
    sample = select(candidates, "dev", 6)
    seen: list[str] = []
    reader = AdmissionReader()

    class Recording:
        def complete(self, prompt: str) -> str:
            seen.append(prompt)
            return reader.complete(prompt)

        async def acomplete(self, prompt: str) -> str:
            return self.complete(prompt)

    admitter = ConMemAdmitter(Recording())
    first = [admitter.decide(c.candidate_memory, c.historical_context).decision for c in sample]
    flipped = [
        c.model_copy(
            update={
                "label": "store" if c.label == "do_not_store" else "do_not_store",
                "kind": "useful" if c.kind != "useful" else "unused",
                "id": f"x{i}",
                "evidence": [],
            }
        )
        for i, c in enumerate(sample)
    ]
    second = [admitter.decide(c.candidate_memory, c.historical_context).decision for c in flipped]
    assert first == second
    text = "\n".join(seen)
    for c in sample:
        assert c.id not in text
        assert not any(e in text for e in c.evidence)
    assert "clark_stale" not in text and "false_claim" not in text


def test_reader_rejects_a_superseded_fact_and_keeps_the_current_one() -> None:
    context = (
        "[2020-01-05] user: I read in the news that Ann Lee is the coach Team Blue employs.\n"
        "assistant: Thanks, noted.\n"
        "[2023-03-01] user: I read in the news that Bo Park is the coach Team Blue employs.\n"
        "assistant: Thanks, noted."
    )
    admitter = ConMemAdmitter(AdmissionReader())
    stale = admitter.decide("Ann Lee is the coach Team Blue employs.", context)
    current = admitter.decide("Bo Park is the coach Team Blue employs.", context)
    assert stale.decision == "do_not_store"
    assert stale.reason is not None and stale.reason.reason_type == "stale_memory_use"
    assert current.decision == "store"


def test_reader_rejects_unsupported_specifics_and_keeps_a_grounded_specific_fact() -> None:
    context = (
        "[session 2, 2023-05-25]\n"
        "Melanie: I ran a charity race for mental health last Saturday, it was rewarding.\n"
        "Caroline: That charity race sounds great, Mel!"
    )
    admitter = ConMemAdmitter(AdmissionReader())
    kept = admitter.decide("Melanie ran a charity race for mental health last Saturday.", context)
    wrong = admitter.decide("Melanie ran a charity marathon in Boston on 3 July 2021.", context)
    assert kept.decision == "store"
    assert wrong.decision == "do_not_store"
    assert wrong.reason is not None and wrong.reason.reason_type == "false_memory_use"
    # the blind judge never sees the memory section
    judge = [e for e in wrong.probes if e.judge is not None]
    assert judge


def test_grid_has_the_27_settings_and_the_primary_one() -> None:
    grid = grid_weights()
    assert len(grid) == 27
    primary = [w for key, w in grid if key == (0.5, 0.5, 1.5)]
    assert primary and primary[0].model_dump() == type(primary[0])().model_dump()


def test_redecide_variants_use_the_recorded_evidence() -> None:
    from tests.support.stage_models import Script, StageModel

    # auditor says risk on the risk probe, but the judge prefers the treatment there
    script = Script(
        labels={"relevant": "utility", "irrelevant": "neutral", "risk": "risk"},
        preferences={"relevant": "treatment", "irrelevant": "tie", "risk": "treatment"},
    )
    d = ConMemAdmitter(StageModel(script)).decide("m", "user: c")
    weights = d.config.weights
    full = redecide(d.probes, weights=weights, zero="store")
    no_auditor = redecide(d.probes, weights=weights, variant="no_auditor", zero="store")
    assert full[0] == d.decision == "do_not_store"  # (+1 - 1.5) / 3
    assert no_auditor[0] == "store" and no_auditor[1] == pytest.approx((1.0 + 0.5) / 3)


def test_score_method_counts_misaligned_recall() -> None:
    from meclear_bench.admission_locomo import BenchCandidate

    def cand(kind: str, label: str) -> BenchCandidate:
        return BenchCandidate(
            id=kind + label,
            split="test",
            source="x",
            kind=kind,  # type: ignore[arg-type]
            candidate_memory="m",
            historical_context="c",
            candidate_date="",
            label=label,  # type: ignore[arg-type]
            reason_type="r",
        )

    cs = [
        cand("useful", "store"),
        cand("clark_stale", "do_not_store"),
        cand("unused", "do_not_store"),
    ]
    s = score_method("m", cs, ["store", "do_not_store", "store"])
    assert s.misaligned_do_not_store_recall == 1.0
    assert s.recall["do_not_store"] == 0.5 and s.kind_recall["unused"] == 0.0


@needs_data
def test_bench_runs_end_to_end_on_a_small_selection(candidates, tmp_path: Path) -> None:
    test = select(candidates, "test", 4)
    dev = select(candidates, "dev", 3)
    result = asyncio.run(arun_locomo_admission(test, AdmissionReader(), dev=dev))
    names = [m.method for m in result.methods]
    assert names == ["conmem", "a-mac", "a-mem", "memorybank"]
    conmem = result.methods[0]
    assert 10 < conmem.calls_per_decision < 16
    assert conmem.sent_calls_per_decision is not None
    assert conmem.sent_calls_per_decision <= conmem.calls_per_decision
    assert len(result.grid) == 27 and len(result.ablations) == 5
    assert result.ablations[0].macro_f1 == pytest.approx(conmem.macro_f1)
    assert result.presets_dev and result.offline_reader
    # baselines tuned alike on dev, every method split by where its labels come from
    assert [t.name for t in result.tuned] == ["a-mac", "a-mem", "memorybank"]
    assert set(result.by_label_source) == {"locomo_only", "builder"}
    only = {m.method: m for m in result.by_label_source["locomo_only"]}
    assert "conmem" in only and "memorybank (tuned on dev)" in only
    assert only["conmem"].n == sum(1 for c in test if c.kind in ("useful", "unused"))
    assert "OFFLINE TEXT-READER" in result.notes[0]
    json.loads(result.model_dump_json())


@needs_data
def test_cli_writes_results_report_and_figure(tmp_path: Path, capsys) -> None:
    from meclear_integrations.cli import main

    flags = ["--locomo", str(LOCOMO), "--clark", str(CLARK), "--limit", "3"]
    out = tmp_path / "o"
    assert main(["admission-bench", *flags, "--dev-limit", "2", "--out", str(out)]) == 0
    assert (out / "results.json").is_file() and (out / "admission_locomo.png").is_file()
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "OFFLINE TEXT-READER" in report and "Sensitivity grid" in report
    assert "SAGE" in report and "The paper's figures" in report
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["split"] == "test" and data["offline_reader"] is True
    assert "OFFLINE TEXT-READER" in capsys.readouterr().out
