"""``meclear soak``: concurrent queries through ``ClearingRetriever`` with injected faults.

N queries (bounded in count and in time) run concurrently through one
``ClearingRetriever`` instance over an ``InMemoryVectorStore`` holding the redundant-harm
example; the agent and judge are the simulated chat model (SIMULATED, offline) behind a
fault injector that, on a seeded random fraction of model calls, raises a timeout, a 429
(with or without retry-after), a 500, a connection error, or returns garbage. With
``--outage-share``, that share of the queries hits a query-specific outage (every model
call for them faults), so they must fail open while the others go on. Reported:
queries served, how many failed open (full context, ``status: "failed"``), how many were
verified clean (the two faults cleared), errors surfaced to the caller, faults injected,
and a check that neither the vector store nor any retrieved document was changed.

Needs the ``langchain`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core.errors import ConfigurationError
from ._progress import Bar

__all__ = ["SoakResult", "register", "run_soak"]


@dataclass
class SoakResult:
    """Figures of one soak run (SIMULATED model; injected faults)."""

    queries: int = 0
    """Queries started."""
    served: int = 0
    """Queries that returned documents to the caller."""
    verified: int = 0
    """Served with a complete clearance that removed exactly the two faults."""
    failed_open: int = 0
    """Served with the full context and ``status: "failed"`` metadata."""
    other: int = 0
    """Served complete but with another outcome (e.g. nothing cleared)."""
    errors_surfaced: int = 0
    """Exceptions raised to the caller (0 expected when failing open)."""
    model_calls: int = 0
    """Agent and judge calls made."""
    faults_injected: int = 0
    """Model calls that failed or returned garbage on purpose."""
    inputs_unchanged: bool = True
    """The vector store and every retrieved document are byte-identical afterwards."""
    wall_seconds: float = 0.0
    """Wall time of the soak."""
    failure_reasons: dict[str, int] = field(default_factory=dict)
    """Fail-open reasons and their counts."""
    error_types: dict[str, int] = field(default_factory=dict)
    """Types of the errors surfaced."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear soak`` subcommand (concurrent queries with injected model faults).

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "soak",
        help="concurrent queries through ClearingRetriever with injected model faults",
        description=__doc__,
    )
    p.add_argument("--queries", type=int, default=200, help="queries to run (at most)")
    p.add_argument("--concurrency", type=int, default=16, help="queries in flight at once")
    p.add_argument("--fault-rate", type=float, default=0.05, help="share of faulty model calls")
    p.add_argument("--seconds", type=float, default=60.0, help="time bound of the whole soak")
    p.add_argument("--query-seconds", type=float, default=10.0, help="max_wall_seconds per query")
    p.add_argument(
        "--outage-share", type=float, default=0.0, help="share of queries whose every call faults"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    with Bar(args.queries, desc="soak", unit="query", enabled=not args.no_progress) as bar:
        result = run_soak(
            queries=args.queries,
            concurrency=args.concurrency,
            fault_rate=args.fault_rate,
            seconds=args.seconds,
            query_seconds=args.query_seconds,
            outage_share=args.outage_share,
            seed=args.seed,
            on_query=bar.update,
        )
    if args.json:
        print(json.dumps(asdict(result), indent=2))
    else:
        print("meclear soak (SIMULATED chat model, injected faults)")
        for key, value in asdict(result).items():
            print(f"  {key:<16} {value}")
    ok = result.inputs_unchanged and result.errors_surfaced == 0
    return 0 if ok else 1


_OUTAGE = "outage-probe"
"""Text marking an outage query; the fault injector faults every call that carries it."""


def run_soak(
    *,
    queries: int = 200,
    concurrency: int = 16,
    fault_rate: float = 0.05,
    seconds: float = 60.0,
    query_seconds: float = 10.0,
    outage_share: float = 0.0,
    seed: int = 0,
    on_query: Callable[[], None] | None = None,
) -> SoakResult:
    """Run the soak (module docstring); bounded by ``queries`` and ``seconds``.

    Every ``round(1 / outage_share)``-th query (when ``outage_share > 0``) is an outage
    query: all its model calls fault, so it must fail open.

    Args:
        queries: The most queries run.
        concurrency: The queries in flight at once.
        fault_rate: The share of model calls that fault.
        seconds: The soak's time bound.
        query_seconds: Each query's time bound.
        outage_share: The share of queries whose every model call faults.
        seed: The seed of the faults.
        on_query: Called after each query (run, or skipped at the time bound).

    Returns:
        The soak's figures: queries served, verified, failed open, errors surfaced, latencies.

    Raises:
        ConfigurationError: A bound or a share is out of range.
    """
    if queries < 1 or concurrency < 1 or not 0.0 <= fault_rate <= 1.0 or seconds <= 0:
        raise ConfigurationError(
            "need queries >= 1, concurrency >= 1, 0 <= fault_rate <= 1, seconds > 0"
        )
    if not 0.0 <= outage_share <= 1.0:
        raise ConfigurationError("need 0 <= outage_share <= 1")
    return asyncio.run(
        _soak(
            queries, concurrency, fault_rate, seconds, query_seconds, outage_share, seed, on_query
        )
    )


async def _soak(
    queries: int,
    concurrency: int,
    fault_rate: float,
    seconds: float,
    query_seconds: float,
    outage_share: float,
    seed: int,
    on_query: Callable[[], None] | None = None,
) -> SoakResult:
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.runnables import RunnableLambda
    from langchain_core.vectorstores import InMemoryVectorStore

    from ..core import Budget, ClearanceConfig, FailurePolicy, RetryPolicy
    from ..langchain import ClearingRetriever, SimulatedChatModel, reference_config
    from ..pipeline.settings import Limits
    from ..simulation import redundant_harm_example
    from ..simulation.faults import RandomFaults

    case = redundant_harm_example()
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [
            Document(page_content=m.content, metadata=dict(m.metadata), id=m.id)
            for m in case.memories
        ]
    )
    store_before = json.dumps(store.store, sort_keys=True, default=str)
    base = store.as_retriever(search_kwargs={"k": len(case.memories)})
    retrieved: list[tuple[Any, str]] = []
    lock = threading.Lock()

    async def retrieve(query: str) -> list[Any]:
        documents = await base.ainvoke(query)
        with lock:
            retrieved.extend((d, d.model_dump_json()) for d in documents)
        return documents

    model = SimulatedChatModel.from_case(
        case, faults=RandomFaults(fault_rate, seed=seed, outage_marker=_OUTAGE)
    )
    outage_every = round(1 / outage_share) if outage_share > 0 else 0
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: base.invoke(q), afunc=retrieve),
        llm=model,
        clearance=ClearanceConfig(
            budget=Budget(max_wall_seconds=query_seconds),
            failure=FailurePolicy(
                retry=RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.001)
            ),
        ),
        limits=Limits(circuit_breaker=None),  # every query meets its own faults
    )
    targets = set(case.targets)
    result = SoakResult()
    deadline = time.monotonic() + seconds
    started = time.perf_counter()
    gate = asyncio.Semaphore(concurrency)
    rng = random.Random(seed)

    async def one(index: int) -> None:
        try:
            await query_once(index)
        finally:
            if on_query is not None:
                on_query()

    async def query_once(index: int) -> None:
        async with gate:
            if time.monotonic() >= deadline:
                return
            result.queries += 1
            query = case.query if rng.random() < 0.8 else f"{case.query} (#{index})"
            if outage_every and index % outage_every == 0:
                query = f"{case.query} ({_OUTAGE} #{index})"
            try:
                out = await retriever.ainvoke(query, config=reference_config(case.reference))
            except Exception as exc:  # counted, never re-raised: the soak reports them
                result.errors_surfaced += 1
                name = type(exc).__name__
                result.error_types[name] = result.error_types.get(name, 0) + 1
                return
            result.served += 1
            meta = [d.metadata.get("meclear", {}) for d in out]
            if any(m.get("status") == "failed" for m in meta):
                result.failed_open += 1
                reason = meta[0].get("failure", {}).get("reason", "unknown")
                result.failure_reasons[reason] = result.failure_reasons.get(reason, 0) + 1
            elif targets.isdisjoint(d.id for d in out) and len(out) == len(case.memories) - 2:
                result.verified += 1
            else:
                result.other += 1

    await asyncio.gather(*(one(i) for i in range(queries)))
    result.wall_seconds = round(time.perf_counter() - started, 3)
    result.model_calls = model.stand_in.calls
    result.faults_injected = model.stand_in.faults_injected
    store_after = json.dumps(store.store, sort_keys=True, default=str)
    result.inputs_unchanged = store_before == store_after and all(
        d.model_dump_json() == snap for d, snap in retrieved
    )
    return result
