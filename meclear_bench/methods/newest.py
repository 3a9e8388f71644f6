"""``newest``: newest-wins by timestamp, the recency rule a user would try first.

Among the memories that state an answer to the question, the newest one (largest ``date``
metadata, ISO 8601) wins: every memory that states a different answer is deleted; memories
stating the same answer and memories stating none (background) are kept. Memories without
a parsable date count as the oldest; when no statement carries a date nothing is deleted.
A tie on the newest date keeps the answer most of that date's statements give (a tie of
answers deletes nothing).

Which memories state which answer is read from the simulated world: a memory states the
answer the reader gives on that memory alone (a claim too weak to make the reader answer is
not a statement). That stands in for the extraction step a deployment would need (an
embedding match, or one agent call per memory); the baseline gets it for free: 0 model
calls, so it is never charged for what it is given. With real task models (or the offline
text reader) the extraction is done and charged: the agent is asked on no memory and on
each memory alone (K + 1 agent calls, no judge call); a memory states the answer it gives
alone unless that is the no-memory answer (answers compared with the judges'
``answers_agree``). An evaluator that gives no answer is scored instead and must report
the answer behind its score (``core.answers``; K + 1 evaluator calls), else the method
cannot run.

LlamaIndex ships recency postprocessors, but none of them implements this rule on its own:
``FixedRecencyPostprocessor`` keeps the ``top_k`` newest nodes whatever they say (with
``top_k = 1`` it would drop every background memory), ``EmbeddingRecencyPostprocessor``
drops an older node whose embedding is similar to a newer one (it needs an embedding model
and pandas; with an embedding that makes every statement of the question similar it
reduces to this rule except that it also drops older statements that agree; in
llama-index-core 0.14 it embeds the nodes in input order but reads the embeddings in date
order, so its input must already be newest first; a test checks the two agree), and
``TimeWeightedPostprocessor`` ranks by last access time, not by the fact's date. The rule
is therefore implemented here, deterministic and documented; its ordering (newest first by
the ``date`` key) is LlamaIndex's.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from meclear_integrations.core.answers import AnswerNote, answer_note, plain_same
from meclear_integrations.core.memory import Memory
from meclear_integrations.judges.task import answers_agree
from meclear_integrations.simulation import normalize_answer

from ..settings import case_world
from .base import BenchMethod, MethodContext, MethodNotRunError, MethodOutput
from .deletions import harm_ranking

__all__ = ["DATE_KEY", "NewestWinsMethod", "memory_date", "newest_wins"]

DATE_KEY = "date"
"""The metadata key holding a memory's date (LlamaIndex's default ``date_key``)."""


def memory_date(metadata: dict[str, Any], key: str = DATE_KEY) -> datetime | None:
    """The memory's date from its metadata (ISO 8601), or None when absent or unreadable.

    Args:
        metadata: The memory's metadata.
        key: The metadata key.

    Returns:
        The date (naive, UTC when the text carried a zone), or None.
    """
    value = metadata.get(key)
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


def newest_wins(
    statements: dict[str, str], dates: dict[str, datetime | None]
) -> tuple[str | None, list[str]]:
    """The winning answer and the memories that state another one.

    Args:
        statements: Memory id -> the (normalised) answer it states; background omitted.
        dates: Memory id -> its date (None: unknown, the oldest).

    Returns:
        (the newest answer or None, the ids stating a different answer, newest first).
    """
    dated = [(d, mid) for mid in statements if (d := dates.get(mid)) is not None]
    if not dated:
        return None, []
    newest = max(d for d, _ in dated)
    votes = Counter(statements[mid] for d, mid in dated if d == newest)
    top = votes.most_common()
    if len(top) > 1 and top[0][1] == top[1][1]:
        return None, []
    winner = top[0][0]
    losers = [mid for mid in statements if statements[mid] != winner]
    losers.sort(key=lambda mid: dates.get(mid) or datetime.min, reverse=True)
    return winner, losers


class NewestWinsMethod(BenchMethod):
    """Delete every statement that disagrees with the newest one (simulated: 0 model calls)."""

    name = "newest"

    def run(self, ctx: MethodContext) -> MethodOutput:
        """Run the method on one case.

        Args:
            ctx: The case, the run's settings and the evaluator the method charges its calls to.

        Returns:
            The method's scores, harm ranking, flagged and cleared memories.

        Raises:
            MethodNotRunError: The evaluator reports no answers (real models only).
        """
        ids = [m.id for m in ctx.case.memories]
        statements = _simulated_statements(ctx) if ctx.simulated else _asked_statements(ctx)
        dates = {m.id: memory_date(m.metadata) for m in ctx.case.memories}
        winner, losers = newest_wins(statements, dates)
        scores = {mid: (1.0 if mid in losers else 0.0) for mid in ids}
        return MethodOutput(
            scores=scores,
            ranking=harm_ranking(ids, scores),
            flagged=list(losers),
            cleared=list(losers),
            details={"newest_answer": winner, "statements": len(statements)},
        )


def _simulated_statements(ctx: MethodContext) -> dict[str, str]:
    """Memory id -> the normalised answer the simulated reader gives on it alone (0 calls)."""
    world = case_world(ctx.case.world, ctx.settings)
    statements: dict[str, str] = {}
    for m in ctx.case.memories:
        said = world.favoured([m.id], case_id=ctx.case.case_id)
        if normalize_answer(said) != normalize_answer(world.abstain):
            statements[m.id] = normalize_answer(said)
    return statements


def _asked_statements(ctx: MethodContext) -> dict[str, str]:
    """Memory id -> the answer the agent gives on it alone (K + 1 charged calls).

    Raises:
        MethodNotRunError: The evaluator reports no answers.
    """

    def ask(coalition: tuple[Memory, ...]) -> AnswerNote:
        given = ctx.evaluate.answer(coalition, 0)  # an agent call, no judge call
        if given is not None:
            return AnswerNote(given, answers_agree)
        with answer_note() as note:
            ctx.evaluate(coalition, 0)
        if note.answer is None:
            raise MethodNotRunError("newest-wins needs an evaluator that reports its answers")
        return note

    silent = ask(())
    same = silent.same or plain_same
    assert silent.answer is not None
    given: dict[str, str] = {}
    for memory in ctx.case.context():
        answer = ask((memory,)).answer
        if answer is not None and not same(answer, silent.answer):
            given[memory.id] = answer
    groups: list[str] = []  # one representative per set of agreeing answers
    statements: dict[str, str] = {}
    for mid, answer in given.items():
        match = next((g for g in groups if same(g, answer)), None)
        if match is None:
            groups.append(answer)
        statements[mid] = normalize_answer(match or answer)
    return statements
