"""The steps a stage yields to the drivers, and the run state the stages share.

A stage is a generator of :data:`Step` values: :class:`Evaluate` asks the driver to
evaluate coalitions (one batch, concurrently on the async path), :class:`Emit` asks it to
report a stage event. The sync and async drivers of
:class:`~meclear_integrations.core.engine.MeClearEngine` execute the steps, so the
algorithm is written once.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from ..budget import RunBudget
from ..config import ClearanceConfig
from ..events import Stage, StageEvent
from ..failures.retry import CallRetrier
from ..game import Coalition, CoalitionGame
from ..grouping import Embedder
from ..recency import RecencyPrior
from ..report import ClearanceReport, FailedCoalition, MemoryAttribution
from ..verification.rule import Trials, VerificationRule, rule_of

__all__ = ["Algorithm", "Emit", "Evaluate", "Run", "Step", "Steps", "evaluated", "want"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Evaluate:
    """Evaluate coalitions: everything missing from the table goes out as one batch.

    Args:
        coalitions: (coalition, trials it must have) pairs.
    """

    coalitions: list[tuple[Coalition, int]]


@dataclass(frozen=True, slots=True)
class Emit:
    """Report a stage event to the listener and the trace.

    Args:
        event: the stage boundary to report.
    """

    event: StageEvent


Step = Evaluate | Emit
"""One step of the algorithm, executed by a driver."""

Steps = Generator[Step, None, T]
"""A stage: yields steps, returns its result."""

Algorithm = Generator[Step, None, ClearanceReport]
"""The whole run: yields steps, returns the report."""


@dataclass(slots=True)
class Run:
    """Everything one run shares between its stages: settings, table, budget, progress.

    Args:
        config: the run's settings.
        game: the coalition table of the frozen context.
        budget: the per-query call and time budget.
        retrier: retries of transient evaluator errors.
        embed: texts -> vectors for hierarchical grouping (None: TF-IDF similarity).
    """

    config: ClearanceConfig
    game: CoalitionGame
    budget: RunBudget
    retrier: CallRetrier
    embed: Embedder | None = None
    failures: list[FailedCoalition] = field(default_factory=list)
    """Coalitions whose evaluation failed (for the failure report)."""
    started: float = field(default_factory=time.perf_counter)
    """``time.perf_counter()`` at the start of the run."""
    stage: Stage = "screening"
    """The stage the run is in (named in a failure report)."""
    estimator: str | None = None
    """The concrete estimator, once attribution has started."""
    attributions: list[MemoryAttribution] | None = None
    """Complete contributions, once attribution has finished."""
    prior_settled: frozenset[int] = frozenset()
    """Positions of the scoped prior's members verified against a reference or a
    correction (``core.prior``)."""
    prior_carriers: frozenset[int] = frozenset()
    """Positions of the scoped prior's members named carriers of the harm (alone each
    gives the harmful answer): never put back alone, and put back with every put-back
    test that recovers (``core.prior``)."""
    prior_first: bool = False
    """The prior candidate is scoped to this question: tried before the early exit and
    admitted on recovery (``core.prior``)."""

    recency: RecencyPrior | None = None
    """The recency candidate's settings (``core.recency``; None: off)."""
    recency_tried: list[int] = field(default_factory=list)
    """Positions of the recency candidate tried (``core.recency``; empty: none)."""
    recency_ignored: list[str] = field(default_factory=list)
    """Memories whose date was unusable for recency (unreadable, out of range, future)."""

    grouped: bool = False
    """The memories alone were evaluated for answer grouping although ``answer_groups``
    is not True: ``"auto"`` saw the redundancy signature (``core.stages.unexplained``).
    The run then groups by answer and, after a verified clearance, reports the carriers
    (from the same singletons: no extra call)."""

    rule: VerificationRule = field(init=False)
    """The verification rule of ``config`` (``core.verification.rule``), built once."""

    def __post_init__(self) -> None:
        self.rule = rule_of(self.config)

    @property
    def ids(self) -> list[str]:
        """The memory ids of the context, in position order."""
        return [m.id for m in self.game.context]

    @property
    def single(self) -> int:
        """Trials of a coalition that is not verified (see ``adaptive_trials``)."""
        return 1 if self.config.adaptive_trials else self.config.trials


def want(*groups: tuple[Iterable[Coalition], int]) -> list[tuple[Coalition, int]]:
    """Concatenate (coalitions, trials) groups into one batch.

    Args:
        *groups: (coalitions, trials each must have) pairs.

    Returns:
        The batch; duplicates are cache hits.
    """
    batch: list[tuple[Coalition, int]] = []
    for coalitions, trials in groups:
        batch.extend((c, trials) for c in coalitions)
    return batch


def evaluated(trials: Trials[T]) -> Steps[T]:
    """A verification rule's operation as a stage: each batch it needs becomes an Evaluate.

    Args:
        trials: the rule's operation (``core.verification.rule.Trials``).

    Returns:
        Its decision, once every batch was evaluated.
    """
    try:
        batch = next(trials)
        while True:
            yield Evaluate(batch)
            batch = trials.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
