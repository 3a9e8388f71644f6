"""ConMem admission gate in front of a LangChain vector store and a LlamaIndex pipeline.

Offline by default: every model answer comes from ``ScriptedAdmissionModel``, a
deterministic keyword-cue stand-in (NOT an LLM), so the decisions below are scripted.
Set OPENAI_API_KEY and pass ``--openai-model gpt-4o-mini`` to use a real chat model.

    python cookbook/admission_gate.py [--openai-model NAME]
"""

from __future__ import annotations

import argparse
import os

from meclear_integrations.admission import AdmissionHook, ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel

CONVERSATION = [
    {
        "role": "user",
        "content": "Can you suggest a fine-dining spot for a farewell dinner? "
        "My co-worker doesn't eat meat.",
    },
    {"role": "assistant", "content": "Here are three restaurants with vegetarian menus."},
    {
        "role": "user",
        "content": "I'm allergic to shellfish, so never suggest shrimp dishes "
        "to me. What's a quick weeknight dinner?",
    },
    {"role": "assistant", "content": "Try a lemon-garlic chicken traybake."},
]
CANDIDATES = {
    "m1": "User is allergic to shellfish.",
    "m2": "User's co-worker doesn't eat meat.",
    "m3": "User is strictly vegetarian.",
}


def make_model(openai_model: str | None):
    if not openai_model:
        return ScriptedAdmissionModel()
    from langchain_openai import ChatOpenAI

    from meclear_integrations.langchain import as_text_model

    return as_text_model(ChatOpenAI(model=openai_model, temperature=0), structured_output=True)


def main(openai_model: str | None = None) -> dict[str, list[str]]:
    admitter = ConMemAdmitter(make_model(openai_model))
    label = "real model" if openai_model else "SCRIPTED stand-in, not an LLM"
    print(f"ConMem admission gate ({label})\n")

    # 1. The plain write hook (Mem0-style): score in [0, 1] plus the full decision.
    hook = AdmissionHook(admitter)
    for cid, text in CANDIDATES.items():
        score, d = hook.before_write(text, CONVERSATION, candidate_id=cid)
        tie = " (tie-break)" if d.tie_break_ran else ""
        reason = d.reason.reason_type if d.reason else None
        print(
            f"  {cid}: {d.decision}{tie}  CMTE={d.cmte:+.3f}  score={score:.2f}  "
            f"reason={reason}  calls={d.cost.model_calls}"
        )

    # 2. LangChain: only admitted documents reach the vector store.
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from meclear_integrations.langchain.admission import AdmissionGate

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    gate = AdmissionGate(store, admitter)
    docs = [Document(id=cid, page_content=t) for cid, t in CANDIDATES.items()]
    result = gate.add_documents(docs, context=CONVERSATION)
    print(f"\nLangChain vector store now holds: {sorted(store.store)}")

    # 3. LlamaIndex: an IngestionPipeline drops do-not-store nodes.
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.schema import TextNode

    from meclear_integrations.llama_index.admission import AdmissionTransform

    pipeline = IngestionPipeline(
        transformations=[AdmissionTransform(admitter=admitter, context=CONVERSATION)]
    )
    nodes = pipeline.run(nodes=[TextNode(id_=cid, text=t) for cid, t in CANDIDATES.items()])
    print(f"LlamaIndex pipeline passed on: {sorted(n.node_id for n in nodes)}")
    return {
        "langchain": sorted(result.added_ids),
        "llama_index": sorted(n.node_id for n in nodes),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openai-model", default=None)
    args = parser.parse_args()
    if args.openai_model and not os.environ.get("OPENAI_API_KEY"):
        parser.error("--openai-model needs OPENAI_API_KEY")
    main(args.openai_model)
