"""Judge calibration: does a judge agree with the exact reference on labelled answers?

Before trusting clearance decided by a model's verdicts, a user can ask how often that
model, as a reference-based judge, agrees with the rule every QA benchmark scores short
answers by: normalised containment of the gold answer
(:class:`~meclear_integrations.judges.ExactMatchJudge` ``mode="contains"``).

The labelled set is built from data nobody here labelled (:func:`locomo_triples`,
:func:`clark_triples`): (question, answer, reference) triples whose label is the exact
judge's verdict, half right and half wrong:

- ``gold``: the gold answer itself (right);
- ``gold_sentence``: the gold answer inside a short sentence (right: what agents reply);
- ``same_kind``: the gold answer of another question of the same conversation and LoCoMo
  category (wrong, and plausible: another date for a date question);
- ``other``: the gold answer of a question of another conversation (wrong);
- ``stale`` (CLARK-News): the answer that was true before the current one (wrong: a stale
  value, the harm this package clears); ``current``: the current answer (right).

A wrong answer that the exact judge would accept (it contains the gold) is dropped, so the
labels are exact. :func:`calibrate` asks the judge about every triple and counts its
agreement, its false accepts (wrong answers it accepted), its false rejects (right answers it
rejected) and the triples it gave no verdict on (an unreadable reply or a failed call:
counted apart, never as a verdict).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from meclear_integrations.judges import ExactMatchJudge
from meclear_integrations.judges.equivalence import normalize_answer

__all__ = [
    "CalibrationReport",
    "Triple",
    "calibrate",
    "clark_triples",
    "format_report",
    "locomo_triples",
    "wilson",
]

_EXACT = ExactMatchJudge(mode="contains")


@dataclass(frozen=True)
class Triple:
    """One labelled judging task."""

    question: str
    """The question."""
    answer: str
    """The answer to judge."""
    reference: str
    """The gold answer."""
    kind: str
    """How the answer was made (module docstring)."""
    source: str
    """Where the question comes from (``locomo-<id>`` or ``clark``)."""

    @property
    def label(self) -> bool:
        """The exact judge's verdict: normalised containment of the reference."""
        return _EXACT.score(self.question, self.answer, reference=self.reference).score >= 1.0


def _distinct(answer: str, reference: str) -> bool:
    a, r = normalize_answer(answer), normalize_answer(reference)
    return bool(a) and bool(r) and r not in a and a not in r


def locomo_triples(
    path: str | Path,
    *,
    conversations: Sequence[str] | None = None,
    questions: int = 20,
    seed: int = 0,
) -> list[Triple]:
    """Labelled triples from LoCoMo's QA annotations (categories 1-4).

    Args:
        path: The LoCoMo file or directory.
        conversations: The conversation ids used (None: all).
        questions: Questions drawn (each gives two right and two wrong triples).
        seed: The draw's seed.

    Returns:
        The triples, right and wrong interleaved per question.
    """
    from .locomo_data import load_locomo

    rng = random.Random(seed)
    convs = [
        c for c in load_locomo(path) if conversations is None or c.conversation_id in conversations
    ]
    pool = [
        (conv, q)
        for conv in convs
        for q in conv.questions
        if q.category in (1, 2, 3, 4) and normalize_answer(q.answer)
    ]
    rng.shuffle(pool)
    out: list[Triple] = []
    for conv, q in pool[:questions]:
        source = f"locomo-{conv.conversation_id}"
        out.append(Triple(q.question, q.answer, q.answer, "gold", source))
        sentence = f"I think it is {q.answer}."
        out.append(Triple(q.question, sentence, q.answer, "gold_sentence", source))
        same = [
            o.answer
            for o in conv.questions
            if o.category == q.category and o.index != q.index and _distinct(o.answer, q.answer)
        ]
        if same:
            out.append(Triple(q.question, rng.choice(same), q.answer, "same_kind", source))
        others = [
            o.answer
            for c in convs
            if c.conversation_id != conv.conversation_id
            for o in c.questions
            if o.category in (1, 2, 3, 4) and _distinct(o.answer, q.answer)
        ]
        if others:
            out.append(Triple(q.question, rng.choice(others), q.answer, "other", source))
    return out


def clark_triples(
    path: str | Path, *, questions: int = 10, split: str = "test", seed: int = 0
) -> list[Triple]:
    """Labelled triples from CLARK-News: the current answer (right), the stale one (wrong).

    Args:
        path: The CLARK-News folder (``questions.csv``).
        questions: Questions drawn.
        split: ``dev``, ``test`` or ``all`` (:func:`~.clark_news.clark_split`).
        seed: The draw's seed.

    Returns:
        The triples.
    """
    from .clark_news import _timeline, clark_split, load_clark_questions

    rng = random.Random(seed)
    items = [
        (q, answers)
        for q, answers in load_clark_questions(path).items()
        if split == "all" or clark_split(q) == split
    ]
    rng.shuffle(items)
    out: list[Triple] = []
    for question, answers in items:
        if len(out) >= 2 * questions:
            break
        timeline = _timeline(answers)
        if timeline is None:
            continue
        current, stale, _ = timeline
        if not _distinct(stale.answer, current.answer):
            continue
        out.append(Triple(question, current.answer, current.answer, "current", "clark"))
        out.append(Triple(question, stale.answer, current.answer, "stale", "clark"))
    return out


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default).

    Args:
        successes: The successes.
        n: The trials.
        z: The normal quantile.

    Returns:
        (low, high); (0, 1) when ``n`` is 0.
    """
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class CalibrationReport:
    """A judge's agreement with the exact reference on labelled triples."""

    judge: str
    """The judge's label."""
    n: int
    """Triples asked about."""
    verdicts: int
    """Triples the judge gave a verdict on."""
    agree: int
    """Verdicts equal to the label."""
    false_accepts: int
    """Wrong answers accepted."""
    wrong: int
    """Wrong answers with a verdict."""
    false_rejects: int
    """Right answers rejected."""
    right: int
    """Right answers with a verdict."""
    no_verdict: int
    """Triples without a verdict (unreadable reply, failed call)."""
    no_verdict_reasons: dict[str, int]
    """Why, by error type."""
    by_kind: dict[str, dict[str, int]]
    """Per kind of answer: verdicts, agreements, no verdicts."""
    rows: list[dict[str, Any]]
    """Every triple with the judge's verdict (None: no verdict) and the error if any."""

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data, with rates and 95% Wilson intervals."""

        def rate(k: int, n: int) -> dict[str, Any]:
            low, high = wilson(k, n)
            return {"k": k, "n": n, "rate": k / n if n else None, "ci95": [low, high]}

        return {
            "judge": self.judge,
            "reference": "exact match (normalised containment of the gold answer)",
            "n": self.n,
            "verdicts": self.verdicts,
            "agreement": rate(self.agree, self.verdicts),
            "false_accept": rate(self.false_accepts, self.wrong),
            "false_reject": rate(self.false_rejects, self.right),
            "no_verdict": self.no_verdict,
            "no_verdict_reasons": self.no_verdict_reasons,
            "by_kind": self.by_kind,
            "rows": self.rows,
        }


def calibrate(
    triples: Sequence[Triple],
    judge: Callable[[Triple], float],
    *,
    label: str,
    workers: int = 1,
) -> CalibrationReport:
    """Ask ``judge`` about every triple and count its agreement with the labels.

    A triple whose call raises (an unreadable verdict, a failed call) counts as no verdict,
    with the error's type; the other triples go on.

    Args:
        triples: The labelled triples.
        judge: ``judge(triple) -> score`` in [0, 1] (accepted when >= 0.5).
        label: The judge's name in the report.
        workers: Triples judged at a time.

    Returns:
        The report.
    """

    def one(t: Triple) -> tuple[bool | None, str | None]:
        try:
            return judge(t) >= 0.5, None
        except Exception as exc:  # counted as no verdict, with its type
            return None, f"{type(exc).__name__}: {str(exc)[:200]}"

    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge-check") as pool:
            results = list(pool.map(one, triples))
    else:
        results = [one(t) for t in triples]
    rows: list[dict[str, Any]] = []
    reasons: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = {}
    agree = fa = fr = wrong = right = 0
    for t, (verdict, error) in zip(triples, results, strict=True):
        truth = t.label
        kind = by_kind.setdefault(t.kind, Counter())
        kind["n"] += 1
        rows.append(
            {
                "question": t.question,
                "answer": t.answer,
                "reference": t.reference,
                "kind": t.kind,
                "source": t.source,
                "label": truth,
                "verdict": verdict,
                "error": error,
            }
        )
        if verdict is None:
            reasons[(error or "?").split(":")[0]] += 1
            kind["no_verdict"] += 1
            continue
        kind["agree"] += int(verdict == truth)
        agree += int(verdict == truth)
        if truth:
            right += 1
            fr += int(not verdict)
        else:
            wrong += 1
            fa += int(verdict)
    verdicts = right + wrong
    return CalibrationReport(
        judge=label,
        n=len(triples),
        verdicts=verdicts,
        agree=agree,
        false_accepts=fa,
        wrong=wrong,
        false_rejects=fr,
        right=right,
        no_verdict=len(triples) - verdicts,
        no_verdict_reasons=dict(reasons),
        by_kind={k: dict(v) for k, v in sorted(by_kind.items())},
        rows=rows,
    )


def format_report(report: dict[str, Any]) -> str:
    """The calibration as a Markdown table (from :meth:`CalibrationReport.as_dict`).

    Args:
        report: The report's data.

    Returns:
        The table and the no-verdict line.
    """

    def cell(block: dict[str, Any]) -> str:
        if block["rate"] is None:
            return "n/a (0)"
        low, high = block["ci95"]
        return f"{block['rate']:.1%} ({block['k']}/{block['n']}; 95% CI {low:.0%}-{high:.0%})"

    lines = [
        f"Judge: {report['judge']}; reference: {report['reference']}",
        "",
        "| triples | verdicts | agreement | false accept | false reject | no verdict |",
        "|---|---|---|---|---|---|",
        f"| {report['n']} | {report['verdicts']} | {cell(report['agreement'])} | "
        f"{cell(report['false_accept'])} | {cell(report['false_reject'])} | "
        f"{report['no_verdict']} |",
        "",
        "| kind | n | agree | no verdict |",
        "|---|---|---|---|",
    ]
    for kind, c in report["by_kind"].items():
        n, agree, none = c.get("n", 0), c.get("agree", 0), c.get("no_verdict", 0)
        lines.append(f"| {kind} | {n} | {agree} | {none} |")
    if report["no_verdict_reasons"]:
        why = ", ".join(f"{k} x{v}" for k, v in sorted(report["no_verdict_reasons"].items()))
        lines += ["", f"no verdict: {why}"]
    return "\n".join(lines)
