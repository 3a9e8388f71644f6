"""The baselines' view of one case: v^(S) over the frozen context, under the engine's trial policy.

Every method gets the same trial policy options as the engine (the run's
:class:`~meclear_integrations.core.ClearanceConfig`): ablation coalitions get one trial
with adaptive trials (T otherwise), the early exit and the verification of clearance
candidates follow the engine's rule (:func:`~meclear_integrations.core.verification.rule.
rule_of`: the sequential rule or the paper's). Coalitions are sets of positions in retrieval order;
scores live in a :class:`~meclear_integrations.core.game.CoalitionGame` and every call goes
through the run's :class:`~meclear_bench.counting.CountingEvaluator`, so a
baseline's cost is counted exactly as the engine's.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 2, 17-20.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from meclear_integrations.core import ClearanceConfig, Memory
from meclear_integrations.core.answers import answer_note
from meclear_integrations.core.game import Coalition, CoalitionGame
from meclear_integrations.core.verification.rule import Trials, candidate_coalition, rule_of

from .counting import CountingEvaluator

__all__ = ["CaseOracle"]

T = TypeVar("T")


def _mask(positions: Iterable[int]) -> Coalition:
    mask = 0
    for i in positions:
        mask |= 1 << i
    return mask


class CaseOracle:
    """Values v^(S) (mean of the trials a coalition has) and the verified clearance rule.

    Args:
        context: The frozen context, in retrieval order.
        evaluate: The counted evaluator of the case.
        config: The engine configuration whose trial policy and verification rule apply.
    """

    def __init__(
        self,
        context: Sequence[Memory],
        evaluate: CountingEvaluator,
        *,
        config: ClearanceConfig,
    ) -> None:
        self.context = tuple(context)
        self.evaluate = evaluate
        self.config = config
        self.game = CoalitionGame(context=self.context, trials=config.trials)
        self.single = 1 if config.adaptive_trials else config.trials
        """Trials of an ablation coalition."""
        self.rule = rule_of(config, adaptive=False)
        """The engine's verification rule; every candidate gets its trials at once."""

    @property
    def k(self) -> int:
        """The number of memories in the frozen context."""
        return len(self.context)

    @property
    def full(self) -> frozenset[int]:
        """The full coalition (every position of the context)."""
        return frozenset(range(self.k))

    def run(self, wanted: Iterable[tuple[Coalition, int]]) -> None:
        """Bring each coalition (bit mask) to the given number of trials.

        Args:
            wanted: (coalition bit mask, number of trials) pairs.
        """
        for coalition, trials in wanted:
            have = self.game.trials_of(coalition)
            if have >= trials:
                continue
            memories = self.game.memories_of(coalition)
            scores: list[float] = []
            answers: list[str | None] = []
            for t in range(have, trials):
                # the answer the reader notes (core.answers), kept beside the score: what
                # the answer-backed flag rule reads (methods.answer_rule); no extra call
                with answer_note() as note:
                    scores.append(float(self.evaluate(memories, t)))
                answers.append(note.answer)
                if note.same is not None and self.game.same is None:
                    self.game.same = note.same
            self.game.store(coalition, scores, answers if None not in answers else None)

    def scores(self, coalition: Iterable[int], trials: int | None = None) -> tuple[float, ...]:
        """The trial scores of the coalition (positions), evaluated on first use.

        Args:
            coalition: The positions present.
            trials: The number of trials (None: the trial policy's).

        Returns:
            The scores, by trial.
        """
        mask = _mask(coalition)
        self.run([(mask, self.single if trials is None else trials)])
        return self.game.scores[mask]

    def value(self, coalition: Iterable[int]) -> float:
        """v^(S): the mean of the coalition's trial scores.

        One trial for an ablation under adaptive trials, T otherwise.

        Args:
            coalition: The positions present.

        Returns:
            The value.
        """
        s = self.scores(coalition)
        return sum(s) / len(s)

    def without(self, positions: Iterable[int]) -> frozenset[int]:
        """M minus the given positions.

        Args:
            positions: The positions removed.

        Returns:
            The remaining positions.
        """
        return self.full - frozenset(positions)

    def decided(self, trials: Trials[T]) -> T:
        """Run a verification rule's operation: evaluate each batch it asks for.

        Args:
            trials: the operation (``core.verification.rule.Trials``).

        Returns:
            Its decision.
        """
        try:
            batch = next(trials)
            while True:
                self.run(batch)
                batch = trials.send(None)
        except StopIteration as done:
            result: T = done.value
            return result

    def exits(self) -> bool:
        """The engine's early exit on the full context (when the configuration has it)."""
        if not self.config.early_exit:
            return False
        return self.decided(self.rule.exit_test(self.game))

    def verified_clearance(self, order: Sequence[int]) -> tuple[list[int], list[dict], str]:
        """Nested candidates C_j (Eq. 17) along ``order`` verified by the engine's rule (Eq. 18-20).

        Returns the cleared positions, the candidates tried and the status (``complete`` or
        ``unverified`` when the verdicts kept disagreeing).

        Args:
            order: The positions, highest priority first.
        """
        candidates = [list(order[:j]) for j in range(len(order) + 1)]
        coalitions = [candidate_coalition(self.k, c) for c in candidates]
        self.decided(self.rule.verify(self.game, coalitions))
        close = self.config.verification.close_trials
        if close is not None and len(self.game.scores) == 1 << self.k:
            # the engine's close trials read only verdicts: every method whose coalition
            # table is complete gets them, as the engine does on an enumeration
            selection = self.decided(self.rule.settle_close(self.game, candidates, close))
        else:
            selection = self.rule.select(self.game, candidates)
        selected, status = selection.selected, "complete"
        if selection.undecided:
            selected, status = 0, "unverified"
        tried = [
            {
                "size": len(c),
                "value": self.game.value(coalitions[j]),
                "gain": selection.gains[j],
                "recovered": selection.recovered[j],
                "admissible": selection.admissible[j],
                "trials": self.game.trials_of(coalitions[j]),
            }
            for j, c in enumerate(candidates)
        ]
        return list(order[:selected]), tried, status
