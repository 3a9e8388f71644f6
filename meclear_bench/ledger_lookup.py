"""Request-path cost of the ledger lookup as the history grows (issue 24, item 5 / 6).

``python -m meclear_bench.ledger_lookup`` fills a scratch ledger (a temporary
SQLite file, or a scratch database created on the PostgreSQL server of ``--url`` and dropped
afterwards) with verified clearances through :meth:`HarmLedger.record_many` (the rows and
the per memory and question state :meth:`HarmLedger.record` writes, in batches of 1,000 per
transaction), and at each size of ``--sizes`` times, over ``--lookups`` questions with a
K-memory context each:

- ``plain``: a plain retriever call (exact cosine top-K over 384-dimensional embeddings of
  the bank with numpy: an in-process vector index);
- ``scoped``: :meth:`HarmLedger.scoped_harm` (what background mode reads on the request
  path, then withholds; no model call);
- ``request``: the two back to back (the background-mode request path), reported as the
  p99 overhead over ``plain`` and the ratio of medians;
- ``unscoped`` (sizes up to ``--unscoped-max``): the old ``prior_candidate(context)``
  without the question, which recomputes each memory's evidence from its history.

The history is synthetic (documented here, seeded): a bank of ``--bank`` memories, a pool of
``--questions`` distinct questions (six words each from a 3,000-word vocabulary), each with a
fixed top-K context and one or two stale memories among it drawn from a fault pool of half
the bank; every recorded clearance is a verified full run of a random question clearing its
stale memories. Lookups ask recorded questions (70 %) and new ones (30 %). Figures are
latencies on this machine: quote the ratios from one run, not the absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.memory import Memory
from meclear_integrations.core.report import ClearanceCandidate, ClearanceCost, ClearanceReport

__all__ = ["main", "run_bench"]

_BATCH = 1000
_VOCABULARY = 3000
_DIM = 384


class _World:
    """The synthetic bank, questions, contexts and faults (module docstring)."""

    def __init__(self, *, bank: int, questions: int, k: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        words = [f"w{i}" for i in range(_VOCABULARY)]
        self.rng = rng
        self.k = k
        self.memories = [
            Memory(id=f"m{i}", content=" ".join(rng.choice(words, 12))) for i in range(bank)
        ]
        self.questions = [" ".join(rng.choice(words, 6)) + "?" for _ in range(questions)]
        faults = bank // 2
        self.contexts: list[list[int]] = []
        self.faults: list[list[int]] = []
        for _ in range(questions):
            stale = list(rng.choice(faults, int(rng.integers(1, 3)), replace=False))
            rest = [int(x) for x in rng.choice(np.arange(faults, bank), k, replace=False)]
            context = sorted({*map(int, stale), *rest})[:k]
            self.contexts.append(context)
            self.faults.append([int(x) for x in stale if int(x) in context])
        self.config = ClearanceConfig()
        vectors = rng.standard_normal((bank, _DIM))
        self.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed(self) -> np.ndarray:
        vector = self.rng.standard_normal(_DIM)
        return np.asarray(vector / np.linalg.norm(vector))

    def context(self, q: int) -> list[Memory]:
        return [self.memories[i] for i in self.contexts[q]]

    def report(self, q: int) -> ClearanceReport:
        context = self.context(q)
        cleared = {self.memories[i].id for i in self.faults[q]}
        ids = sorted(cleared)
        return ClearanceReport(
            baseline_value=0.0,
            final_value=1.0,
            recovered=True,
            kept=[m for m in context if m.id not in cleared],
            cleared=[m for m in context if m.id in cleared],
            attributions=[],
            candidates=[
                ClearanceCandidate(
                    size=0,
                    memory_ids=[],
                    value=0.0,
                    gain=0.0,
                    recovered=False,
                    admissible=True,
                    trials=2,
                    family="nested",
                ),
                ClearanceCandidate(
                    size=len(ids),
                    memory_ids=ids,
                    value=1.0,
                    gain=1.0,
                    recovered=True,
                    admissible=True,
                    trials=2,
                    family="nested",
                ),
            ],
            cost=ClearanceCost(coalitions=25, evaluator_calls=52, cache_hits=0, wall_seconds=1.0),
            config=self.config,
        )

    def lookup_case(self) -> tuple[str, list[Memory]]:
        if self.rng.random() < 0.7:
            q = int(self.rng.integers(len(self.questions)))
            return self.questions[q], self.context(q)
        words = [f"w{i}" for i in self.rng.integers(_VOCABULARY, size=6)]
        picked = self.rng.choice(len(self.memories), self.k, replace=False)
        return " ".join(words) + "?", [self.memories[int(i)] for i in picked]


def _percentiles(samples: Sequence[float]) -> dict[str, float]:
    values = np.asarray(samples) * 1000.0
    return {
        "median_ms": round(float(np.median(values)), 4),
        "p99_ms": round(float(np.percentile(values, 99)), 4),
    }


class VectorRetriever:
    """The plain retriever: exact cosine top-K over the bank's embeddings (numpy).

    Args:
        vectors: One unit vector per memory.
    """

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def top_k(self, vector: np.ndarray, k: int) -> list[int]:
        """The indices of the ``k`` memories most similar to ``vector``.

        Args:
            vector: The query's unit vector.
            k: How many.

        Returns:
            The indices, most similar first.
        """
        scores = self.vectors @ vector
        top = np.argpartition(-scores, k)[:k]
        return [int(i) for i in top[np.argsort(-scores[top])]]


@contextmanager
def scratch_url(url: str | None) -> Iterator[str]:
    """A scratch ledger: a temporary SQLite file, or a scratch PostgreSQL database.

    Args:
        url: None or an ``sqlite`` URL (a temporary file is used), or a PostgreSQL URL whose
            server gets a scratch database (created here, dropped afterwards).

    Yields:
        The scratch database's URL.
    """
    if url is None or url.startswith("sqlite"):
        with tempfile.TemporaryDirectory(prefix="meclear-bench-ledger-") as folder:
            yield f"sqlite:///{Path(folder) / 'ledger.db'}"
        return
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    from meclear_integrations.ledger.database import ledger_url

    target = ledger_url(url)
    name = f"meclear_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(target, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            yield make_url(target).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()


def run_bench(
    *,
    url: str | None = None,
    sizes: Sequence[int] = (100, 1000, 10_000, 100_000),
    k: int = 20,
    lookups: int = 500,
    bank: int = 5000,
    questions: int = 20_000,
    unscoped_max: int = 2000,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fill a scratch ledger to each size and time the lookups (module docstring).

    Args:
        url: None / ``sqlite``: a temporary SQLite file; a PostgreSQL URL: a scratch database
            on that server.
        sizes: Recorded clearances at which to measure, ascending.
        k: Memories per context.
        lookups: Timed questions per size.
        bank: Memories in the bank.
        questions: Distinct questions.
        unscoped_max: Largest size at which the old unscoped lookup is timed too.
        seed: The seed of the synthetic history.
        progress: Called with a line per step (None: silent).

    Returns:
        The figures, one entry per size.
    """
    from meclear_integrations.ledger import HarmLedger

    say = progress or (lambda _line: None)
    world = _World(bank=bank, questions=questions, k=k, seed=seed)
    retriever = VectorRetriever(world.vectors)
    out: dict[str, Any] = {
        "k": k,
        "lookups": lookups,
        "bank": bank,
        "questions": questions,
        "seed": seed,
        "sizes": [],
    }
    with scratch_url(url) as scratch, HarmLedger(scratch, namespace="bench") as ledger:
        out["backend"] = ledger.engine.dialect.name
        recorded = 0
        for size in sorted(sizes):
            started = time.perf_counter()
            while recorded < size:
                n = min(_BATCH, size - recorded)
                picks = world.rng.integers(len(world.questions), size=n)
                ledger.record_many(
                    [
                        (world.report(int(q)), {"query": world.questions[int(q)], "context": None})
                        for q in picks
                    ]
                )
                recorded += n
            say(f"{out['backend']}: {recorded} clearances ({time.perf_counter() - started:.1f}s)")
            plain: list[float] = []
            scoped: list[float] = []
            request: list[float] = []
            unscoped: list[float] = []
            withheld = 0
            for _ in range(lookups):
                query, context = world.lookup_case()
                vector = world.embed()
                started = time.perf_counter()
                retriever.top_k(vector, k)
                plain.append(time.perf_counter() - started)
                started = time.perf_counter()
                harm = ledger.scoped_harm(query, context)
                scoped.append(time.perf_counter() - started)
                started = time.perf_counter()
                retriever.top_k(vector, k)
                ledger.scoped_harm(query, context)
                request.append(time.perf_counter() - started)
                if size <= unscoped_max:
                    started = time.perf_counter()
                    ledger.prior_candidate(context)
                    unscoped.append(time.perf_counter() - started)
                withheld += len(harm)
            entry: dict[str, Any] = {
                "clearances": recorded,
                "plain": _percentiles(plain),
                "scoped": _percentiles(scoped),
                "request": _percentiles(request),
                "withheld_per_lookup": round(withheld / lookups, 3),
            }
            entry["request_p99_overhead_ms"] = round(
                entry["request"]["p99_ms"] - entry["plain"]["p99_ms"], 4
            )
            entry["request_median_ratio"] = round(
                entry["request"]["median_ms"] / entry["plain"]["median_ms"], 3
            )
            if unscoped:
                entry["unscoped"] = _percentiles(unscoped)
            out["sizes"].append(entry)
            say(json.dumps(entry))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (module docstring).

    Args:
        argv: The arguments (None: ``sys.argv``).

    Returns:
        The exit code.
    """
    parser = argparse.ArgumentParser(
        prog="python -m meclear_bench.ledger_lookup",
        description="Request-path latency of the ledger's scoped lookup as history grows.",
    )
    parser.add_argument(
        "--url",
        default=None,
        help="sqlite (default: a temporary file) or a PostgreSQL URL (a scratch database is "
        "created on that server and dropped); default from MECLEAR_BENCH_LEDGER_URL",
    )
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--lookups", type=int, default=500)
    parser.add_argument("--bank", type=int, default=5000)
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--unscoped-max", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in str(args.sizes).split(",") if x.strip()]
    if not sizes or min(sizes) < 1 or args.k < 1 or args.lookups < 1:
        parser.error("--sizes, --k and --lookups must be positive")
    figures = run_bench(
        url=args.url or os.environ.get("MECLEAR_BENCH_LEDGER_URL"),
        sizes=sizes,
        k=args.k,
        lookups=args.lookups,
        bank=args.bank,
        questions=args.questions,
        unscoped_max=args.unscoped_max,
        seed=args.seed,
        progress=print,
    )
    text = json.dumps(figures, indent=2)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
