"""What a traced clearance looks like, and where to find each field.

Offline by default: the run tree is collected locally with ``RunCollectorCallbackHandler``
(the same runs LangSmith would store) and the custom events with a callback handler; the
agent and judge are the SIMULATED evidence world. With LANGSMITH_TRACING=true and
LANGSMITH_API_KEY set (LANGSMITH_ENDPOINT for a self-hosted instance), LangChain also
sends the runs to LangSmith, where the same fields appear:

- retriever run (``ClearingRetriever``): outputs = the kept documents; each carries
  ``metadata["meclear"]`` (memory id, LOO effect, Shapley value and interval, rank,
  harmful, cleared, recovered);
- child run ``meclear_clearance``: inputs = query, memory ids, whether a reference was
  given; outputs = the bounded report (baseline and final value, recovered, cleared /
  kept / harmful ids, per-memory contributions, every clearance candidate, cost);
- its children ``meclear_evaluate`` (one per agent run on a coalition): inputs = memory
  ids and trial; outputs = answer, score, how the verdict was read; under each, the
  agent's and the judge's model runs;
- custom events ``meclear.screening`` / ``meclear.attribution`` / ``meclear.clearance``
  reach callback handlers and ``astream_events`` only: LangSmith does not store them,
  which is why the clearance run's outputs repeat the decision.

Run: ``python cookbook/langsmith_tracing.py``.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.telemetry import TraceSettings


class PrintEvents(BaseCallbackHandler):
    """Prints each MeClear custom event (name, phase, a short view of the payload)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_custom_event(self, name: str, data: Any, *, run_id, **kwargs: Any) -> None:
        self.names.append(name)
        keys = ", ".join(k for k in data if k not in ("stage", "phase", "query_id"))
        print(f"  event {name:<20} {data['phase']:<5} fields: {keys}")


def print_tree(run, depth: int = 0, limit: int = 3) -> None:
    evaluations = [c for c in run.child_runs if c.name == "meclear_evaluate"]
    print(f"{'  ' * depth}- {run.run_type}: {run.name}")
    for child in run.child_runs:
        if child.name == "meclear_evaluate" and evaluations.index(child) >= limit:
            continue
        print_tree(child, depth + 1, limit)
    if len(evaluations) > limit:
        print(f"{'  ' * (depth + 1)}... {len(evaluations) - limit} more meclear_evaluate runs")


def main() -> dict[str, Any]:
    case = redundant_harm_example()
    documents = [Document(page_content=m.content, id=m.id) for m in case.memories]
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: documents, name="memory_store"),
        llm=SimulatedChatModel.from_case(case),
        # every evaluator call as a run (the default, "failures", traces failed ones only)
        tracing=TraceSettings(detail="evaluations"),
    )
    collector, events = RunCollectorCallbackHandler(), PrintEvents()
    print("SIMULATED evidence world (offline); custom events as they arrive:")
    kept = retriever.invoke(
        case.query, config=reference_config(case.reference, {"callbacks": [collector, events]})
    )

    (root,) = collector.traced_runs
    print("\nrun tree (what LangSmith stores):")
    print_tree(root)
    clearance = next(c for c in root.child_runs if c.name == "meclear_clearance")
    outputs = clearance.outputs or {}
    print("\nmeclear_clearance outputs (bounded report):")
    print(f"  cleared_ids {outputs['cleared_ids']}  recovered {outputs['recovered']}")
    for mid, c in outputs["contributions"].items():
        print(f"  {mid}: loo {c['loo_effect']:+.2f}  shapley {c['shapley']:+.3f}  rank {c['rank']}")
    print(f"  cost {json.dumps(outputs['cost'])}")
    cap = retriever.limits.max_event_bytes
    print(f"  payload size {len(json.dumps(outputs))} bytes (cap {cap})")
    print("\nretriever outputs: document metadata['meclear'], e.g.")
    print(f"  {json.dumps(kept[0].metadata['meclear'])}")
    return {"events": events.names, "outputs": outputs, "kept": [d.id for d in kept]}


if __name__ == "__main__":
    main()
