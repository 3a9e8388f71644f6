"""An LCEL RAG chain, first with a plain retriever, then with ClearingRetriever swapped in.

Offline by default: the task agent and judge are the SIMULATED evidence world wrapped as a
LangChain chat model (figures are simulated, not a real model's). With OPENAI_API_KEY set
(and optionally OPENAI_BASE_URL, OPENAI_MODEL) it uses langchain_openai.ChatOpenAI instead.

The memory store holds the paper's redundant-harm case (John in Italy): one gold memory
says December 2023, two paraphrased faults say January 2023. The plain chain answers
January; with ClearingRetriever the two faults are cleared for this query and the chain
answers December. Run: ``python cookbook/langchain_rag_chain.py``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections import Counter

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.simulation import redundant_harm_example

OTHER_NOTES = [
    "Maria opened a bakery in Lisbon last spring.",
    "The team meeting moved to Thursday afternoons.",
]


class BagOfWordsEmbeddings(Embeddings):
    """A tiny deterministic embedding (hashed word counts), enough for an offline demo."""

    def __init__(self, size: int = 256) -> None:
        self.size = size

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.size
        for word, n in Counter(re.findall(r"[a-z0-9]+", text.lower())).items():
            bucket = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
            vector[bucket % self.size] += n
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


PROMPT = ChatPromptTemplate.from_template(
    "Answer the question from the notes below; reply with the answer only.\n\n"
    "Notes:\n{context}\n\nQuestion: {question}"
)


def format_docs(docs: list[Document]) -> str:
    return "\n".join(f"- {d.page_content}" for d in docs)


def make_llm() -> tuple[BaseChatModel, str]:
    """ChatOpenAI when OPENAI_API_KEY is set, else the simulated world."""
    if os.environ.get("OPENAI_API_KEY"):
        from langchain_openai import ChatOpenAI

        model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
        return ChatOpenAI(model=model, temperature=0), f"ChatOpenAI({model})"
    case = redundant_harm_example()
    return SimulatedChatModel.from_case(case), "SIMULATED evidence world (offline)"


def rag_chain(retriever: Runnable, llm: BaseChatModel) -> Runnable:
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | llm
        | StrOutputParser()
    )


def main() -> dict[str, str]:
    case = redundant_harm_example()
    llm, label = make_llm()
    store = InMemoryVectorStore(BagOfWordsEmbeddings())
    store.add_documents(
        [Document(page_content=m.content, id=m.id, metadata=m.metadata) for m in case.memories]
        + [Document(page_content=t, id=f"other-{i}") for i, t in enumerate(OTHER_NOTES)]
    )
    base = store.as_retriever(search_kwargs={"k": 6})
    # The reference answer of this query reaches the retriever through config metadata.
    config = reference_config(case.reference)

    print(f"model: {label}")
    print(f"question: {case.query}   (reference: {case.reference})\n")
    plain = rag_chain(base, llm).invoke(case.query, config=config)
    print(f"plain retriever      -> {plain}")

    clearing = ClearingRetriever(retriever=base, llm=llm)
    cleared = rag_chain(clearing, llm).invoke(case.query, config=config)
    print(f"ClearingRetriever    -> {cleared}\n")

    kept = clearing.invoke(case.query, config=config)
    print("documents the chain saw after clearance (metadata['meclear']):")
    for d in kept:
        m = d.metadata["meclear"]
        shapley = "n/a" if m["shapley"] is None else f"{m['shapley']:+.3f}"
        print(f"  {m['memory_id']:<8} shapley {shapley}  rank {m['rank']}  {d.page_content}")
    kept_ids = {d.id for d in kept}
    retrieved = [d.id for d in base.invoke(case.query)]
    print("retrieved:", ", ".join(str(i) for i in retrieved))
    print("cleared for this query:", ", ".join(str(i) for i in retrieved if i not in kept_ids))
    return {"plain": plain, "clearing": cleared}


if __name__ == "__main__":
    main()
