"""Fault-injected benchmark cases built from LoCoMo (the paper's Appendix D protocol).

Per conversation (one bootstrap cluster):

1. **Memory bank**: the ``session_N_observation`` facts (text, session date, source turn).
2. **Queries**: ``qa`` of categories 1-4; gold memories are the facts whose source turn is
   in the question's evidence. A query is *clean-correct* when BM25 (``rank-bm25``) puts at
   least one gold memory in its top-K and the clean context passes verification; the others
   are dropped and counted.
3. **Proposals**: per clean query and structure, a fault type is drawn (explicit conflict,
   or precise temporal/factual by the question's kind) and a wrong answer is taken from the
   conversation itself (:mod:`.faults`); the record(s) are written as ordinary memories.
4. **Injection**: the fault records are added to the memory bank and the *same retriever is
   run again*; its top-K is the frozen context (Eq. 6). Faults therefore take the places
   their relevance earns them, pushing out the lowest-ranked memories; a proposal is dropped
   when a fault is not retrieved into the top-K or when no gold memory is left in it.
5. **World** (simulated): every gold memory claims the reference with weight ~U(0.8, 1.2);
   every other memory of the bank, with probability 1/2, weakly supports the reference
   (weight ~U(0.1, 0.35)): deleting it needlessly lowers the evidence for the right
   answer. The reader abstains unless an answer's support beats ``abstain_weight``
   ~U(0.5, 1.2) per query, so for some queries the gold memory alone is too thin and the
   context around it is needed. With S the support of the reference in the faulted
   context, a direct fault and each redundant paraphrase weigh S x U(0.8, 2.0), each joint
   record S x U(0.35, 1.1): most proposals have their structure's signature, some do not
   (a fault too weak to flip the answer, a joint record harmful alone, a pair that stays
   harmless) and causal verification drops them. Temperature 0, ties broken once per
   prompt (a deterministic reader), sum aggregation. All draws are per query, so a memory
   weighs the same in every case of its query.
6. **Causal verification** (:func:`.verify.verify_case`) keeps only cases with their
   structure's signature; the funnel counts every query, proposal and case dropped, and why.
   Clean cases (the clean context of every used query) are built by default. By default
   the simulated world verifies; in real-model mode the real agent and judge do (the
   world's claims are still written, so the cases also run in the simulated world).

Random draws are seeded from (seed, conversation, question, structure), so a case does not
depend on which other conversations or queries are built.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 6 and Appendix D.
"""

from __future__ import annotations

import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.simulation import Claim, EvidenceWorld

from .cases import BenchCase, CaseMemory
from .faults import (
    answer_shape,
    fault_texts,
    is_temporal,
    same_kind_distractor,
    temporal_distractor,
    wh_class,
)
from .locomo_data import (
    LOCOMO_SOURCE,
    LocomoConversation,
    LocomoDataError,
    LocomoQuestion,
    MemoryFact,
    load_locomo,
)
from .retrieval import BM25Retriever
from .verify import Verifier, verify_each

__all__ = [
    "DEFAULT_STRUCTURES",
    "STRUCTURES",
    "LocomoBuild",
    "LocomoDataError",
    "build_locomo_cases",
]

STRUCTURES = ("direct", "redundant", "joint")
"""The fault structures."""
_ALL_STRUCTURES = (*STRUCTURES, "clean")
DEFAULT_STRUCTURES = _ALL_STRUCTURES
"""What :func:`build_locomo_cases` builds by default: every fault structure and the clean
cases."""
_CATEGORIES = (1, 2, 3, 4)
_ABSTAIN = "I don't know"
_FAULT_WEIGHT = {"direct": (0.8, 2.0), "redundant": (0.8, 2.0), "joint": (0.35, 1.1)}
"""Fault weight ranges, as multiples of the reference's support in the faulted context."""
_BACKGROUND_SHARE = 0.5
"""Share of background memories that weakly support the reference."""
_BACKGROUND_WEIGHT = (0.1, 0.35)
_ABSTAIN_WEIGHT = (0.5, 1.2)


class LocomoBuild(BaseModel):
    """Verified cases built from LoCoMo and the construction funnel (the paper's Table 3)."""

    cases: list[BenchCase]
    """Causally verified cases, conversation by conversation, in question order."""
    funnel: dict[str, Any] = Field(default_factory=dict)
    """JSON-able counts: conversations, queries, proposals, verified and dropped (and why)."""


class _Funnel:
    """Counters behind :attr:`LocomoBuild.funnel`."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.dropped_queries: Counter[str] = Counter()
        self.candidates: Counter[str] = Counter()
        self.dropped: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.verified: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.per_conversation: dict[str, Counter[str]] = {}

    def as_dict(self, structures: Sequence[str]) -> dict[str, Any]:
        verified: dict[str, dict[str, int]] = {}
        overall: Counter[str] = Counter()
        for structure in structures:
            row = dict(sorted(self.verified[structure].items()))
            row["all"] = sum(self.verified[structure].values())
            verified[structure] = row
            if structure != "clean":
                overall.update(self.verified[structure])
        verified["all"] = {**dict(sorted(overall.items())), "all": sum(overall.values())}
        candidates = {s: self.candidates[s] for s in structures if s != "clean"}
        candidates["all"] = sum(candidates.values())
        return {
            **dict(self.counts),
            "dropped_queries": dict(self.dropped_queries),
            "candidates": candidates,
            "dropped": {r: dict(c) | {"all": sum(c.values())} for r, c in self.dropped.items()},
            "verified": verified,
            "per_conversation": {k: dict(v) for k, v in self.per_conversation.items()},
        }


def _rng(seed: int, conversation: str, question: int, tag: str) -> np.random.Generator:
    return np.random.default_rng(
        [seed, zlib.crc32(conversation.encode()), question, zlib.crc32(tag.encode())]
    )


def _memory(cid: str, fact: MemoryFact, rank: int, score: float) -> CaseMemory:
    return CaseMemory(
        id=f"c{cid}-m{fact.index:04d}",
        text=fact.text,
        metadata={
            "session": fact.session,
            "date": fact.date.isoformat() if fact.date else None,
            "speaker": fact.speaker,
            "dia_ids": sorted(fact.dia_ids),
            "retrieval_rank": rank,
            "retrieval_score": round(score, 4),
        },
    )


@dataclass(frozen=True)
class _Query:
    """A query whose clean top-K holds a gold memory, with its clean case."""

    q: LocomoQuestion
    gold: set[int]
    gold_weight: dict[int, float]
    clean: BenchCase


class _ConversationBuilder:
    """Builds the cases of one conversation."""

    def __init__(
        self, conv: LocomoConversation, *, k: int, seed: int, structures: Sequence[str]
    ) -> None:
        self.conv = conv
        self.cid = conv.conversation_id
        self.k = k
        self.seed = seed
        self.structures = structures
        self.texts = [f.text for f in conv.facts]
        self.retriever = BM25Retriever(self.texts)
        self.dates = sorted(set(conv.session_dates.values()))
        self.questions = [q for q in conv.questions if q.category in _CATEGORIES]
        self.kinds = {
            q.index: (
                wh_class(q.question),
                is_temporal(q.question, q.answer, q.category),
                answer_shape(q.answer),
            )
            for q in self.questions
        }

    def _pool(self, q: LocomoQuestion, temporal: bool) -> list[str]:
        """Answers of the same kind (question form, temporality, shape) in this conversation."""
        kind = self.kinds[q.index]
        same = [
            o
            for o in self.questions
            if o.index != q.index and o.answer and self.kinds[o.index] == kind
        ]
        preferred = [o.answer for o in same if o.category == q.category]
        return preferred or [o.answer for o in same]

    def _distractor(
        self, q: LocomoQuestion, temporal: bool, rng: np.random.Generator
    ) -> str | None:
        if temporal and (wrong := temporal_distractor(q.answer, self.dates, rng)):
            return wrong
        return same_kind_distractor(q.answer, self._pool(q, temporal), rng)

    def _speakers(self, q: LocomoQuestion) -> tuple[str, str]:
        a, b = self.conv.speakers
        first_a, first_b = q.question.find(a), q.question.find(b) if b else -1
        if first_b >= 0 and (first_a < 0 or first_b < first_a):
            return b, a
        return a, b or a

    def background_support(self, q: LocomoQuestion, index: int) -> float | None:
        """Weight with which bank memory ``index`` weakly supports ``q``'s answer, or None.

        Seeded per query and memory, so the memory weighs the same in every case.
        """
        rng = _rng(self.seed, self.cid, q.index, f"background-{index}")
        if rng.random() >= _BACKGROUND_SHARE:
            return None
        return round(float(rng.uniform(*_BACKGROUND_WEIGHT)), 3)

    def abstain_weight(self, q: LocomoQuestion) -> float:
        """The support an answer must beat for the reader to give it (per query)."""
        return round(
            float(_rng(self.seed, self.cid, q.index, "abstain").uniform(*_ABSTAIN_WEIGHT)), 3
        )

    def reference_support(
        self, q: LocomoQuestion, ranked: list[tuple[int, float]], gold_weight: dict[int, float]
    ) -> float:
        """Support of the reference in a context: its gold and background claims."""
        n = len(self.conv.facts)
        total = 0.0
        for index, _ in ranked:
            if index >= n:
                continue
            weight = gold_weight.get(index)
            if weight is None:
                weight = self.background_support(q, index)
            total += weight or 0.0
        return total

    def _case(
        self,
        q: LocomoQuestion,
        structure: str,
        fault_type: str | None,
        ranked: list[tuple[int, float]],
        gold_weight: dict[int, float],
        faults: list[tuple[str, float, dict[str, Any]]],
        wrong: str | None,
    ) -> BenchCase:
        n = len(self.conv.facts)
        memories: list[CaseMemory] = []
        claims: dict[str, Claim] = {}
        targets: list[str | None] = [None] * len(faults)
        for rank, (index, score) in enumerate(ranked, start=1):
            if index < n:
                memory = _memory(self.cid, self.conv.facts[index], rank, score)
                if index in gold_weight:
                    claims[memory.id] = Claim(answer=q.answer, weight=gold_weight[index])
                elif (weak := self.background_support(q, index)) is not None:
                    claims[memory.id] = Claim(answer=q.answer, weight=weak)
            else:
                j = index - n
                text, weight, meta = faults[j]
                memory = CaseMemory(
                    id=f"c{self.cid}-q{q.index:03d}-n{j + 1}",
                    text=text,
                    metadata={**meta, "retrieval_rank": rank, "retrieval_score": round(score, 4)},
                )
                claims[memory.id] = Claim(answer=wrong or "", weight=weight)
                targets[j] = memory.id
            memories.append(memory)
        return BenchCase(
            case_id=f"locomo-{self.cid}-q{q.index:03d}-{structure}",
            cluster=f"locomo-{self.cid}",
            query_id=f"locomo-{self.cid}-q{q.index:03d}",
            query=q.question,
            reference=q.answer,
            structure=structure,
            fault_type=fault_type,
            memories=memories,
            targets=[t for t in targets if t is not None],
            world=EvidenceWorld(
                claims=claims,
                temperature=0.0,
                abstain=_ABSTAIN,
                aggregate="sum",
                abstain_weight=self.abstain_weight(q),
                ties="prompt",
            ),
        )

    def _fault_meta(
        self,
        speaker: str,
        rng: np.random.Generator,
        fault_type: str = "precise_factual",
        gold_sessions: Sequence[int] = (),
    ) -> dict[str, Any]:
        """Session, date and speaker of an injected fault record.

        Dates follow the fault type: a ``precise_*`` fault is a stale version of the fact,
        so it is dated in the latest session before the earliest gold record; an
        ``explicit_conflict`` record contradicts the gold, so it is dated in the first session
        after the latest gold record (a later, wrong correction). When no such session
        exists, the session drawn at random is kept. The draw is made in every case, so the
        rest of the build consumes the same random numbers.
        """
        sessions = sorted(self.conv.session_dates)
        session = sessions[int(rng.integers(len(sessions)))] if sessions else 0
        if gold_sessions:
            if fault_type == "explicit_conflict":
                later = [s for s in sessions if s > max(gold_sessions)]
                session = later[0] if later else session
            else:
                earlier = [s for s in sessions if s < min(gold_sessions)]
                session = earlier[-1] if earlier else session
        day = self.conv.session_dates.get(session)
        return {
            "session": session,
            "date": day.isoformat() if day else None,
            "speaker": speaker,
            "dia_ids": [],
        }

    def propose(
        self,
        q: LocomoQuestion,
        structure: str,
        gold: set[int],
        gold_weight: dict[int, float],
        funnel: _Funnel,
    ) -> BenchCase | None:
        rng = _rng(self.seed, self.cid, q.index, structure)
        temporal = self.kinds[q.index][1]
        kinds = ("explicit_conflict", "precise_temporal" if temporal else "precise_factual")
        fault_type = kinds[int(rng.integers(2))]
        wrong = self._distractor(q, temporal, rng)
        if wrong is None:
            funnel.dropped["no_distractor"][structure] += 1
            return None
        speaker, other = self._speakers(q)
        texts = fault_texts(
            fault_type,
            structure,
            question=q.question,
            wrong=wrong,
            reference=q.answer,
            speaker=speaker,
            other=other,
        )
        ranked = self.retriever.extended(texts).top_k(q.question, self.k)
        n = len(self.texts)
        if sum(1 for i, _ in ranked if i >= n) < len(texts):
            funnel.dropped["fault_not_retrieved"][structure] += 1
            return None
        present_gold = [i for i, _ in ranked if i in gold]
        if not present_gold:
            funnel.dropped["gold_displaced"][structure] += 1
            return None
        total = self.reference_support(q, ranked, gold_weight)
        low, high = _FAULT_WEIGHT[structure]
        gold_sessions = [self.conv.facts[i].session for i in present_gold]
        faults = [
            (
                text,
                round(total * float(rng.uniform(low, high)), 3),
                self._fault_meta(speaker, rng, fault_type, gold_sessions),
            )
            for text in texts
        ]
        return self._case(q, structure, fault_type, ranked, gold_weight, faults, wrong)

    def _pending(self, funnel: _Funnel) -> list[_Query]:
        """Queries with a gold memory retrieved in the clean top-K, and their clean cases."""
        pending: list[_Query] = []
        for q in self.questions:
            gold = {f.index for f in self.conv.facts if f.dia_ids & q.evidence}
            if not gold or not q.answer:
                funnel.dropped_queries["no_gold_memory"] += 1
                continue
            funnel.counts["queries_with_gold_memories"] += 1
            ranked = self.retriever.top_k(q.question, self.k)
            if not any(i in gold for i, _ in ranked):
                funnel.dropped_queries["gold_not_retrieved"] += 1
                continue
            rng = _rng(self.seed, self.cid, q.index, "gold")
            gold_weight = {i: round(float(rng.uniform(0.8, 1.2)), 3) for i in sorted(gold)}
            clean = self._case(q, "clean", None, ranked, gold_weight, [], None)
            pending.append(_Query(q, gold, gold_weight, clean))
        return pending

    def _clean_correct(
        self,
        pending: list[_Query],
        funnel: _Funnel,
        max_queries: int | None,
        verify: Verifier,
        batch: int | None,
    ) -> list[_Query]:
        """The queries used: clean-correct, in question order, at most ``max_queries``.

        Clean cases are verified ``batch`` at a time (all at once when None); with a batch,
        verification stops once ``max_queries`` are found and the queries not verified count as
        beyond the maximum.
        """
        stats = funnel.per_conversation[self.cid]
        used: list[_Query] = []
        size = max(1, batch or len(pending))
        for start in range(0, len(pending), size):
            if batch is not None and max_queries is not None and len(used) >= max_queries:
                funnel.dropped_queries["beyond_max_queries"] += len(pending) - start
                break
            chunk = pending[start : start + size]
            for item, verdict in zip(chunk, verify([i.clean for i in chunk]), strict=True):
                if not verdict.ok:
                    funnel.dropped_queries["clean_incorrect"] += 1
                    continue
                funnel.counts["clean_queries"] += 1
                stats["clean_queries"] += 1
                if max_queries is not None and len(used) >= max_queries:
                    funnel.dropped_queries["beyond_max_queries"] += 1
                    continue
                used.append(item)
                funnel.counts["clean_queries_used"] += 1
        return used

    def build(
        self,
        funnel: _Funnel,
        max_queries: int | None,
        verify: Verifier = verify_each,
        batch: int | None = None,
    ) -> list[BenchCase]:
        stats = funnel.per_conversation.setdefault(self.cid, Counter())
        stats["qa"] = len(self.questions)
        used = self._clean_correct(self._pending(funnel), funnel, max_queries, verify, batch)
        proposals: list[tuple[str, BenchCase]] = []
        for item in used:
            for structure in self.structures:
                if structure == "clean":
                    proposals.append((structure, item.clean))
                    continue
                funnel.candidates[structure] += 1
                stats["candidates"] += 1
                case = self.propose(item.q, structure, item.gold, item.gold_weight, funnel)
                if case is not None:
                    proposals.append((structure, case))
        faulted = [case for structure, case in proposals if structure != "clean"]
        verdicts = iter(verify(faulted))
        cases: list[BenchCase] = []
        for structure, case in proposals:
            if structure == "clean":
                funnel.verified["clean"]["none"] += 1
                cases.append(case)
                continue
            verdict = next(verdicts)
            if not verdict.ok:
                funnel.dropped[verdict.reason or "unverified"][structure] += 1
                continue
            funnel.verified[structure][case.fault_type or "none"] += 1
            cases.append(case)
        stats["cases"] = len(cases)
        return cases


def _select(
    conversations: list[LocomoConversation], wanted: Iterable[str] | None
) -> list[LocomoConversation]:
    if wanted is None:
        return conversations
    by_id = {c.conversation_id: c for c in conversations}
    chosen: list[LocomoConversation] = []
    for name in wanted:
        key = str(name).removeprefix("conv-")
        if key not in by_id:
            raise ConfigurationError(
                f"unknown LoCoMo conversation {name!r}; available: {sorted(by_id)}"
            )
        chosen.append(by_id[key])
    return chosen


def build_locomo_cases(
    data_dir: str | Path,
    *,
    k: int = 5,
    seed: int = 0,
    conversations: list[str] | None = None,
    max_queries_per_conversation: int | None = None,
    structures: Sequence[str] = DEFAULT_STRUCTURES,
    progress: bool = False,
    verify: Verifier = verify_each,
    batch: int | None = None,
    verified_with: str | None = None,
) -> LocomoBuild:
    """Build causally verified cases from LoCoMo at ``data_dir`` (see the module docstring).

    Args:
        data_dir: ``locomo10.json``, or a directory holding it or one JSON file per
            conversation.
        k: The retrieval budget K (the frozen context's size).
        seed: The seed of fault types, fault placement and the simulated verification.
        conversations: Conversation ids to use ("26" or "conv-26"; None: all).
        max_queries_per_conversation: The most clean queries kept per conversation.
        structures: Fault structures and ``"clean"`` (control cases without faults).
        progress: Show a progress bar.
        verify: Checks batches of cases (default: each case's simulated world); a real-model
            verifier (:func:`~meclear_bench.real_backend.real_verifier`) makes
            the funnel report what the real agent and judge did.
        batch: The clean cases a real-model verifier checks at a time (then verification
            stops once ``max_queries_per_conversation`` clean queries are found).
        verified_with: The models' names, recorded in the funnel.

    Returns:
        The verified cases and the funnel (what was dropped at each step, and why).

    Raises:
        LocomoDataError: The path holds no LoCoMo data (the message says where to get it).
        ConfigurationError: ``k``, ``structures`` or ``max_queries_per_conversation`` is
            not usable, or a conversation id is unknown.
    """
    if k < 1:
        raise ConfigurationError("k must be at least 1")
    unknown = sorted(set(structures) - set(_ALL_STRUCTURES))
    if unknown:
        raise ConfigurationError(
            f"unknown structures {unknown}; choose from {list(_ALL_STRUCTURES)}"
        )
    if max_queries_per_conversation is not None and max_queries_per_conversation < 0:
        raise ConfigurationError("max_queries_per_conversation must be non-negative")
    chosen = _select(load_locomo(data_dir), conversations)
    funnel = _Funnel()
    funnel.counts.update(conversations=len(chosen))
    for conv in chosen:
        funnel.counts["qa_total"] += len(conv.questions)
        funnel.counts["qa_categories_1_4"] += sum(q.category in _CATEGORIES for q in conv.questions)
        funnel.counts["memory_records"] += len(conv.facts)
    iterator: Iterable[LocomoConversation] = chosen
    if progress:
        try:
            from tqdm import tqdm

            iterator = tqdm(chosen, desc="LoCoMo conversations", unit="conv", disable=None)
        except ImportError:  # pragma: no cover - tqdm is in the bench extra
            pass
    cases: list[BenchCase] = []
    for conv in iterator:
        builder = _ConversationBuilder(conv, k=k, seed=seed, structures=tuple(structures))
        cases.extend(builder.build(funnel, max_queries_per_conversation, verify, batch))
    summary = funnel.as_dict(tuple(structures))
    summary.update(
        source="locomo",
        data=str(data_dir),
        k=k,
        seed=seed,
        retriever="BM25 (rank-bm25 BM25Okapi), faults injected into the bank and re-retrieved",
        simulated=verified_with is None,
        verified_with=verified_with or "simulated evidence world",
        cases=len(cases),
        fault_records=sum(len(c.targets) for c in cases),
    )
    return LocomoBuild(cases=cases, funnel=summary)


_ = LOCOMO_SOURCE  # re-exported through the error messages of load_locomo
