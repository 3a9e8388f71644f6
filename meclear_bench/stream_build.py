"""Query streams over LoCoMo with persistent, recurring faults (``meclear bench --stream``).

Per conversation:

1. **Bank**: the conversation's observation facts (as in :mod:`.locomo`).
2. **Stream**: every *answerable* question of categories 1-4 (a gold memory is in BM25's
   top-K over the clean bank and the clean context answers correctly), in the order LoCoMo
   lists them.
3. **Faults**: a seeded share of the answerable questions are fault targets. For each, a
   fault is proposed and causally verified exactly as in the per-case benchmark
   (:mod:`.locomo`: structure direct / redundant / joint drawn uniformly, a wrong answer of
   the same kind from the conversation, records written as ordinary memories; a target
   whose proposal fails is dropped and counted). Every verified fault record is then added
   to the conversation's bank *once, for the whole stream*: a persistent stale record.
4. **Recurrence**: a fault comes back as it does in use, three ways:
   - *repeat*: the target question asked again, verbatim, at a seeded random later
     position (same query id);
   - *paraphrase*: the target question reworded by a template that keeps its content words
     ("Remind me, ...", "... Do you remember?"), at another later position (a different
     query id, so a distinct query for review). Template paraphrases test recurring
     retrieval, not robustness to free rewording;
   - *natural*: any other LoCoMo question whose gold evidence overlaps the target's (a
     second question about the same fact) and whose top-K retrieves the fault record.
5. **World per query** (simulated, SIMULATED figures): every query retrieves its top-K from
   the bank with the faults; its gold memories claim its reference (weights as in
   :mod:`.locomo`); a fault record claims its wrong answer, with its verified weight, for
   the queries about its target (the target, its repeat and paraphrase, and natural second
   questions); for every other query it is background. Other targets' records may still
   push gold memories out of a query's top-K: such a query may be unanswerable, as in use.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.simulation import Claim, EvidenceWorld

from .cases import BenchCase, CaseMemory
from .locomo import STRUCTURES, _ConversationBuilder, _Funnel, _memory, _rng, _select
from .locomo_data import LocomoConversation, LocomoQuestion, load_locomo
from .retrieval import BM25Retriever
from .verify import verify_case

__all__ = ["FaultRecord", "QueryKind", "StreamBuild", "StreamQuery", "build_streams"]

QueryKind = Literal["original", "repeat", "paraphrase"]

PARAPHRASES = (
    "Remind me, {lower}",
    "Quick question: {text}",
    "{text} Do you remember?",
    "Can you tell me again: {lower}",
)
"""Templates of the paraphrased recurrence ({text}: the question, {lower}: first letter
lower-cased). They keep every content word, so BM25 retrieves much the same records."""
_ABSTAIN = "I don't know"


class FaultRecord(BaseModel):
    """One injected stale record, persistent in its conversation's bank."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    """The record's id in the bank."""
    text: str
    """The record's text."""
    target: int
    """LoCoMo index of the question it is about."""
    structure: str
    """``direct``, ``redundant`` or ``joint``."""
    fault_type: str | None
    """The fault's type."""
    wrong_answer: str
    """The wrong answer it claims."""
    weight: float
    """Its support in the simulated world."""


class StreamQuery(BaseModel):
    """One query of a stream: its text, kind, frozen context and simulated world."""

    model_config = ConfigDict(frozen=True)

    position: int
    """Index in its conversation's stream."""
    question: int
    """LoCoMo index of the underlying question."""
    kind: QueryKind
    """The query's kind in the stream (:data:`QueryKind`)."""
    case: BenchCase
    """The frozen top-K context and the world for this query (``targets``: the fault records
    in the context that claim a wrong answer for it)."""
    fault_ids: list[str] = Field(default_factory=list)
    """Fault records in the context that are about this query (= ``case.targets``)."""
    evidence: list[str] = Field(default_factory=list)
    """The LoCoMo dialogue ids of the question's gold evidence: two questions whose
    evidence overlaps are about the same fact (a fault about one is about the other)."""


class ConversationStream(BaseModel):
    """One conversation: its injected faults and its query stream."""

    model_config = ConfigDict(frozen=True)

    conversation: str
    """The LoCoMo conversation."""
    faults: list[FaultRecord]
    """The injected faults, persistent in the bank."""
    queries: list[StreamQuery]
    """The query stream, in order."""


class StreamBuild(BaseModel):
    """Every conversation's stream and the construction funnel."""

    streams: list[ConversationStream]
    """One stream per conversation."""
    funnel: dict[str, object] = Field(default_factory=dict)
    """What the construction kept and dropped, and why."""


def _paraphrase(text: str, rng: np.random.Generator) -> str:
    template = PARAPHRASES[int(rng.integers(len(PARAPHRASES)))]
    stripped = text.strip()
    lower = stripped[:1].lower() + stripped[1:]
    return template.format(text=stripped, lower=lower)


class _StreamBuilder:
    """Builds one conversation's stream (module docstring)."""

    def __init__(self, conv: LocomoConversation, *, k: int, seed: int, fault_share: float) -> None:
        self.conv = conv
        self.cid = conv.conversation_id
        self.k = k
        self.seed = seed
        self.fault_share = fault_share
        self.cases = _ConversationBuilder(conv, k=k, seed=seed, structures=STRUCTURES)
        self.facts = conv.facts

    def _gold(self, q: LocomoQuestion) -> set[int]:
        return {f.index for f in self.facts if f.dia_ids & q.evidence}

    def _gold_weight(self, q: LocomoQuestion, gold: set[int]) -> dict[int, float]:
        rng = _rng(self.seed, self.cid, q.index, "gold")
        return {i: round(float(rng.uniform(0.8, 1.2)), 3) for i in sorted(gold)}

    def answerable(self, funnel: dict[str, int]) -> list[LocomoQuestion]:
        """Questions whose clean context answers correctly (as in :mod:`.locomo`)."""
        kept = []
        for q in self.cases.questions:
            gold = self._gold(q)
            if not gold or not q.answer:
                funnel["no_gold_memory"] = funnel.get("no_gold_memory", 0) + 1
                continue
            ranked = self.cases.retriever.top_k(q.question, self.k)
            clean = self.cases._case(q, "clean", None, ranked, self._gold_weight(q, gold), [], None)
            if not any(i in gold for i, _ in ranked) or not verify_case(clean).ok:
                funnel["not_answerable"] = funnel.get("not_answerable", 0) + 1
                continue
            kept.append(q)
        return kept

    def faults(
        self, targets: Sequence[LocomoQuestion], funnel: dict[str, int]
    ) -> list[FaultRecord]:
        """Propose and verify one fault per target; the records of the verified ones."""
        records: list[FaultRecord] = []
        scratch = _Funnel()
        for q in targets:
            rng = _rng(self.seed, self.cid, q.index, "stream-structure")
            structure = STRUCTURES[int(rng.integers(len(STRUCTURES)))]
            gold = self._gold(q)
            case = self.cases.propose(q, structure, gold, self._gold_weight(q, gold), scratch)
            if case is None or not verify_case(case).ok:
                funnel["fault_not_verified"] = funnel.get("fault_not_verified", 0) + 1
                continue
            by_id = {m.id: m for m in case.memories}
            for target_id in case.targets:
                claim = case.world.claims[target_id]
                records.append(
                    FaultRecord(
                        memory_id=target_id,
                        text=by_id[target_id].text,
                        target=q.index,
                        structure=structure,
                        fault_type=case.fault_type,
                        wrong_answer=claim.answer,
                        weight=claim.weight,
                    )
                )
        return records

    def order(
        self, answerable: list[LocomoQuestion], faulted: set[int]
    ) -> list[tuple[LocomoQuestion, QueryKind, str]]:
        """The stream in LoCoMo order, with the repeats and paraphrases inserted.

        Each faulted question's repeat and paraphrase go to seeded random later positions.
        """
        stream: list[tuple[LocomoQuestion, QueryKind, str]] = [
            (q, "original", q.question) for q in answerable
        ]
        for q in answerable:
            if q.index not in faulted:
                continue
            rng = _rng(self.seed, self.cid, q.index, "stream-recurrence")
            for kind in ("repeat", "paraphrase"):
                text = q.question if kind == "repeat" else _paraphrase(q.question, rng)
                start = next(i for i, (o, k, _) in enumerate(stream) if o is q and k == "original")
                at = int(rng.integers(start + 1, len(stream) + 1))
                stream.insert(at, (q, kind, text))
        return stream

    def query(
        self,
        position: int,
        q: LocomoQuestion,
        kind: QueryKind,
        text: str,
        retriever: BM25Retriever,
        faults: list[FaultRecord],
        about: dict[int, set[int]],
    ) -> StreamQuery:
        n = len(self.facts)
        gold = self._gold(q)
        weights = self._gold_weight(q, gold)
        memories: list[CaseMemory] = []
        claims: dict[str, Claim] = {}
        targets: list[str] = []
        for rank, (index, score) in enumerate(retriever.top_k(text, self.k), start=1):
            if index < n:
                memory = _memory(self.cid, self.facts[index], rank, score)
                if index in weights:
                    claims[memory.id] = Claim(answer=q.answer, weight=weights[index])
            else:
                fault = faults[index - n]
                memory = CaseMemory(
                    id=fault.memory_id,
                    text=fault.text,
                    metadata={"retrieval_rank": rank, "retrieval_score": round(score, 4)},
                )
                if fault.target in about[q.index]:
                    claims[memory.id] = Claim(answer=fault.wrong_answer, weight=fault.weight)
                    targets.append(memory.id)
            memories.append(memory)
        case = BenchCase(
            case_id=f"stream-{self.cid}-p{position:04d}",
            cluster=f"locomo-{self.cid}",
            query_id=f"stream-{self.cid}-q{q.index:03d}-{kind}",
            query=text,
            reference=q.answer,
            structure="faulty" if targets else "clean",
            fault_type=None,
            memories=memories,
            targets=targets,
            world=EvidenceWorld(claims=claims, temperature=0.0, abstain=_ABSTAIN, aggregate="sum"),
        )
        return StreamQuery(position=position, question=q.index, kind=kind, case=case,
                           fault_ids=targets, evidence=sorted(q.evidence))  # fmt: skip

    def build(self, funnel: dict[str, int], max_queries: int | None) -> ConversationStream:
        answerable = self.answerable(funnel)
        if max_queries is not None:
            answerable = answerable[:max_queries]
        rng = _rng(self.seed, self.cid, 0, "stream-targets")
        count = round(self.fault_share * len(answerable))
        chosen = sorted(rng.choice(len(answerable), size=count, replace=False)) if count else []
        faults = self.faults([answerable[i] for i in chosen], funnel)
        faulted = {f.target for f in faults}
        # a question is about a target when it is the target or shares gold evidence with it
        evidence = {q.index: q.evidence for q in answerable}
        about = {
            q.index: {t for t in faulted if t == q.index or evidence[t] & q.evidence}
            for q in answerable
        }
        retriever = BM25Retriever([f.text for f in self.facts]).extended([f.text for f in faults])
        queries = [
            self.query(position, q, kind, text, retriever, faults, about)
            for position, (q, kind, text) in enumerate(self.order(answerable, faulted))
        ]
        funnel["answerable"] = funnel.get("answerable", 0) + len(answerable)
        funnel["fault_targets"] = funnel.get("fault_targets", 0) + count
        funnel["faults_injected"] = funnel.get("faults_injected", 0) + len(faulted)
        funnel["fault_records"] = funnel.get("fault_records", 0) + len(faults)
        funnel["stream_queries"] = funnel.get("stream_queries", 0) + len(queries)
        return ConversationStream(conversation=self.cid, faults=faults, queries=queries)


def build_streams(
    data_dir: str | Path,
    *,
    k: int = 5,
    seed: int = 0,
    fault_share: float = 0.2,
    conversations: list[str] | None = None,
    max_queries_per_conversation: int | None = None,
) -> StreamBuild:
    """One stream per LoCoMo conversation (module docstring).

    ``fault_share`` of the answerable questions are fault targets.

    Args:
        data_dir: The LoCoMo data (as :func:`~.locomo.build_locomo_cases`).
        k: The retrieval budget K.
        seed: The seed of the faults and the stream order.
        fault_share: The share of answerable questions that get a fault, in [0, 1].
        conversations: Conversation ids to use (None: all).
        max_queries_per_conversation: The most questions per conversation.

    Returns:
        The streams.

    Raises:
        ConfigurationError: ``k`` or ``fault_share`` is out of range.
    """
    if k < 1:
        raise ConfigurationError("k must be at least 1")
    if not 0.0 <= fault_share <= 1.0:
        raise ConfigurationError("fault_share must be in [0, 1]")
    funnel: dict[str, int] = {}
    streams = []
    for conv in _select(load_locomo(data_dir), conversations):
        builder = _StreamBuilder(conv, k=k, seed=seed, fault_share=fault_share)
        streams.append(builder.build(funnel, max_queries_per_conversation))
    kinds: dict[str, int] = {}
    faulty: dict[str, int] = {}
    for stream in streams:
        targets = {f.target for f in stream.faults}
        for query in stream.queries:
            kind: str = query.kind
            if kind == "original" and query.question not in targets:
                kind = "natural" if query.fault_ids else "other"
            kinds[kind] = kinds.get(kind, 0) + 1
            if query.fault_ids:
                faulty[kind] = faulty.get(kind, 0) + 1
    summary: dict[str, object] = {
        **funnel,
        "conversations": len(streams),
        "queries_by_kind": kinds,
        "queries_retrieving_a_fault_about_them": faulty,
        "k": k,
        "seed": seed,
        "fault_share": fault_share,
        "simulated": True,
    }
    return StreamBuild(streams=streams, funnel=summary)
