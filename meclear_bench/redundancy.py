"""Heavy-redundancy cases from LoCoMo: one wrong claim in r = 3..10 copies of unequal strength.

Per LoCoMo question (categories 1-4, a wrong answer of the same kind found in the
conversation, :mod:`.faults`):

- **gold**: one memory stating the reference (``statements.statement``);
- **copies** (the targets): r ~ U{3..10} paraphrases of one wrong claim, plain or hedged
  ("perhaps", "was not certain"...), so some copies cannot flip the answer beside the
  gold by themselves, while all of them together do;
- **background**: the conversation's observation records BM25 ranks highest for the
  question (records of the question's evidence turns excluded), up to K ~ U{10..20};
- positions shuffled (seeded per question).

Controls from the same questions: ``clean`` (gold and background), ``double_gold`` (two
gold statements and background: redundancy that helps, nothing to flag),
``unexplained`` (background only, no gold: a failure no memory explains).

Simulated world: gold weight g ~ U(0.8, 1.2); each copy is strong (g x U(1.0, 1.5):
alone it flips the answer beside the gold) with probability 1/3, else weak
(g x U(0.2, 0.7)); at least one is strong; background makes no claim. Temperature 0,
ties once per prompt. Offline text reader (:mod:`.text_reader`): the texts alone decide
(relevance times the hedge factor). A case is kept only when its reader (``mode``)
verifies its signature: the full context fails, the gold alone and the context without
the copies answer right, and every copy alone gives an answer that agrees with the wrong
claim (clean and double-gold: the full context answers right; unexplained: it fails). The
funnel counts what was dropped and why.

Random draws are seeded from (seed, conversation, question), so a case does not depend
on which other questions are built. SIMULATED / offline text reader: never a real model.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from meclear_integrations.simulation import Claim, EvidenceWorld

from .cases import BenchCase, CaseMemory
from .faults import (
    answer_shape,
    is_temporal,
    same_kind_distractor,
    temporal_distractor,
    wh_class,
)
from .locomo_data import LocomoConversation, LocomoQuestion, load_locomo
from .retrieval import BM25Retriever
from .split import SplitName, split_conversations
from .statements import lower_first, statement

__all__ = [
    "CONTROLS",
    "ReaderMode",
    "RedundancyBuild",
    "build_redundancy_cases",
    "copy_texts",
    "reader_answer",
]

ReaderMode = Literal["simulated", "text"]
CONTROLS = ("clean", "double_gold", "unexplained")
"""The control structures built beside ``heavy``."""
_CATEGORIES = (1, 2, 3, 4)
_STRONG_SHARE = 1 / 3
_PLAIN = (
    "{claim}",
    "As {speaker} put it, {core}, for the record.",
    "{other} confirmed it later: {core}.",
    "Note from a later session: {core}.",
    "{speaker} repeated it: {core}.",
)
_HEDGED = (
    "{speaker} was not certain, but thought that {core}.",
    "{other} had a vague memory that {core}, without details.",
    "Perhaps {core}.",
    "{speaker} mentioned that maybe {core}.",
    "{other} suspected that {core}.",
)


class RedundancyBuild(BaseModel):
    """Verified heavy-redundancy cases and the construction funnel."""

    cases: list[BenchCase]
    """Verified cases (``heavy`` and the controls), question by question."""
    funnel: dict[str, Any] = Field(default_factory=dict)
    """Counts: questions used and skipped, cases built, verified and dropped (and why)."""


def copy_texts(
    question: str, wrong: str, *, speaker: str, other: str, hedged: Sequence[bool]
) -> list[str]:
    """The copies of one wrong claim: a plain or hedged paraphrase each, all distinct.

    Args:
        question: The question.
        wrong: The wrong answer the copies state.
        speaker: The speaker the copies quote.
        other: The other speaker.
        hedged: Per copy, whether it is hedged.

    Returns:
        One text per copy.
    """
    claim = statement(question, wrong)
    core = lower_first(claim[:-1] if claim.endswith(".") else claim)
    fields = {"claim": claim, "core": core, "speaker": speaker, "other": other}
    plain, soft = iter(_PLAIN), iter(_HEDGED)
    out: list[str] = []
    for h in hedged:
        template = next(soft if h else plain, None)
        if template is None:
            template = next(plain if h else soft)
        out.append(template.format(**fields))
    return out


def reader_answer(mode: ReaderMode, case: BenchCase) -> Callable[[Sequence[str]], str]:
    """The reader of ``mode`` on this case: memory ids -> the answer.

    Args:
        mode: ``simulated`` (the case's world) or ``text`` (the offline text reader on the
            rendered answer prompt).
        case: The case.

    Returns:
        The answer function.
    """
    if mode == "simulated":
        return lambda ids: case.world.answer(ids, case_id=case.case_id)
    from meclear_integrations.judges.answer_prompts import DEFAULT_ANSWER_PROMPT, render_memories

    from .text_reader import reply

    by_id = {m.id: m for m in case.context()}

    def answer(ids: Sequence[str]) -> str:
        chosen = [by_id[i] for i in [m.id for m in case.memories] if i in set(ids)]
        prompt = DEFAULT_ANSWER_PROMPT.format(memories=render_memories(chosen), question=case.query)
        return reply(prompt).text

    return answer


def _correct(mode: ReaderMode, answer: str, reference: str) -> bool:
    if mode == "simulated":
        from meclear_integrations.simulation.world import exact_match_score

        return exact_match_score(answer, reference) == 1.0
    from .text_reader import judge_correct

    return judge_correct(answer, reference)


def _agree(answer: str, claim: str) -> bool:
    from meclear_integrations.judges.task import answers_agree

    return answers_agree(answer, claim)


def _rng(seed: int, conversation: str, question: int) -> np.random.Generator:
    key = f"{seed}\x1f{conversation}\x1f{question}\x1fredundancy".encode()
    return np.random.default_rng(zlib.crc32(key))


class _Builder:
    """The cases of one conversation."""

    def __init__(self, conv: LocomoConversation, seed: int) -> None:
        self.conv = conv
        self.cid = conv.conversation_id
        self.seed = seed
        self.retriever = BM25Retriever([f.text for f in conv.facts])
        self.dates = sorted(set(conv.session_dates.values()))
        self.questions = [
            q for q in conv.questions if q.category in _CATEGORIES and q.answer.strip()
        ]
        self.kinds = {
            q.index: (
                wh_class(q.question),
                is_temporal(q.question, q.answer, q.category),
                answer_shape(q.answer),
            )
            for q in self.questions
        }

    def wrong(self, q: LocomoQuestion, rng: np.random.Generator) -> str | None:
        kind = self.kinds[q.index]
        if kind[1] and (found := temporal_distractor(q.answer, self.dates, rng)):
            return found
        pool = [
            o.answer for o in self.questions if o.index != q.index and self.kinds[o.index] == kind
        ]
        return same_kind_distractor(q.answer, pool, rng)

    def speakers(self, q: LocomoQuestion) -> tuple[str, str]:
        a, b = self.conv.speakers
        if (
            b
            and b in q.question
            and (a not in q.question or q.question.find(b) < q.question.find(a))
        ):
            return b, a
        return a, b or a

    def background(self, q: LocomoQuestion, n: int) -> list[int]:
        ranked = self.retriever.top_k(q.question, len(self.conv.facts))
        out = [i for i, _ in ranked if not (self.conv.facts[i].dia_ids & q.evidence)]
        return out[:n]

    def cases(self, q: LocomoQuestion, funnel: Counter[str]) -> list[BenchCase]:
        rng = _rng(self.seed, self.cid, q.index)
        wrong = self.wrong(q, rng)
        if wrong is None:
            funnel["question_no_wrong_answer"] += 1
            return []
        r = int(rng.integers(3, 11))
        k = int(rng.integers(max(10, r + 3), 21))
        strong = rng.random(r) < _STRONG_SHARE
        strong[int(rng.integers(r))] = True
        g = float(rng.uniform(0.8, 1.2))
        weights = [g * float(rng.uniform(1.0, 1.5) if s else rng.uniform(0.2, 0.7)) for s in strong]
        speaker, other = self.speakers(q)
        copies = copy_texts(
            q.question, wrong, speaker=speaker, other=other, hedged=[not s for s in strong]
        )
        gold_text = statement(q.question, q.answer)
        second_gold = f"{speaker} said so too: {lower_first(gold_text)}"
        back = self.background(q, k)
        if len(back) < k - 1:
            funnel["question_short_bank"] += 1
            return []
        base = f"{self.cid}-q{q.index}"
        gold = CaseMemory(id=f"{base}-gold", text=gold_text)
        gold2 = CaseMemory(id=f"{base}-gold2", text=second_gold)
        fakes = [CaseMemory(id=f"{base}-copy{j}", text=t) for j, t in enumerate(copies)]

        def bank(n: int) -> list[CaseMemory]:
            return [
                CaseMemory(
                    id=f"{self.cid}-m{i}",
                    text=self.conv.facts[i].text,
                    metadata={"session": self.conv.facts[i].session},
                )
                for i in back[:n]
            ]

        claims_gold = {gold.id: Claim(answer=q.answer, weight=round(g, 3))}
        claims_copies = {
            m.id: Claim(answer=wrong, weight=round(w, 3))
            for m, w in zip(fakes, weights, strict=True)
        }
        specs: list[tuple[str, list[CaseMemory], dict[str, Claim], list[str]]] = [
            (
                "heavy",
                [gold, *fakes, *bank(k - 1 - r)],
                claims_gold | claims_copies,
                [m.id for m in fakes],
            ),
            ("clean", [gold, *bank(k - 1)], claims_gold, []),
            (
                "double_gold",
                [gold, gold2, *bank(k - 2)],
                claims_gold | {gold2.id: Claim(answer=q.answer, weight=round(g, 3))},
                [],
            ),
            ("unexplained", bank(k), {}, []),
        ]
        out = []
        for structure, memories, claims, targets in specs:
            order = rng.permutation(len(memories))
            out.append(
                BenchCase(
                    case_id=f"{base}-{structure}",
                    cluster=self.cid,
                    query_id=base,
                    query=q.question,
                    reference=q.answer,
                    structure=structure,
                    fault_type="redundant_copies" if targets else None,
                    memories=[memories[int(i)] for i in order],
                    targets=targets,
                    world=EvidenceWorld(claims=claims, ties="prompt"),
                )
            )
        return out


def verify_redundancy_case(case: BenchCase, mode: ReaderMode) -> str | None:
    """Why the case fails its structure's signature under the reader of ``mode`` (None: kept).

    Args:
        case: The case.
        mode: The reader.

    Returns:
        The reason it is dropped, or None.
    """
    read = reader_answer(mode, case)
    ids = [m.id for m in case.memories]
    right = _correct(mode, read(ids), case.reference)
    if case.structure in ("clean", "double_gold"):
        return None if right else "control_answers_wrong"
    if case.structure == "unexplained":
        return "unexplained_answers_right" if right else None
    if right:
        return "full_context_answers_right"
    targets = set(case.targets)
    gold = [i for i in ids if i.endswith("-gold")]
    if not gold or not _correct(mode, read(gold), case.reference):
        return "gold_alone_wrong"
    if not _correct(mode, read([i for i in ids if i not in targets]), case.reference):
        return "no_recovery_without_copies"
    wrong = case.world.claims[case.targets[0]].answer
    for t in case.targets:
        alone = read([t])
        if _correct(mode, alone, case.reference) or not _agree(alone, wrong):
            return "copy_alone_not_the_wrong_answer"
    return None


def build_redundancy_cases(
    path: str | Path,
    *,
    mode: ReaderMode = "simulated",
    seed: int = 0,
    per_conversation: int = 10,
    conversations: int | None = None,
    structures: Sequence[str] = ("heavy", *CONTROLS),
    split: SplitName = "all",
) -> RedundancyBuild:
    """Build and verify heavy-redundancy cases (module docstring).

    Args:
        path: The LoCoMo release (a folder of conversation JSON files or one file).
        mode: The reader that verifies the cases.
        seed: The build's seed.
        per_conversation: Questions tried per conversation (in order).
        conversations: Conversations used (None: all).
        structures: Which of ``heavy`` and the controls to keep.
        split: The LoCoMo conversations (:mod:`.split`: ``dev`` to decide settings,
            ``test`` to report, ``all``); ``conversations`` then takes the first of those.

    Returns:
        The verified cases and the funnel.
    """
    convs = load_locomo(path)
    chosen = split_conversations(split)
    if chosen is not None:
        convs = [c for c in convs if str(c.conversation_id) in chosen]
    if conversations is not None:
        convs = convs[:conversations]
    funnel: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    kept: list[BenchCase] = []
    for conv in convs:
        builder = _Builder(conv, seed)
        for q in builder.questions[:per_conversation]:
            funnel["questions"] += 1
            for case in builder.cases(q, funnel):
                if case.structure not in structures:
                    continue
                funnel[f"built_{case.structure}"] += 1
                reason = verify_redundancy_case(case, mode)
                if reason is None:
                    funnel[f"verified_{case.structure}"] += 1
                    kept.append(case)
                else:
                    dropped[f"{case.structure}:{reason}"] += 1
    return RedundancyBuild(
        cases=kept, funnel={"mode": mode, **dict(funnel), "dropped": dict(dropped)}
    )
