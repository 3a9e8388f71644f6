"""``HarmLedger.record_many`` (the bulk load benchmarks preload with) writes exactly the rows
and per-question state that ``record`` writes, one decision at a time, in the same order."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger import schema as t
from tests.support.clocks import StepClock
from tests.support.ledger import clear, memories

QUESTION = "Where does Sam's mother live now?"
PARAPHRASE = "Where does Sam's mother live at the moment?"


def _entries() -> list[tuple[Any, dict[str, Any]]]:
    """Verified harm, a needed memory, a clean run and a repeat of one report."""
    context = memories("a", "b", "c", "d")
    harmful = clear(context, gold={"a"}, faults={"c"})
    assert harmful.recovered  # the fixture proves a harm
    needs_b = clear(context, gold={"b"}, faults={"d"})
    clean = clear(memories("a", "b"), gold={"a"}, faults=set())
    return [
        (harmful, {"query": QUESTION, "context": context, "run_id": "r1"}),
        (harmful, {"query": PARAPHRASE, "context": context, "run_id": "r2"}),
        (needs_b, {"query": QUESTION, "context": context, "run_id": "r3", "extra": {"x": 1}}),
        (clean, {"query": "What is Sam's dog called?", "run_id": "r4"}),
        (
            harmful,
            {"query": QUESTION, "context": context, "run_id": "r5", "success_signal": "reference"},
        ),
        (harmful, {"query": "Unrelated question about the weather", "run_id": "r6"}),
    ]


def _dump(ledger: HarmLedger) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows without surrogate keys (run keys mapped to run ids)."""
    with ledger.engine.connect() as conn:
        run_ids = dict(conn.execute(select(t.runs.c.id, t.runs.c.run_id)).all())
        out: dict[str, list[tuple[Any, ...]]] = {}
        for table in (t.runs, t.run_memories, t.candidates, t.memory_scopes):
            rows = []
            for row in conn.execute(select(table)).mappings():
                values = {k: v for k, v in row.items() if k != "id"}
                if "run_pk" in values:
                    values["run_pk"] = run_ids[values["run_pk"]]
                rows.append(tuple(sorted((k, repr(v)) for k, v in values.items())))
            out[table.name] = sorted(rows)
    return out


def test_record_many_writes_what_record_writes(tmp_path) -> None:
    entries = _entries()
    with HarmLedger(f"sqlite:///{tmp_path / 'one.db'}", clock=StepClock()) as one:
        for report, kwargs in entries:
            one.record(report, **kwargs)
        expected = _dump(one)
        expected_harm = one.scoped_harm(PARAPHRASE, memories("a", "b", "c", "d"))
    with HarmLedger(f"sqlite:///{tmp_path / 'bulk.db'}", clock=StepClock()) as bulk:
        assert bulk.record_many(entries) == len(entries)
        assert _dump(bulk) == expected
        assert bulk.scoped_harm(PARAPHRASE, memories("a", "b", "c", "d")) == expected_harm
        assert bulk.record_many(entries) == 0  # given run ids already stored: skipped
    assert [h.memory_id for h in expected_harm] == ["c", "d"]  # d: harmful with needs_b
    assert len(expected["meclear_runs"]) == len(entries)


def test_a_repeated_report_gets_rows_of_its_own(tmp_path) -> None:
    """The bulk load shares one report's rows between runs; each run still owns copies."""
    context = memories("a", "b", "c", "d")
    harmful = clear(context, gold={"a"}, faults={"c"})
    with HarmLedger(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
        ledger.record_many(
            [(harmful, {"query": f"question {i}", "context": context}) for i in range(3)]
        )
        runs = ledger.runs()
        assert len(runs) == 3 and len({r.run_id for r in runs}) == 3
        assert all(sorted(r.cleared_ids) == ["c"] for r in runs)
        assert all(len(r.memories) == 4 for r in runs)
