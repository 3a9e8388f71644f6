"""A-MAC's public LoCoMo admission protocol: every dialogue turn a candidate.

A-MAC's MIT-licensed reference code (GuilinDev/Adaptive_Memory_Admission_Control_LLM_Agents,
``data_loader.py``, ``LoCoMoDataLoader.get_memory_candidates``) takes every dialogue turn of
every LoCoMo conversation as a candidate memory and labels it *admit* iff some QA pair of the
conversation (any category, adversarial ones included) lists the turn's ``dia_id`` in its
``evidence``; the history is the turns before it. Its README reports Store precision /
recall / F1 on that protocol (A-MAC 0.417 / 0.972 / 0.583, A-mem 0.371 / 1.0 / 0.541,
MemoryBank 0.368 / 0.583 / 0.452, MemGPT 0.316 / 0.333 / 0.324), the figures the ConMem
paper's LoCoMo table repeats. This module rebuilds the candidates from the data (the code is
not copied): label ``turn_cited`` (Store) or ``turn_uncited`` (Do-Not-Store).

Differences, all documented: the candidate memory is the turn as said (``"Speaker: text"``,
a shared photo's caption appended); the historical context is the dated session turns up to
and including the candidate turn (at most :data:`HISTORY_TURNS`; a memory's source turn is
part of the conversation it was extracted from, and no later turn is shown), not every
earlier turn of the conversation; evidence strings the release writes in one field
(``"D8:6; D9:17"``) are split into their turns; the split is this benchmark's (conversations
26, 30, 41 dev, the other seven test) instead of A-MAC's seeded 70/15/15 conversation split.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .admission_locomo import LABELS, REASONS, BenchCandidate, CandidateKind, _split, load_turns
from .locomo_data import load_locomo

__all__ = ["AMAC_KINDS", "HISTORY_TURNS", "turn_candidates"]

AMAC_KINDS: tuple[CandidateKind, ...] = ("turn_cited", "turn_uncited")
HISTORY_TURNS = 8
"""Session turns shown as the candidate's history, the candidate turn included."""


def turn_candidates(locomo: str | Path) -> list[BenchCandidate]:
    """Every dialogue turn of every LoCoMo conversation, labelled by QA evidence citations.

    Args:
        locomo: The LoCoMo directory or ``locomo10.json``.

    Returns:
        The candidates, conversation by conversation in dialogue order.
    """
    turns = load_turns(locomo)
    out: list[BenchCandidate] = []
    for conversation in load_locomo(locomo):
        cid = conversation.conversation_id
        cited: dict[str, list[int]] = defaultdict(list)
        for q in conversation.questions:
            for d in q.evidence:
                cited[d].append(q.index)
        by_session: dict[int, list[tuple[int, str, str, str]]] = defaultdict(list)
        for dia_id, (session, position, speaker, text) in turns.get(cid, {}).items():
            by_session[session].append((position, dia_id, speaker, text))
        for session in sorted(by_session):
            ordered = sorted(by_session[session])
            day = conversation.session_dates.get(session)
            header = f"[session {session}, {day.isoformat() if day else 'undated'}]"
            for i, (_, dia_id, speaker, text) in enumerate(ordered):
                if not text.strip():
                    continue
                shown = ordered[max(0, i + 1 - HISTORY_TURNS) : i + 1]
                context = "\n".join([header] + [f"{s}: {t}" for _, _, s, t in shown])
                hits = sorted(set(cited.get(dia_id, [])))
                kind: CandidateKind = "turn_cited" if hits else "turn_uncited"
                out.append(
                    BenchCandidate(
                        id=f"{cid}:turn:{dia_id}",
                        split=_split(cid),
                        source=f"locomo:{cid}",
                        kind=kind,
                        candidate_memory=f"{speaker}: {text}",
                        historical_context=context,
                        candidate_date=day.isoformat() if day else "",
                        label=LABELS[kind],
                        reason_type=REASONS[kind],
                        evidence=[f"turn {dia_id}"] + [f"cited by qa[{q}]" for q in hits[:5]],
                    )
                )
    return out
