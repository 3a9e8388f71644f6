"""Per-memory scores of a clearance: from a report and from the ledger's record of it."""

from __future__ import annotations

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.exports import memory_scores
from meclear_integrations.exports.phoenix import phoenix_annotations
from meclear_integrations.runtime.hashing import content_hash

CONTEXT = [
    Memory(id="good", content="Ana lives in Lisbon."),
    Memory(id="stale", content="Ana lives in Porto."),
    Memory(id="bg", content="Ana plays the cello."),
]


def _evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
    ids = {m.id for m in coalition}
    return float("good" in ids and "stale" not in ids)


def report():
    return MeClearEngine(ClearanceConfig()).clear(CONTEXT, _evaluate)


def test_scores_from_a_report_follow_the_retrieval_order() -> None:
    scores = memory_scores(report())
    assert [s.memory_id for s in scores] == ["good", "stale", "bg"]
    assert [s.position for s in scores] == [0, 1, 2]
    by_id = {s.memory_id: s for s in scores}
    assert by_id["stale"].verdict == "cleared" and by_id["stale"].harm > 0
    assert by_id["good"].verdict == "kept" and by_id["good"].harm < 0
    assert by_id["stale"].harm == -by_id["stale"].shapley
    assert by_id["stale"].content_hash == content_hash("Ana lives in Porto.")
    assert all(s.run_status == "complete" and s.recovered for s in scores)
    assert "Porto" not in by_id["stale"].comment()  # no memory text leaves


def test_an_early_exit_is_unattributed() -> None:
    passing = MeClearEngine(ClearanceConfig()).clear(CONTEXT, lambda c, t: 1.0)
    assert {s.verdict for s in memory_scores(passing)} == {"unattributed"}
    assert all(s.harm is None for s in memory_scores(passing))


def test_scores_from_the_ledger_equal_the_reports(tmp_path) -> None:
    pytest.importorskip("sqlalchemy")
    from meclear_integrations.ledger import HarmLedger

    cleared = report()
    with HarmLedger(tmp_path / "l.db") as ledger:
        run = ledger.record(cleared, query="Where does Ana live?", context=CONTEXT)
    assert memory_scores(run) == memory_scores(cleared)


def test_phoenix_annotations_name_each_document_position() -> None:
    annotations = phoenix_annotations(report(), "ab" * 8)
    assert [a["document_position"] for a in annotations] == [0, 1, 2]
    stale = annotations[1]
    assert stale["result"]["label"] == "cleared" and stale["result"]["score"] > 0
    assert stale["span_id"] == "ab" * 8 and stale["annotator_kind"] == "CODE"


def test_other_sources_are_refused() -> None:
    with pytest.raises(TypeError, match="ClearanceReport"):
        memory_scores({"memories": []})
