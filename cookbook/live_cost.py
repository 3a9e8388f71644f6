"""What one query costs a user in model calls through ``ClearingRetriever`` (SIMULATED).

The agent and the judge are the simulated evidence world as a chat model, on the paper's
redundant-harm case (K=6: one gold memory, two paraphrased faults, three background
notes). A *faulty* query has the gold answer as reference (the full context answers
wrongly, so clearance runs); a *clean* query has the full context's own answer as
reference (clearance stops after the baseline: the engine's early exit). Model calls are
what the provider bills: agent and judge calls, after the per-query deduplication (a
judge call per distinct answer; with ``deterministic_agent`` one agent call per distinct
prompt across trials). The chain's own final answer is not included.

Run: ``python cookbook/live_cost.py`` (prints a Markdown table; figures are SIMULATED).
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations import ClearanceConfig
from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.simulation import redundant_harm_example

PRESETS = {
    "default": ClearanceConfig(),
    "cheap": ClearanceConfig.cheap(),
    "paper": ClearanceConfig.paper(),
}


def measure() -> list[dict[str, Any]]:
    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    llm = SimulatedChatModel.from_case(case)
    queries = {"faulty": case.reference, "clean": "January 2023"}
    rows = []
    for preset, config in PRESETS.items():
        for deterministic in (True, False):
            for kind, reference in queries.items():
                retriever = ClearingRetriever(
                    retriever=RunnableLambda(lambda q: docs),
                    llm=llm,
                    clearance=config,
                    deterministic_agent=deterministic,
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    kept = retriever.invoke(case.query, config=reference_config(reference))
                calls = kept[0].metadata["meclear"]["model_calls"]
                rows.append(
                    {
                        "preset": preset,
                        "deterministic_agent": deterministic,
                        "query": kind,
                        "kept": [d.id for d in kept],
                        **{k: calls[k] for k in ("agent", "judge", "total")},
                    }
                )
    return rows


def main() -> list[dict[str, Any]]:
    rows = measure()
    print("SIMULATED evidence world, K=6, reference judge; model calls per query")
    print("| preset | deterministic agent | query | agent | judge | total | kept |")
    print("|---|---|---|---:|---:|---:|---|")
    for r in rows:
        print(
            f"| {r['preset']} | {r['deterministic_agent']} | {r['query']} | {r['agent']} | "
            f"{r['judge']} | {r['total']} | {', '.join(r['kept'])} |"
        )
    return rows


if __name__ == "__main__":
    main()
