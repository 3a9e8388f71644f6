"""Reading LoCoMo (Maharana et al., ACL 2024) into memory banks and questions.

Two layouts are accepted:

- the public release file ``locomo10.json`` from the repository ``snap-research/locomo``
  (``data/locomo10.json``, also inside ``data/locomo10.zip``): a JSON list of samples
  ``{"sample_id", "conversation": {...}, "observation": {...}, "qa": [...], ...}``;
- a directory of one JSON object per conversation whose keys are flattened
  (``speaker_a``, ``session_N``, ``session_N_date_time``, ``session_N_observation``, ``qa``),
  or a directory holding ``locomo10.json``.

The memory bank of a conversation is its ``session_N_observation`` facts: one record per
``[fact, dia_id]`` pair, carrying the session number and date and the source turn id(s).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from meclear_integrations.core.errors import ConfigurationError

__all__ = [
    "LOCOMO_SOURCE",
    "LocomoConversation",
    "LocomoDataError",
    "LocomoQuestion",
    "MemoryFact",
    "load_locomo",
]

LOCOMO_SOURCE = (
    "LoCoMo is public: get data/locomo10.json (or data/locomo10.zip) from the GitHub "
    "repository snap-research/locomo and pass the file, or a directory holding it or one "
    "JSON file per conversation"
)

_SESSION_DATE = re.compile(r"(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})")
_DIA = re.compile(r"D(\d+):(\d+)")


class LocomoDataError(ConfigurationError):
    """The LoCoMo path is missing or does not hold LoCoMo conversations (a ``ValueError``)."""


@dataclass(frozen=True)
class MemoryFact:
    """One observation record of the memory bank."""

    index: int
    """Position in the conversation's bank."""
    text: str
    """The observation's text."""
    session: int
    """The session it was observed in."""
    date: date | None
    """The session's date, when the release gives one."""
    speaker: str
    """The speaker it is about."""
    dia_ids: frozenset[str]
    """The dialogue turns it comes from (``D1:3``...)."""


@dataclass(frozen=True)
class LocomoQuestion:
    """One QA annotation (categories 1-4 are used)."""

    index: int
    """Position in the conversation's ``qa`` list."""
    question: str
    """The question."""
    answer: str
    """The gold answer."""
    category: int
    """The LoCoMo question category."""
    evidence: frozenset[str]
    """The dialogue turns that hold the answer."""


@dataclass(frozen=True)
class LocomoConversation:
    """One conversation: speakers, session dates, memory bank, questions."""

    conversation_id: str
    """The conversation's id (``conv-26``...)."""
    speakers: tuple[str, str]
    """The two speakers."""
    session_dates: dict[int, date]
    """Session number -> date."""
    facts: tuple[MemoryFact, ...]
    """The memory bank, in order."""
    questions: tuple[LocomoQuestion, ...]
    """The QA annotations, in order."""


def _dia_ids(raw: Any) -> frozenset[str]:
    text = " ".join(raw) if isinstance(raw, list) else str(raw)
    text = text.replace("D:", "D")  # "D:11:26" in the release
    return frozenset(f"D{a}:{b}" for a, b in _DIA.findall(text))


def _parse_date(raw: Any) -> date | None:
    match = _SESSION_DATE.search(str(raw))
    if not match:
        return None
    try:
        return datetime.strptime(" ".join(match.groups()), "%d %B %Y").date()
    except ValueError:
        return None


def _flatten(sample: dict[str, Any]) -> dict[str, Any]:
    flat = dict(sample)
    for key in ("conversation", "observation", "session_summary", "event_summary"):
        nested = sample.get(key)
        if isinstance(nested, dict):
            flat.update(nested)
    return flat


def _conversation(raw: dict[str, Any], conversation_id: str) -> LocomoConversation:
    flat = _flatten(raw)
    if "qa" not in flat or "speaker_a" not in flat:
        raise LocomoDataError(
            f"{conversation_id}: not a LoCoMo conversation (no qa/speaker_a). {LOCOMO_SOURCE}."
        )
    dates: dict[int, date] = {}
    for key, value in flat.items():
        m = re.fullmatch(r"session_(\d+)_date_time", key)
        held = m is not None and f"session_{m.group(1)}" in flat  # dates of held sessions only
        if m and held and (parsed := _parse_date(value)) is not None:
            dates[int(m.group(1))] = parsed
    facts: list[MemoryFact] = []
    sessions = sorted(
        int(m.group(1)) for k in flat if (m := re.fullmatch(r"session_(\d+)_observation", k))
    )
    for session in sessions:
        for speaker, records in (flat[f"session_{session}_observation"] or {}).items():
            for record in records or []:
                if not isinstance(record, list | tuple) or not record:
                    continue
                text = str(record[0]).strip()
                if text:
                    facts.append(
                        MemoryFact(
                            index=len(facts),
                            text=text,
                            session=session,
                            date=dates.get(session),
                            speaker=str(speaker),
                            dia_ids=_dia_ids(record[1] if len(record) > 1 else ""),
                        )
                    )
    questions = tuple(
        LocomoQuestion(
            index=i,
            question=str(q.get("question", "")).strip(),
            answer=str(q.get("answer", "")).strip(),
            category=int(q.get("category", 0)),
            evidence=_dia_ids(q.get("evidence", [])),
        )
        for i, q in enumerate(flat["qa"])
    )
    return LocomoConversation(
        conversation_id=conversation_id,
        speakers=(str(flat["speaker_a"]), str(flat.get("speaker_b", ""))),
        session_dates=dates,
        facts=tuple(facts),
        questions=questions,
    )


def _short_id(sample_id: str) -> str:
    return re.sub(r"^conv-", "", sample_id)


@functools.lru_cache(maxsize=4)  # a few releases at most
def _parse_files(texts: tuple[tuple[Path, bytes], ...]) -> tuple[LocomoConversation, ...]:
    """The conversations of the files' contents, parsed once per content in a process.

    The benchmark's commands and the tests read the same release many times in one
    process; the cache is keyed by the files' contents, so an edited file is parsed again.
    """
    return tuple(c for file, data in texts for c in _parse_file(file, data))


def _parse_file(file: Path, raw: bytes) -> list[LocomoConversation]:
    text = raw.decode("utf-8")  # (a decoding error is raised as such, as before)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LocomoDataError(f"cannot read {file}: {exc}. {LOCOMO_SOURCE}.") from exc
    if isinstance(data, list):
        conversations = []
        for i, sample in enumerate(data):
            if not isinstance(sample, dict):
                raise LocomoDataError(f"{file}: item {i} is not an object. {LOCOMO_SOURCE}.")
            cid = _short_id(str(sample.get("sample_id", i)))
            conversations.append(_conversation(sample, cid))
        return conversations
    if isinstance(data, dict):
        return [_conversation(data, _short_id(file.stem))]
    raise LocomoDataError(f"{file}: not a LoCoMo file. {LOCOMO_SOURCE}.")


def load_locomo(path: str | Path) -> list[LocomoConversation]:
    """Every conversation under ``path`` (file or directory), in a stable order.

    Args:
        path: ``locomo10.json``, or a directory holding it or one JSON file per
            conversation.

    Returns:
        The conversations.

    Raises:
        LocomoDataError: The path holds no LoCoMo data.
    """
    path = Path(path)
    if not path.exists():
        raise LocomoDataError(f"LoCoMo data not found at {path}. {LOCOMO_SOURCE}.")
    if path.is_dir():
        bundle = path / "locomo10.json"
        files = [bundle] if bundle.is_file() else sorted(path.glob("*.json"))
    else:
        files = [path]
    texts = []
    for file in files:
        try:
            texts.append((file, file.read_bytes()))
        except OSError as exc:
            raise LocomoDataError(f"cannot read {file}: {exc}. {LOCOMO_SOURCE}.") from exc
    conversations = list(_parse_files(tuple(texts)))
    if not conversations:
        raise LocomoDataError(f"no LoCoMo conversations under {path}. {LOCOMO_SOURCE}.")
    return conversations
