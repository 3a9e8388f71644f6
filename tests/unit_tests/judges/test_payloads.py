"""Framework-neutral payloads: ids, per-memory metadata, bounded event payloads."""

from __future__ import annotations

import json

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory, StageEvent
from meclear_integrations.runtime.payloads import (
    assign_memory_ids,
    content_memory_id,
    event_name,
    memory_metadata,
    report_summary,
    stage_event_payload,
)
from meclear_integrations.simulation import redundant_harm_example


def test_content_ids_are_stable_and_duplicates_distinct() -> None:
    assert content_memory_id("abc") == content_memory_id("abc")
    assert content_memory_id("abc") != content_memory_id("abd")
    assert content_memory_id("abc").startswith("mc-") and len(content_memory_id("abc")) == 19
    ids = assign_memory_ids([("a", "x"), (None, "t"), (None, "t"), ("a", "y"), ("a#2", "z")])
    h = content_memory_id("t")
    assert ids[:4] == ["a", h, f"{h}#2", "a#2"]
    assert len(set(ids)) == 5


def _report():
    case = redundant_harm_example()
    return case, MeClearEngine(ClearanceConfig(estimator="exact")).clear(
        case.memories, case.evaluator()
    )


def test_memory_metadata_fields() -> None:
    _, report = _report()
    meta = memory_metadata(report, "f1")
    assert set(meta) == {
        "memory_id",
        "loo_effect",
        "loo_label",
        "shapley",
        "shapley_interval",
        "rank",
        "harmful",
        "cleared",
        "recovered",
        "early_exit",
        "status",
    }
    assert meta["status"] == "complete"
    assert meta["harmful"] and meta["cleared"] and meta["shapley"] < 0 and meta["rank"] <= 2
    assert memory_metadata(report, "g1")["cleared"] is False


def test_metadata_after_early_exit() -> None:
    memories = [Memory(id="a", content="x"), Memory(id="b", content="y")]
    report = MeClearEngine(ClearanceConfig()).clear(memories, lambda c, t: 1.0)
    meta = memory_metadata(report, "a")
    assert meta["cleared"] is False and meta["harmful"] is False
    if not report.attributions:  # an engine that stops once the full context succeeds
        assert meta["shapley"] is None and meta["early_exit"] is True
    assert report_summary(report)["kept_ids"] == ["a", "b"]


def test_report_summary_has_no_texts_and_round_trips() -> None:
    case, report = _report()
    summary = report_summary(report)
    text = json.dumps(summary)
    assert all(m.content not in text for m in case.memories)
    assert summary["cleared_ids"] == ["f1", "f2"]
    assert summary["contributions"]["f2"]["harmful"] is True
    assert "truncated" not in summary


def test_event_payload_is_capped_keeping_most_harmful() -> None:
    shapley = {
        f"m{i}": {"value": -i / 100, "interval": [0, 0], "rank": 100 - i} for i in range(100)
    }
    event = StageEvent(stage="attribution", phase="end", payload={"shapley": shapley})
    payload = stage_event_payload(event, query_id="q1", max_bytes=2000)
    assert len(json.dumps(payload)) <= 2000
    assert payload["truncated"] is True and payload["phase"] == "end"
    assert payload["query_id"] == "q1"
    kept = payload["shapley"]
    assert "m99" in kept and "m0" not in kept  # rank 1 = most harmful is kept first
    assert event_name("attribution") == "meclear.attribution"


def test_small_payload_untouched() -> None:
    event = StageEvent(stage="screening", phase="start", payload={"k": 3})
    assert stage_event_payload(event) == {
        "stage": "screening",
        "phase": "start",
        "query_id": None,
        "k": 3,
    }


def test_identical_texts_become_two_players() -> None:
    text = "John's trip to Italy took place in January 2023."
    ids = assign_memory_ids([(None, text), (None, text)])
    memories = [Memory(id=i, content=text) for i in ids]
    engine = MeClearEngine(ClearanceConfig(estimator="exact"))
    report = engine.clear(memories, lambda c, t: 0.0 if len(c) == 2 else 1.0)
    assert [a.memory_id for a in report.attributions] == ids
    psi = [a.shapley for a in report.attributions]
    assert psi[0] == psi[1] < 0  # symmetric copies get equal (negative) contributions
