"""A LlamaIndex query engine, first plain, then with MeClearPostprocessor added.

Offline by default: the task agent and judge are the SIMULATED evidence world wrapped as a
LlamaIndex ``CustomLLM`` (figures are simulated, not a real model's), and retrieval uses a
deterministic hashed bag-of-words embedding. With OPENAI_API_KEY set (optionally
OPENAI_BASE_URL, OPENAI_MODEL) and ``llama-index-llms-openai`` installed, the agent and
judge are ``llama_index.llms.openai.OpenAI`` instead.

The index holds the paper's redundant-harm case (John in Italy): one gold memory says
December 2023, two paraphrased faults say January 2023. The plain engine answers January;
with the postprocessor the two faults are cleared for this query (verified: without them
the answer is right) and the engine answers December. The stage events reach an ordinary
instrumentation event handler. Run: ``python cookbook/llama_index_query_engine.py``.
"""

from __future__ import annotations

import asyncio
import os

from llama_index.core import VectorStoreIndex
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.llms import LLM
from llama_index.core.schema import TextNode
from pydantic import Field

from meclear_integrations.llama_index import (
    HashEmbedding,
    MeClearPostprocessor,
    MeClearStageEndEvent,
    SimulatedLLM,
    query_reference,
)
from meclear_integrations.simulation import redundant_harm_example

OTHER_NOTES = [
    "Maria opened a bakery in Lisbon last spring.",
    "The team meeting moved to Thursday afternoons.",
]


class StageLog(BaseEventHandler):
    """Prints one line per MeClear stage end."""

    lines: list[str] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "StageLog"

    def handle(self, event, **kwargs) -> None:
        if isinstance(event, MeClearStageEndEvent):
            p = event.payload
            detail = {
                "screening": lambda: f"baseline value {p.get('baseline_value')}",
                "attribution": lambda: f"harmful {sorted(p.get('harmful_ids', []))}",
                "interactions": lambda: "pairs done",
                "clearance": lambda: (
                    f"cleared {sorted(p.get('cleared_ids', []))}, recovered {p.get('recovered')}"
                ),
            }[event.stage]()
            self.lines.append(f"  {event.class_name():<28} {detail}")


def make_llm() -> tuple[LLM, str]:
    """OpenAI when OPENAI_API_KEY is set and the integration is installed, else simulated."""
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from llama_index.llms.openai import OpenAI
        except ImportError:
            print("OPENAI_API_KEY is set but llama-index-llms-openai is not installed")
        else:
            model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
            base = os.environ.get("OPENAI_BASE_URL")
            return OpenAI(model=model, temperature=0, api_base=base), f"OpenAI({model})"
    return SimulatedLLM.from_case(redundant_harm_example()), "SIMULATED evidence world (offline)"


def main() -> dict[str, str]:
    case = redundant_harm_example()
    llm, label = make_llm()
    nodes = [
        TextNode(id_=m.id, text=m.content, metadata={"session": m.metadata["session"]})
        for m in case.memories
    ] + [TextNode(id_=f"other-{i}", text=t) for i, t in enumerate(OTHER_NOTES)]
    index = VectorStoreIndex(nodes, embed_model=HashEmbedding())
    log = StageLog()
    get_dispatcher().add_event_handler(log)

    print(f"model: {label}")
    print(f"question: {case.query}   (reference: {case.reference})\n")
    plain = index.as_query_engine(llm=llm, similarity_top_k=6)
    before = plain.query(case.query)
    retrieved = [n.node.node_id for n in before.source_nodes]
    print(f"plain query engine           -> {before}")

    postprocessor = MeClearPostprocessor(llm=llm)
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[postprocessor])
    # The reference answer of this query reaches the postprocessor through a context variable.
    with query_reference(case.reference):
        after = engine.query(case.query)
        async_after = asyncio.run(engine.aquery(case.query))
    print(f"with MeClearPostprocessor    -> {after}")
    print(f"same engine, aquery          -> {async_after}\n")

    print("stage events (sync run, then async run):")
    print("\n".join(log.lines))
    print("\nnodes the synthesizer saw after clearance (metadata['meclear']):")
    for n in after.source_nodes:
        m = n.node.metadata["meclear"]
        shapley = "n/a" if m["shapley"] is None else f"{m['shapley']:+.3f}"
        print(f"  {m['memory_id']:<8} shapley {shapley}  rank {m['rank']}  {n.node.get_content()}")
    kept = {n.node.node_id for n in after.source_nodes}
    print("retrieved:", ", ".join(retrieved))
    print("cleared for this query:", ", ".join(i for i in retrieved if i not in kept))
    get_dispatcher().event_handlers.remove(log)
    return {"plain": str(before), "cleared": str(after), "async": str(async_after)}


if __name__ == "__main__":
    main()
