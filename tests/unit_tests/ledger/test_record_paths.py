"""``record`` / ``arecord`` and ``feedback`` / ``afeedback`` take the same steps (one flow each).

The same script runs on two fresh ledgers with the same clock, one through the sync methods
and one through their async twins: the results, the errors and every table's rows are
the same (feedback ids, random UUIDs, compared by order of appearance). SIMULATED: the
scripted clearances of ``tests.support.ledger``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sqlalchemy import select

from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger import schema as t
from tests.support.clocks import StepClock
from tests.support.ledger import clear
from tests.unit_tests.ledger.test_scope import DENTIST, dentist_context

TABLES = [
    t.runs,
    t.run_memories,
    t.candidates,
    t.feedback,
    t.feedback_memories,
    t.memory_events,
    t.memory_scopes,
    t.harm_texts,
    t.harm_text_keys,
]


class Paths:
    """Calls a ledger method by its sync name, on the sync path or through its async twin."""

    def __init__(self, ledger: HarmLedger, mode: str) -> None:
        self.ledger, self.mode = ledger, mode

    def __call__(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            if self.mode == "sync":
                return getattr(self.ledger, name)(*args, **kwargs)
            return asyncio.run(getattr(self.ledger, "a" + name)(*args, **kwargs))
        except Exception as exc:  # the error is part of what both paths must agree on
            return ("error", type(exc).__name__, str(exc))


def _script(ledger: HarmLedger, mode: str, fault: Any, kept: Any) -> list[Any]:
    call = Paths(ledger, mode)
    context = dentist_context()
    dentist = {"query": DENTIST, "context": context}
    return [
        call("record", fault, **dentist, run_id="r1", success_signal="reference"),
        call("record", fault, **dentist, run_id="r1"),  # idempotent by run id
        call("record", kept, **dentist, run_id="r2", reference="May 9", extra={"k": 1}),
        call("record", fault, query=DENTIST, run_id="x" * 37),
        call("feedback", "r1", correct=False, correction="May 9", memory_ids=["old-dentist"]),
        call("feedback", "r1", correct=True, memory_ids=["old-dentist"], authority="reviewer"),
        call("feedback", "r1", correct=True, memory_ids=["nowhere"]),
        call("feedback", "r1", correct="yes"),
        call("feedback", "r1", correct=True, authority="boss"),
        call("feedback", "no-such-run", correct=True),
    ]


def _rows(ledger: HarmLedger) -> dict[str, list[dict[str, Any]]]:
    with ledger.engine.connect() as conn:
        return {
            table.name.removeprefix("meclear_"): [
                dict(row._mapping) for row in conn.execute(select(table))
            ]
            for table in TABLES
        }


def _by_order(value: Any, ids: dict[str, str]) -> Any:
    """``value`` with every feedback id replaced by its order of appearance."""
    if isinstance(value, dict):
        return {k: _by_order(v, ids) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_by_order(v, ids) for v in value]
    if isinstance(value, str) and value in ids:
        return ids[value]
    return value


def _comparable(results: list[Any], rows: dict[str, list[dict[str, Any]]]) -> Any:
    dumped = [r.model_dump(mode="json") if hasattr(r, "model_dump") else r for r in results]
    ids: dict[str, str] = {}
    for row in rows["feedback"]:
        ids.setdefault(row["feedback_id"], f"feedback-{len(ids)}")
    return _by_order(dumped, ids), _by_order(rows, ids)


def test_both_paths_write_the_same_rows_and_answer_alike(tmp_path: Path) -> None:
    context = dentist_context()
    fault = clear(context, gold={"new-dentist"}, faults={"old-dentist"})
    kept = clear(context, gold={"new-dentist", "old-dentist"}, faults=set())
    seen = {}
    for mode in ("sync", "async"):
        with HarmLedger(tmp_path / f"{mode}.db", clock=StepClock()) as ledger:
            results = _script(ledger, mode, fault, kept)
            seen[mode] = _comparable(results, _rows(ledger))
    assert seen["sync"] == seen["async"]
    results, rows = seen["sync"]
    assert results[1] == results[0] and results[3][:2] == ["error", "ConfigurationError"]
    assert [r[1] for r in results[6:]] == [
        "ConfigurationError",
        "ConfigurationTypeError",
        "ConfigurationError",
        "LedgerLookupError",
    ]
    assert [e["event"] for e in rows["memory_events"]] == ["restored"]  # the reviewer's
    assert len(rows["runs"]) == 2 and len(rows["feedback"]) == 2
