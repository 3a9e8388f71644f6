"""The baselines' view of one case: v^(S) over the frozen context, under the engine's trial policy.

Every method gets the same trial policy options as the engine (the run's
:class:`~meclear_integrations.core.ClearanceConfig`): ablation coalitions get one trial
with adaptive trials (T otherwise), the early exit and the verification of clearance
candidates follow the engine's rule (:class:`~meclear_integrations.core.verification.
SequentialVerifier` or the paper's). Coalitions are sets of positions in retrieval order;
scores live in a :class:`~meclear_integrations.core.game.CoalitionGame` and every call goes
through the run's :class:`~meclear_bench.counting.CountingEvaluator`, so a
baseline's cost is counted exactly as the engine's.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 2, 17-20.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from meclear_integrations.core import ClearanceConfig, Memory
from meclear_integrations.core.answers import answer_note
from meclear_integrations.core.clearance import (
    GAIN_TIE_TOLERANCE,
    candidate_coalition,
    select_candidate,
)
from meclear_integrations.core.coalitions import Coalition
from meclear_integrations.core.engine import verifier
from meclear_integrations.core.game import CoalitionGame

from .counting import CountingEvaluator

__all__ = ["CaseOracle"]


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

    def exits(self) -> bool:
        """The engine's early exit on the full context (when the configuration has it)."""
        cfg = self.config
        if not cfg.early_exit:
            return False
        full = self.game.full
        if cfg.verification.rule == "sequential":
            rule = verifier(cfg)
            while plan := rule.exit_plan(self.game):
                self.run(plan)
            return rule.exits(self.game)
        self.run([(full, cfg.trials)])
        return (
            self.game.recovers(full, cfg.verification.success_threshold)
            and self.game.value(full) >= 1.0 - GAIN_TIE_TOLERANCE
        )

    def verified_clearance(self, order: Sequence[int]) -> tuple[list[int], list[dict], str]:
        """Nested candidates C_j (Eq. 17) along ``order`` verified by the engine's rule (Eq. 18-20).

        Returns the cleared positions, the candidates tried and the status (``complete`` or
        ``unverified`` when the verdicts kept disagreeing).

        Args:
            order: The positions, highest priority first.
        """
        cfg = self.config
        candidates = [list(order[:j]) for j in range(len(order) + 1)]
        coalitions = [candidate_coalition(self.k, c) for c in candidates]
        status = "complete"
        if cfg.verification.rule == "sequential":
            rule = verifier(cfg)
            while plan := rule.plan(self.game, coalitions):
                self.run(plan)
            selection = rule.select(self.game, coalitions)
            selected, gains = selection.selected, selection.gains
            recovered, admissible = selection.recovered, selection.admissible
            if selection.undecided:
                selected, status = 0, "unverified"
        else:
            self.run((c, cfg.trials) for c in coalitions)
            selected, gains, recovered, admissible = select_candidate(
                self.game, candidates, cfg.verification.success_threshold
            )
        tried = [
            {
                "size": len(c),
                "value": self.game.value(coalitions[j]),
                "gain": gains[j],
                "recovered": recovered[j],
                "admissible": admissible[j],
                "trials": self.game.trials_of(coalitions[j]),
            }
            for j, c in enumerate(candidates)
        ]
        return list(order[:selected]), tried, status
