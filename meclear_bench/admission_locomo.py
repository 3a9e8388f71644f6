"""The LoCoMo admission benchmark: candidates, labels from the data, misaligned additions.

Every candidate is a memory record with the historical context it was extracted from (the
turns of its session around its source turn, with the session date) and a label:

- ``useful`` (Store, from the data): a LoCoMo observation record (``session_N_observation``:
  a fact and the turn it came from) whose source turn is cited as evidence by at least one
  QA annotation of categories 1-4. Nobody here wrote these labels: they are LoCoMo's
  ``evidence`` fields.
- ``unused`` (Do-Not-Store, from the data): an observation record no such question cites.
- ``false_claim`` (Do-Not-Store, written by the builder): the fault builder's
  ``precise_factual`` / ``precise_temporal`` record for a question, stating another
  same-kind answer of the conversation (or another session date) instead of the gold one,
  shown with the turns of the question's evidence (which state the gold answer).
- ``wrong_correction`` (Do-Not-Store, written by the builder): the fault builder's
  ``explicit_conflict`` record ("Correction: ..., not <gold answer>."), same context.
- ``clark_stale`` / ``clark_current`` (Do-Not-Store / Store, from CLARK-News): a world fact
  whose validity window (Wikidata, human-validated) had already ended at the candidate's
  date, or had begun and not ended; the context is two dated user turns reporting the older
  and the newer answer (the builder writes the wording, the data the answers and dates).

The split is by conversation (CLARK-News facts by a hash of their question), so no
conversation's turns are seen in both dev and test.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.admission.labels import Decision
from meclear_integrations.core.errors import ConfigurationError

from .faults import (
    fault_texts,
    is_temporal,
    same_kind_distractor,
    temporal_distractor,
    wh_class,
)
from .locomo_data import LocomoConversation, LocomoDataError, load_locomo

__all__ = [
    "DEV_CONVERSATIONS",
    "KINDS",
    "MISALIGNED_KINDS",
    "BenchCandidate",
    "CandidateKind",
    "build_locomo_admission",
    "clark_candidates",
    "load_turns",
]

CandidateKind = Literal[
    "useful",
    "unused",
    "false_claim",
    "wrong_correction",
    "clark_stale",
    "clark_current",
    "turn_cited",
    "turn_uncited",
]
KINDS: tuple[CandidateKind, ...] = (
    "useful",
    "unused",
    "false_claim",
    "wrong_correction",
    "clark_stale",
    "clark_current",
)
MISALIGNED_KINDS: frozenset[str] = frozenset({"false_claim", "wrong_correction", "clark_stale"})
"""Candidates a store should refuse because they are wrong or out of date."""
LABELS: dict[str, Decision] = {
    "useful": "store",
    "unused": "do_not_store",
    "false_claim": "do_not_store",
    "wrong_correction": "do_not_store",
    "clark_stale": "do_not_store",
    "clark_current": "store",
    "turn_cited": "store",
    "turn_uncited": "do_not_store",
}
REASONS: dict[str, str] = {
    "useful": "directly_relevant",
    "unused": "not_needed_later",
    "false_claim": "false_memory_use",
    "wrong_correction": "false_memory_use",
    "clark_stale": "stale_memory_use",
    "clark_current": "directly_relevant",
    "turn_cited": "directly_relevant",
    "turn_uncited": "not_needed_later",
}
DEV_CONVERSATIONS: frozenset[str] = frozenset({"26", "30", "41"})
"""Conversations of the dev split (the other seven are the test split)."""
WINDOW_BEFORE = 6
"""Turns shown before a candidate's source turn (same session)."""
WINDOW_AFTER = 2
"""Turns shown after it."""


class BenchCandidate(BaseModel):
    """One labelled candidate memory of the LoCoMo admission benchmark."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """Stable id (``<conversation>:<kind>:<n>``)."""
    split: Literal["dev", "test"]
    """dev or test (by conversation)."""
    source: str
    """``locomo:<conversation>`` or ``clark_news``."""
    kind: CandidateKind
    """How the candidate and its label were obtained (module docstring)."""
    candidate_memory: str = Field(min_length=1)
    """The candidate memory M."""
    historical_context: str
    """The context C it was extracted from (dated turns)."""
    candidate_date: str
    """The date the candidate was extracted (ISO)."""
    label: Decision
    """Gold decision (from the kind)."""
    reason_type: str
    """``directly_relevant``, ``not_needed_later`` or the paper's rejection reason."""
    evidence: list[str] = Field(default_factory=list)
    """Where the label comes from (cited turns, question index, CLARK validity window)."""


def _split(conversation: str) -> Literal["dev", "test"]:
    return "dev" if conversation in DEV_CONVERSATIONS else "test"


def load_turns(path: str | Path) -> dict[str, dict[str, tuple[int, int, str, str]]]:
    """The dialogue turns of every conversation: ``dia_id -> (session, position, speaker, text)``.

    Args:
        path: The LoCoMo directory (one JSON file per conversation) or ``locomo10.json``.

    Returns:
        Conversation id -> its turns.

    Raises:
        LocomoDataError: The path holds no readable LoCoMo file.
    """
    path = Path(path)
    files = [path] if path.is_file() else sorted(path.glob("*.json"))
    if path.is_dir() and (path / "locomo10.json").is_file():
        files = [path / "locomo10.json"]
    out: dict[str, dict[str, tuple[int, int, str, str]]] = {}
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        samples = data if isinstance(data, list) else [data]
        for i, sample in enumerate(samples):
            flat = dict(sample)
            if isinstance(sample.get("conversation"), dict):
                flat.update(sample["conversation"])
            cid = str(sample.get("sample_id", file.stem if len(samples) == 1 else i))
            cid = cid.removeprefix("conv-")
            turns: dict[str, tuple[int, int, str, str]] = {}
            for key, value in flat.items():
                if not key.startswith("session_") or not isinstance(value, list):
                    continue
                try:
                    session = int(key.split("_")[1])
                except ValueError:
                    continue
                for position, turn in enumerate(value):
                    if isinstance(turn, dict) and "dia_id" in turn:
                        text = " ".join(str(turn.get("text", "")).split())
                        caption = turn.get("blip_caption")
                        if caption:
                            text = f"{text} [shares a photo: {caption}]".strip()
                        turns[str(turn["dia_id"])] = (
                            session,
                            position,
                            str(turn.get("speaker", "")),
                            text,
                        )
            out[cid] = turns
    if not out:
        raise LocomoDataError(f"no LoCoMo turns under {path}")
    return out


def _window(
    turns: dict[str, tuple[int, int, str, str]],
    dia_ids: Iterable[str],
    session_dates: dict[int, date],
) -> str:
    anchors = [turns[d] for d in sorted(dia_ids) if d in turns]
    if not anchors:
        return ""
    session = anchors[0][0]
    in_session = sorted((t for t in turns.values() if t[0] == session), key=lambda t: t[1])
    positions = [a[1] for a in anchors if a[0] == session]
    lo = max(0, min(positions) - WINDOW_BEFORE)
    hi = max(positions) + WINDOW_AFTER + 1
    day = session_dates.get(session)
    header = f"[session {session}, {day.isoformat() if day else 'undated'}]"
    lines = [header] + [f"{t[2]}: {t[3]}" for t in in_session if lo <= t[1] < hi]
    return "\n".join(lines)


def _locomo_candidates(
    conversation: LocomoConversation,
    turns: dict[str, tuple[int, int, str, str]],
    *,
    faults_per_conversation: int,
    seed: int,
) -> list[BenchCandidate]:
    cid = conversation.conversation_id
    split = _split(cid)
    questions = [q for q in conversation.questions if 1 <= q.category <= 4]
    cited: dict[str, list[int]] = defaultdict(list)
    for q in questions:
        for d in q.evidence:
            cited[d].append(q.index)
    out: list[BenchCandidate] = []
    for fact in conversation.facts:
        context = _window(turns, fact.dia_ids, conversation.session_dates)
        if not context:
            continue
        hits = sorted({i for d in fact.dia_ids for i in cited.get(d, [])})
        kind: CandidateKind = "useful" if hits else "unused"
        out.append(
            BenchCandidate(
                id=f"{cid}:obs:{fact.index}",
                split=split,
                source=f"locomo:{cid}",
                kind=kind,
                candidate_memory=fact.text,
                historical_context=context,
                candidate_date=fact.date.isoformat() if fact.date else "",
                label=LABELS[kind],
                reason_type=REASONS[kind],
                evidence=[f"turns {sorted(fact.dia_ids)}"]
                + [f"cited by qa[{i}]" for i in hits[:5]],
            )
        )
    out += _fault_candidates(conversation, turns, faults_per_conversation, seed)
    return out


def _fault_candidates(
    conversation: LocomoConversation,
    turns: dict[str, tuple[int, int, str, str]],
    per_kind: int,
    seed: int,
) -> list[BenchCandidate]:
    cid = conversation.conversation_id
    rng = np.random.default_rng([seed, int(hashlib.sha256(cid.encode()).hexdigest()[:8], 16)])
    questions = [
        q for q in conversation.questions if 1 <= q.category <= 4 and q.evidence and q.answer
    ]
    pools: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        pools[wh_class(q.question)].append(q.answer)
    dates = list(conversation.session_dates.values())
    order = [questions[i] for i in rng.permutation(len(questions))]
    made: dict[str, int] = {"false_claim": 0, "wrong_correction": 0}
    out: list[BenchCandidate] = []
    for q in order:
        kind: CandidateKind = (
            "false_claim" if made["false_claim"] <= made["wrong_correction"] else "wrong_correction"
        )
        if made[kind] >= per_kind:
            kind = "wrong_correction" if kind == "false_claim" else "false_claim"
            if made[kind] >= per_kind:
                break
        temporal = is_temporal(q.question, q.answer, q.category)
        wrong = (
            temporal_distractor(q.answer, dates, rng)
            if temporal
            else same_kind_distractor(q.answer, pools[wh_class(q.question)], rng)
        )
        anchor = [d for d in sorted(q.evidence) if d in turns]
        if wrong is None or not anchor:
            continue
        speakers = conversation.speakers
        speaker = turns[anchor[0]][2] or speakers[0]
        other = speakers[1] if speaker == speakers[0] else speakers[0]
        fault = "explicit_conflict" if kind == "wrong_correction" else "precise_factual"
        if kind == "false_claim" and temporal:
            fault = "precise_temporal"
        try:
            (text,) = fault_texts(
                fault,
                "direct",
                question=q.question,
                wrong=wrong,
                reference=q.answer,
                speaker=speaker,
                other=other,
            )
        except (ConfigurationError, ValueError):
            continue
        context = _window(turns, anchor[:1], conversation.session_dates)
        session = turns[anchor[0]][0]
        day = conversation.session_dates.get(session)
        out.append(
            BenchCandidate(
                id=f"{cid}:{kind}:{q.index}",
                split=_split(cid),
                source=f"locomo:{cid}",
                kind=kind,
                candidate_memory=text,
                historical_context=context,
                candidate_date=day.isoformat() if day else "",
                label=LABELS[kind],
                reason_type=REASONS[kind],
                evidence=[f"qa[{q.index}] gold {q.answer!r}, fault {fault} states {wrong!r}"],
            )
        )
        made[kind] += 1
    return out


def _day(raw: str) -> date | None:
    raw = raw.strip()
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).date()
    except ValueError:
        return None


def clark_candidates(path: str | Path, *, pairs: int, seed: int) -> list[BenchCandidate]:
    """CLARK-News candidates: an answer out of date at the candidate's date, and the current one.

    For a question with two answers where the older one's validity window ended before the
    newer one's began, the candidate date is 30 days into the newer window (clipped to it).
    The context is two dated user turns reporting the older and then the newer answer.

    Args:
        path: The CLARK-News folder (``questions.csv``) or the CSV file itself.
        pairs: How many (stale, current) pairs to draw.
        seed: The sampling seed.

    Returns:
        ``2 * pairs`` candidates at most (stale and current, interleaved).

    Raises:
        ConfigurationError: The file is missing.
    """
    from .statements import lower_first, statement

    file = Path(path)
    file = file / "questions.csv" if file.is_dir() else file
    if not file.is_file():
        raise ConfigurationError(f"CLARK-News questions.csv not found at {file}")
    groups: dict[str, list[tuple[str, date, date | None]]] = defaultdict(list)
    with open(file, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            question, answer = row["Question"].strip(), row["Answer"].strip()
            if not question.lower().startswith(("what", "which", "who", "where")):
                continue
            start = _day(row["Start timestamp"])
            if start is None or not answer:
                continue
            groups[question].append((answer, start, _day(row["End timestamp"])))
    found: list[tuple[str, tuple[str, date, date | None], tuple[str, date, date | None], date]] = []
    for question, rows in sorted(groups.items()):
        rows.sort(key=lambda r: r[1])
        for old, new in itertools.pairwise(rows):
            if old[2] is None or old[0] == new[0] or old[2] > new[1]:
                continue
            when = new[1] + timedelta(days=30)
            if new[2] is not None and when >= new[2]:
                when = new[1] + (new[2] - new[1]) / 2
            if new[2] is not None and when >= new[2]:
                continue
            found.append((question, old, new, when))
            break
    rng = np.random.default_rng(seed)
    chosen = [found[i] for i in sorted(rng.permutation(len(found))[:pairs])]
    out: list[BenchCandidate] = []
    for n, (question, old, new, when) in enumerate(chosen):
        half = (old[2] - old[1]) / 2 if old[2] else timedelta(0)
        old_said = old[1] + min(timedelta(days=30), half)
        old_text, new_text = statement(question, old[0]), statement(question, new[0])
        context = "\n".join(
            [
                f"[{old_said.isoformat()}] user: I read in the news that {lower_first(old_text)}",
                "assistant: Thanks, noted.",
                f"[{when.isoformat()}] user: I read in the news that {lower_first(new_text)}",
                "assistant: Thanks, noted.",
            ]
        )
        bucket = int(hashlib.sha256(question.encode()).hexdigest()[:8], 16) % 10
        split: Literal["dev", "test"] = "dev" if bucket < 3 else "test"
        window = (
            f"{old[0]!r} valid {old[1]}..{old[2]}; {new[0]!r} valid {new[1]}..{new[2] or 'open'}"
        )
        for kind, text in (("clark_stale", old_text), ("clark_current", new_text)):
            out.append(
                BenchCandidate(
                    id=f"clark:{kind}:{n}",
                    split=split,
                    source="clark_news",
                    kind=kind,  # type: ignore[arg-type]
                    candidate_memory=text,
                    historical_context=context,
                    candidate_date=when.isoformat(),
                    label=LABELS[kind],
                    reason_type=REASONS[kind],
                    evidence=[f"{question}: {window}; candidate date {when}"],
                )
            )
    return out


def build_locomo_admission(
    locomo: str | Path,
    *,
    clark: str | Path | None = None,
    faults_per_conversation: int = 10,
    clark_pairs: int = 100,
    seed: int = 0,
) -> list[BenchCandidate]:
    """Every candidate of the LoCoMo admission benchmark (module docstring), in a stable order.

    Args:
        locomo: The LoCoMo directory or ``locomo10.json``.
        clark: The CLARK-News folder; None leaves the CLARK-News candidates out.
        faults_per_conversation: Fault-builder candidates of each kind per conversation.
        clark_pairs: CLARK-News (stale, current) pairs.
        seed: The sampling seed of the builder's additions.

    Returns:
        The candidates.
    """
    conversations = load_locomo(locomo)
    turns = load_turns(locomo)
    out: list[BenchCandidate] = []
    for conversation in conversations:
        out += _locomo_candidates(
            conversation,
            turns.get(conversation.conversation_id, {}),
            faults_per_conversation=faults_per_conversation,
            seed=seed,
        )
    if clark is not None:
        out += clark_candidates(clark, pairs=clark_pairs, seed=seed)
    return out


def select(
    candidates: Sequence[BenchCandidate], split: str, limit: int | None = None
) -> list[BenchCandidate]:
    """The candidates of ``split`` (``dev``, ``test`` or ``all``), about ``limit`` per source.

    With a limit, each source (conversation, CLARK-News) keeps about ``limit`` candidates,
    spread evenly over its list and shared among its kinds in proportion, with at least one
    of each kind it has (so a small run still sees every kind).

    Args:
        candidates: The benchmark's candidates.
        split: ``dev``, ``test`` or ``all``.
        limit: About this many per source (None: all).

    Returns:
        The selection, in the original order.
    """
    chosen = [c for c in candidates if split == "all" or c.split == split]
    if limit is None:
        return chosen
    groups: dict[tuple[str, str], list[BenchCandidate]] = defaultdict(list)
    per_source: dict[str, int] = defaultdict(int)
    for c in chosen:
        groups[(c.source, c.kind)].append(c)
        per_source[c.source] += 1
    keep: set[str] = set()
    for (source, _), group in groups.items():
        want = max(1, round(limit * len(group) / per_source[source]))
        step = len(group) / min(want, len(group))
        keep.update(group[int(i * step)].id for i in range(min(want, len(group))))
    return [c for c in chosen if c.id in keep]
