"""CLARK-News cases: third-party knowledge updates with validity windows (SIMULATED world).

CLARK-News (Li et al., "Language Modeling with Editable External Knowledge", arXiv
2406.11830; the ERASE repository's ``CLARK_news/full/``) lists 3,390 questions whose answers
changed over time, each answer with the window (Wikidata, human-validated) in which it was
true. The data is read from the folder given (``questions.csv``); nothing is copied into
the project.

Taken from the data (labels nobody here wrote): the question, every answer it had, each
answer's start and end time, hence which answer is current at the query date and which are
stale. Per question with at least two distinct answers (yes/no questions skipped) the query
date is 30 days after the latest change, and the current answer is the one whose window
holds that date (a question whose latest answer has already ended is skipped).

Written by this builder (stated so, and the same for every question):

- the memory texts: the package's declarative form of the question with the answer in the
  blank (:func:`~.statements.statement`), e.g. "Nicola Sturgeon is the chairperson of
  Scottish National Party."; a second copy of a stale answer ends ", news reports said.";
  a wrong correction "Correction: ";
- each memory's ``date`` metadata: an answer's start time (a second stale copy: the middle
  of its window; a wrong correction: 15 days after the latest change);
- background memories: the latest statements of other questions (K = 5 in all);
- the simulated reader's weights (sum of the support of each answer, abstention weight 0.5,
  ties broken once per prompt), chosen so that each structure shows its causal signature:

  ``stale`` / ``direct``: the current statement (weight 1) and one stale statement
  (weight 1.5, a more prominent old report); ``stale`` / ``redundant``: the current
  statement and the previous answer stated twice (weight 1.2 each, either alone outweighs
  the current one); ``wrong_correction`` / ``direct``: the current statement and a later
  "Correction:" restating the previous answer (weight 1.5), dated after the latest change,
  so newest-wins follows it; ``clean``: the current statement and a weaker stale one
  (weight 0.6): the reader answers right. On request (``--kinds``), ``stale`` / ``joint``:
  the previous answer stated twice at weight 0.7 each: either copy alone is weaker than
  the current statement, both together outweigh it (the signature a text reader that
  counts statements and breaks ties toward the latest date shows for two stale copies).

The stale or wrongly corrected memories are the harmful targets (the data says their
answer is no longer true at the query date). Every case is then verified causally (the
same protocol as LoCoMo's, :func:`~.verify.verify_case`); the funnel says what was kept.

Split: a question is dev when the first byte of SHA-256 of its text is below 77 (about
30%), else test; settings are tuned on dev only.

Usage (writes the cases; then ``meclear bench --cases FILE``)::

    python -m meclear_bench.clark_news --data DIR --split test --out cases.jsonl
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.simulation import Claim, EvidenceWorld

from .cases import BenchCase, CaseMemory, dump_cases
from .statements import statement
from .verify import Verifier, verify_each

__all__ = [
    "CLARK_KINDS",
    "CLARK_STRUCTURES",
    "ClarkBuild",
    "TimedAnswer",
    "build_clark_cases",
    "clark_split",
    "load_clark_questions",
    "main",
]

CLARK_STRUCTURES: tuple[str, ...] = ("stale-direct", "stale-redundant", "wrong-correction", "clean")
"""The case kinds built per question by default (fault type and structure)."""
CLARK_KINDS: tuple[str, ...] = (*CLARK_STRUCTURES, "stale-joint")
"""Every kind the builder knows (``stale-joint`` on request: ``--kinds``)."""
ClarkSplit = Literal["dev", "test", "all"]
QUERY_DELAY = timedelta(days=30)
"""The question is asked this long after the latest change."""
K = 5
"""Memories per case."""


@dataclass(frozen=True)
class TimedAnswer:
    """One answer of a question and its validity window (from the data)."""

    answer: str
    """The answer."""
    start: datetime
    """When it became true."""
    end: datetime | None
    """When it stopped being true (None: still true at the data's snapshot)."""


class ClarkBuild(BaseModel):
    """Verified CLARK-News cases and the construction funnel."""

    cases: list[BenchCase]
    """Causally verified cases, question by question."""
    funnel: dict[str, Any] = Field(default_factory=dict)
    """Counts: questions read, skipped (and why), cases proposed, verified, dropped."""


def _when(text: str) -> datetime | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


def load_clark_questions(data_dir: str | Path) -> dict[str, list[TimedAnswer]]:
    """Question -> its answers over time (yes/no questions and undated answers skipped).

    Args:
        data_dir: The CLARK-News folder (holding ``questions.csv``) or the file itself.

    Returns:
        The questions, in file order, each with its answers sorted by start time.

    Raises:
        ConfigurationError: The file is missing or lacks the expected columns.
    """
    path = Path(data_dir)
    if path.is_dir():
        path = path / "questions.csv"
    if not path.is_file():
        raise ConfigurationError(f"CLARK-News questions.csv not found at {path}")
    by_question: dict[str, list[TimedAnswer]] = defaultdict(list)
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        needed = {"Question", "Answer", "Start timestamp", "End timestamp"}
        if not needed <= set(reader.fieldnames or ()):
            raise ConfigurationError(f"{path}: expected columns {sorted(needed)}")
        for row in reader:
            answer = (row["Answer"] or "").strip()
            start = _when(row["Start timestamp"])
            if not answer or answer.lower() in ("yes", "no") or start is None:
                continue
            by_question[row["Question"].strip()].append(
                TimedAnswer(answer, start, _when(row["End timestamp"]))
            )
    return {q: sorted(a, key=lambda t: t.start) for q, a in by_question.items()}


def clark_split(question: str) -> Literal["dev", "test"]:
    """The split of a question: dev when SHA-256's first byte is below 77 (about 30%).

    Args:
        question: The question text.

    Returns:
        ``"dev"`` or ``"test"``.
    """
    return "dev" if hashlib.sha256(question.encode()).digest()[0] < 77 else "test"


def _qid(question: str) -> str:
    return "clark-" + hashlib.sha256(question.encode()).hexdigest()[:10]


def _timeline(answers: Sequence[TimedAnswer]) -> tuple[TimedAnswer, TimedAnswer, datetime] | None:
    """(the current answer, the previous one, the query date), or None when unusable.

    The current answer is the one that started last (two answers starting together are
    ambiguous: skipped); the previous one, the latest that started before it with another
    answer.
    """
    if not answers:
        return None
    current = max(answers, key=lambda t: t.start)
    if sum(1 for t in answers if t.start == current.start) > 1:
        return None
    asked = current.start + QUERY_DELAY
    if current.end is not None and current.end <= asked:
        return None
    earlier = [
        t for t in answers if t.start < current.start and t.answer.lower() != current.answer.lower()
    ]
    if not earlier:
        return None
    return current, max(earlier, key=lambda t: t.start), asked


def _memory(mid: str, text: str, when: datetime) -> CaseMemory:
    return CaseMemory(id=mid, text=text, metadata={"date": when.date().isoformat()})


def _midpoint(timed: TimedAnswer, before: datetime) -> datetime:
    end = timed.end if timed.end is not None and timed.end < before else before
    return timed.start + (end - timed.start) / 2


def _case(
    kind: str,
    question: str,
    current: TimedAnswer,
    previous: TimedAnswer,
    background: Sequence[tuple[str, str, datetime]],
    rng: random.Random,
) -> BenchCase:
    qid = _qid(question)
    cur = _memory(f"{qid}-cur", statement(question, current.answer), current.start)
    claims = {cur.id: Claim(answer=current.answer, weight=1.0)}
    faults: list[CaseMemory] = []
    old = statement(question, previous.answer)
    if kind == "stale-direct":
        faults = [_memory(f"{qid}-s1", old, previous.start)]
        claims[faults[0].id] = Claim(answer=previous.answer, weight=1.5)
    elif kind in ("stale-redundant", "stale-joint"):
        faults = [
            _memory(f"{qid}-s1", old, previous.start),
            _memory(
                f"{qid}-s2",
                old.rstrip(".") + ", news reports said.",
                _midpoint(previous, current.start),
            ),
        ]
        weight = 1.2 if kind == "stale-redundant" else 0.7  # each copy alone: wins / does not
        claims.update({f.id: Claim(answer=previous.answer, weight=weight) for f in faults})
    elif kind == "wrong-correction":
        faults = [_memory(f"{qid}-w1", "Correction: " + old, current.start + QUERY_DELAY / 2)]
        claims[faults[0].id] = Claim(answer=previous.answer, weight=1.5)
    stale_clean: list[CaseMemory] = []
    if kind == "clean":
        stale_clean = [_memory(f"{qid}-s1", old, previous.start)]
        claims[stale_clean[0].id] = Claim(answer=previous.answer, weight=0.6)
    others = [
        _memory(f"{qid}-b{i}", text, when)
        for i, (text, _, when) in enumerate(background[: K - 1 - len(faults) - len(stale_clean)])
    ]
    memories = [cur, *faults, *stale_clean, *others]
    rng.shuffle(memories)
    structure = {"stale-direct": "direct", "stale-redundant": "redundant", "stale-joint": "joint"}
    fault_type = "stale" if kind.startswith("stale-") else "wrong_correction"
    return BenchCase(
        case_id=f"{qid}-{kind}",
        cluster=qid,
        query_id=qid,
        query=question,
        reference=current.answer,
        structure="clean" if kind == "clean" else structure.get(kind, "direct"),
        fault_type=None if kind == "clean" else fault_type,
        memories=memories,
        targets=[f.id for f in faults],
        world=EvidenceWorld(claims=claims, abstain_weight=0.5, ties="prompt"),
    )


def build_clark_cases(
    data_dir: str | Path,
    *,
    split: ClarkSplit = "all",
    max_questions: int | None = None,
    kinds: Sequence[str] = CLARK_STRUCTURES,
    seed: int = 0,
    verify: Verifier = verify_each,
) -> ClarkBuild:
    """Build and verify CLARK-News cases (module docstring).

    Args:
        data_dir: The CLARK-News folder (read only; nothing is copied).
        split: ``dev``, ``test`` or ``all`` questions.
        max_questions: At most this many usable questions (in file order).
        kinds: The case kinds (default :data:`CLARK_STRUCTURES`; :data:`CLARK_KINDS`).
        seed: Seed of the background choice and the memory order.
        verify: The causal verifier (default: the simulated world).

    Returns:
        The verified cases and the funnel.

    Raises:
        ConfigurationError: An unknown kind, or the data cannot be read.
    """
    unknown = sorted(set(kinds) - set(CLARK_KINDS))
    if unknown:
        raise ConfigurationError(f"unknown CLARK-News kinds {unknown}; known: {CLARK_KINDS}")
    questions = load_clark_questions(data_dir)
    funnel: Counter[str] = Counter(questions_read=len(questions))
    usable: list[tuple[str, TimedAnswer, TimedAnswer, datetime]] = []
    for question, answers in questions.items():
        timeline = _timeline(answers)
        if timeline is None:
            funnel["skipped_no_change_or_ended"] += 1
            continue
        if split != "all" and clark_split(question) != split:
            continue
        usable.append((question, *timeline))
    if max_questions is not None:
        usable = usable[:max_questions]
    funnel["questions_used"] = len(usable)
    pool = []  # every question's latest statement: background for the others
    for q, answers in questions.items():
        latest = max(answers, key=lambda t: t.start)
        pool.append((statement(q, latest.answer), q, latest.start))
    proposals: list[BenchCase] = []
    for question, current, previous, _asked in usable:
        rng = random.Random(f"{seed}\x1f{question}")
        others = [p for p in pool if p[1] != question]
        background = rng.sample(others, min(len(others), K - 1))
        for kind in kinds:
            proposals.append(_case(kind, question, current, previous, background, rng))
    verdicts = verify(proposals) if proposals else []
    cases: list[BenchCase] = []
    verified: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for case, verdict in zip(proposals, verdicts, strict=True):
        kind = next(k for k in kinds if case.case_id.endswith(k))
        if verdict.ok:
            cases.append(case)
            verified[kind] += 1
        else:
            dropped[f"{kind}:{verdict.reason}"] += 1
    summary: dict[str, Any] = dict(funnel)
    summary.update(
        proposed=len(proposals),
        verified=dict(sorted(verified.items())),
        dropped=dict(sorted(dropped.items())),
        split=split,
    )
    return ClarkBuild(cases=cases, funnel=summary)


def main(argv: Sequence[str] | None = None) -> int:
    """Build CLARK-News cases into a JSONL case file (``python -m ...clark_news``).

    Args:
        argv: The command line (None: ``sys.argv``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the CLARK-News folder")
    parser.add_argument("--split", choices=["dev", "test", "all"], default="all")
    parser.add_argument("--max-questions", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--kinds",
        default=",".join(CLARK_STRUCTURES),
        help=f"comma-separated case kinds (default: the first four of {', '.join(CLARK_KINDS)})",
    )
    parser.add_argument("--out", type=Path, required=True, help="the JSONL case file written")
    args = parser.parse_args(argv)
    build = build_clark_cases(
        args.data,
        split=args.split,
        max_questions=args.max_questions,
        seed=args.seed,
        kinds=tuple(k.strip() for k in args.kinds.split(",") if k.strip()),
    )
    dump_cases(build.cases, args.out)
    print(f"wrote {len(build.cases)} cases to {args.out}; funnel: {build.funnel}")
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
