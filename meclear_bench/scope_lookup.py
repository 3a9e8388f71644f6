"""Rows read and time of the scoped lookup when memories are harmful on many questions.

``python -m meclear_bench.scope_lookup`` measures what issue 24's request path pays when a
memory was verified harmful on many questions. The ledger keeps one state row per memory
and question (``ledger.scope_state``); unbounded, a lookup reads every active row of the
context's memories: O(K x questions per memory). The bounded read takes at most
``ROWS_PER_MEMORY`` (the most recent clearances) per memory plus the asking question's
own rows.

For each size N of ``--questions``, a scratch SQLite ledger gets N verified full runs
(through :meth:`HarmLedger.record_many`), each of a *different* question, each clearing
the same ``--harmful`` of the K context memories: every harmful memory ends with N active
rows. Then ``--lookups`` times each, :meth:`HarmLedger.scoped_harm` for a new question and
for the first recorded question (the oldest row), both with the bounded read and with the
cap lifted (the unbounded read, the behaviour before the bound). Reported: rows read per
lookup, median and p99 milliseconds, and whether both reads find the same harm. The
questions are synthetic (seeded, names and numbers that keep them apart). Figures are
latencies on this machine: quote the ratios from one run, not the absolute times.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.engine import MeClearEngine
from meclear_integrations.core.memory import Memory

__all__ = ["main", "measure"]

_NAMES = ("Ava", "Ben", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hana", "Ivo", "Jon")


def _question(i: int) -> str:
    return f"What did {_NAMES[i % len(_NAMES)]} say about topic {i}?"


def _report(k: int, harmful: int) -> tuple[list[Memory], Any]:
    context = [Memory(id=f"m{i}", content=f"Note {i} about the topic.") for i in range(k)]
    faults = {f"m{i}" for i in range(1, harmful + 1)}

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        return 1.0 if "m0" in ids and not ids & faults else 0.0

    report = MeClearEngine(ClearanceConfig(seed=0)).clear(context, evaluate)
    if set(report.cleared_ids) != faults:  # pragma: no cover - the engine's contract
        raise RuntimeError(f"expected {sorted(faults)} cleared, got {report.cleared_ids}")
    return context, report


def _time(fn: Any, lookups: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(lookups):
        started = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - started) * 1000.0)
    return times, result


def measure(
    sizes: Sequence[int] = (10, 100, 1000), *, k: int = 20, harmful: int = 5, lookups: int = 200
) -> dict[str, Any]:
    """Fill a ledger per size and time the bounded and unbounded lookups (module docstring).

    Args:
        sizes: Questions per harmful memory.
        k: Memories per context.
        harmful: Memories of the context cleared by every run.
        lookups: Timed lookups per question and read.

    Returns:
        Per size: rows read, median / p99 ms and agreement, bounded and unbounded.
    """
    from meclear_integrations.ledger import scope_state

    context, report = _report(k, harmful)
    bound = scope_state.ROWS_PER_MEMORY
    out: dict[str, Any] = {"k": k, "harmful": harmful, "rows_per_memory": bound, "sizes": {}}
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="meclear-scope-lookup-") as folder:
            out["sizes"][str(n)] = _size(Path(folder) / "ledger.db", n, context, report, lookups)
    return out


def _size(path: Path, n: int, context: list[Memory], report: Any, lookups: int) -> dict[str, Any]:
    """One size: fill the ledger with ``n`` questions, time both reads (module docstring)."""
    from meclear_integrations.ledger import HarmLedger, scope_state
    from meclear_integrations.runtime.hashing import content_hash

    hashes = {m.id: content_hash(m.content) for m in context}
    bound = scope_state.ROWS_PER_MEMORY
    asks = {"new": "What did Zoe say about topic 99999?", "oldest": _question(0)}
    row: dict[str, Any] = {}
    with HarmLedger(path, namespace="lookup") as ledger:
        entries = [(report, {"query": _question(i), "context": context}) for i in range(n)]
        for start in range(0, n, 1000):
            ledger.record_many(entries[start : start + 1000])
        for read, cap in (("bounded", bound), ("unbounded", 10**9)):
            scope_state.ROWS_PER_MEMORY = cap
            try:
                for ask, text in asks.items():
                    times, harm = _time(lambda t=text: ledger.scoped_harm(t, context), lookups)
                    with ledger.engine.connect() as conn:
                        qid = ledger.query_id(text)
                        rows = scope_state.load_active(conn, "lookup", hashes, qid)
                    row[f"{read}_{ask}"] = {
                        "rows_read": len(rows),
                        "median_ms": round(float(np.median(times)), 3),
                        "p99_ms": round(float(np.percentile(times, 99)), 3),
                        "withheld": sorted(h.memory_id for h in harm or []),
                    }
            finally:
                scope_state.ROWS_PER_MEMORY = bound
    for ask in asks:
        b, u = row[f"bounded_{ask}"], row[f"unbounded_{ask}"]
        row[f"same_harm_{ask}"] = b["withheld"] == u["withheld"]
        row[f"median_ratio_{ask}"] = round(u["median_ms"] / b["median_ms"], 2)
    return row


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (module docstring).

    Args:
        argv: The arguments (None: ``sys.argv``).

    Returns:
        The exit code.
    """
    parser = argparse.ArgumentParser(
        prog="python -m meclear_bench.scope_lookup",
        description="Bounded vs unbounded scoped lookup with memories harmful on many questions.",
    )
    parser.add_argument("--questions", default="10,100,1000", help="comma-separated sizes")
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--harmful", type=int, default=5)
    parser.add_argument("--lookups", type=int, default=200)
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.questions.split(",") if x.strip()]
    figures = measure(sizes, k=args.k, harmful=args.harmful, lookups=args.lookups)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
