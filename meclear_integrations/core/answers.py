"""What the agent answered on each coalition: evaluators report it, the engine keeps it.

The engine's evaluator returns a score; identifying the carriers of a harm
(:mod:`.stages.carriers`) and telling that the model cannot answer at all need the
*answer* behind a score too. An evaluator that knows it (the package's
:class:`~meclear_integrations.judges.task.TaskEvaluator`, the simulated evaluator) calls
:func:`note_answer` inside its call; the engine opens a fresh :class:`AnswerNote` around
every evaluator call (:func:`answer_note`, a context variable, so it reaches worker
threads and LangChain's copied contexts) and stores the answer next to the trial's score
(:attr:`~.game.CoalitionGame.answers`). An evaluator that reports nothing loses nothing
but the stages that need answers, which then say so.

``same`` is the answer equivalence the evaluator uses (e.g. the judges' word-level
``answers_agree``): two answers "say the same thing", not string equality. Without one,
answers are compared by :func:`plain_same` (case, spacing and punctuation ignored).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["AnswerNote", "SameAnswer", "answer_note", "note_answer", "plain_same"]

SameAnswer = Callable[[str, str], bool]
"""(answer, answer) -> True when both say the same thing."""

_NOTE: contextvars.ContextVar[AnswerNote | None] = contextvars.ContextVar(
    "meclear_answer_note", default=None
)
_PUNCTUATION = re.compile(r"[^\w\s]+", re.UNICODE)


@dataclass(slots=True)
class AnswerNote:
    """The answer one evaluator call reported (None: it reported none)."""

    answer: str | None = None
    """The agent's answer text."""
    same: SameAnswer | None = None
    """The evaluator's answer equivalence."""


def note_answer(answer: str, *, same: SameAnswer | None = None) -> None:
    """Tell the engine what the agent answered in the evaluator call now running.

    A no-op outside an engine run (or when the answer is not text).

    Args:
        answer: the agent's answer.
        same: the answer equivalence to compare it with other answers (default:
            :func:`plain_same`).

    Example:
        >>> from meclear_integrations.core.answers import answer_note, note_answer
        >>> with answer_note() as note:
        ...     note_answer("Paris")
        >>> note.answer
        'Paris'
    """
    note = _NOTE.get()
    if note is not None and isinstance(answer, str):
        note.answer = answer
        note.same = same


@contextmanager
def answer_note() -> Iterator[AnswerNote]:
    """A fresh note for one evaluator call; :func:`note_answer` writes into it.

    Yields:
        The note.
    """
    note = AnswerNote()
    token = _NOTE.set(note)
    try:
        yield note
    finally:
        _NOTE.reset(token)


def plain_same(first: str, second: str) -> bool:
    """Equal once lower-cased, punctuation dropped and spacing collapsed.

    Args:
        first: one answer.
        second: the other.

    Returns:
        True when equal after that normalisation.

    Example:
        >>> plain_same("Paris.", " paris")
        True
    """

    def norm(text: str) -> str:
        return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())

    return norm(first) == norm(second)
