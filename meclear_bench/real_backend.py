"""Task values from real chat models: the agent answers, the judge grades (not simulated).

:class:`RealModelBackend` gives every (case, method) a fresh
:class:`~.real_query.RealQuery` (what the method pays is counted in its meter) and
measures a returned context on trials no method saw:

- the agent answers the kept memories on fresh draws ``FRESH_TRIAL + r``, r <
  ``recovery_trials`` (one draw for a deterministic agent: at temperature 0 every trial of a
  prompt is the same answer);
- each answer is graded against the gold reference, whatever judge the methods were given:
  by the judge model (``grade="model"``) or by normalised containment of the reference
  (``grade="exact"``, no model): the user's answer is right or wrong;
- ``accuracy`` is the share of correct fresh answers, ``recovered`` whether all were
  correct, ``expected_recovery`` the plug-in estimate ``accuracy ** recovery_trials``.

These calls are charged to no method (they go through the response cache: methods that
return the same context share one measurement). :func:`real_verifier` is the causal
verification of the LoCoMo builder on the same models, cases verified in parallel.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Literal

from .cases import BenchCase
from .measure import FRESH_TRIAL, ContextQuality
from .model_client import ModelClient, metering
from .real_query import JudgeMode, RealQuery
from .settings import BenchSettings
from .verify import Verification, Verifier, verify_case

__all__ = ["Grade", "RealModelBackend", "real_verifier"]

Grade = Literal["model", "exact"]
"""What grades fresh answers against the gold reference: the judge model or exact match."""


class RealModelBackend:
    """Real agent and judge models (see the module docstring).

    Args:
        agent: The agent model's client.
        judge: The judge model's client.
        mode: The judge mode: ``reference``, ``exact``, ``coalition`` or ``full``.
        metadata_keys: The memory metadata shown to the agent.
        grade: What grades fresh answers and verifies cases against the gold reference:
            the judge model (``model``) or normalised containment (``exact``).
    """

    simulated = False

    def __init__(
        self,
        agent: ModelClient,
        judge: ModelClient,
        *,
        mode: JudgeMode = "reference",
        metadata_keys: Sequence[str] = (),
        grade: Grade = "model",
    ) -> None:
        self.agent = agent
        self.judge = judge
        self.mode = mode
        self.metadata_keys = tuple(metadata_keys)
        self.grade: Grade = grade

    def query(self, case: BenchCase, settings: BenchSettings | None = None) -> RealQuery:
        """A fresh real-model evaluator for one method on ``case``.

        Args:
            case: The benchmark case.
            settings: Unused (the real models carry their own settings).

        Returns:
            The case's query, graded in the backend's judge mode.
        """
        return RealQuery(
            case, self.agent, self.judge, mode=self.mode, metadata_keys=self.metadata_keys
        )

    def reference_query(self, case: BenchCase) -> RealQuery:
        """A query graded against the gold reference (measurement, verification).

        Args:
            case: The benchmark case.

        Returns:
            The query (the judge model's or exact-match grading, as ``grade`` says).
        """
        mode: JudgeMode = "exact" if self.grade == "exact" else "reference"
        return RealQuery(case, self.agent, self.judge, mode=mode, metadata_keys=self.metadata_keys)

    @contextmanager
    def session(self, query: Any) -> Iterator[Any]:
        """Charge the model calls made inside the block to ``query``'s meter.

        Args:
            query: The evaluator from :meth:`query`.

        Yields:
            ``query``.
        """
        with metering(query.meter):
            yield query

    def measure(
        self, case: BenchCase, kept: Sequence[str], settings: BenchSettings
    ) -> ContextQuality:
        """What the context ``kept`` achieves on fresh trials (uncharged).

        Args:
            case: The benchmark case.
            kept: The ids of the memories left in the context.
            settings: The run's settings (``recovery_trials``).

        Returns:
            The context's accuracy and recovery, judged against the gold reference.
        """
        trials = settings.recovery_trials
        draws = 1 if self.agent.spec.deterministic else trials
        keep = set(kept)
        coalition = tuple(m for m in case.context() if m.id in keep)
        scorer = self.reference_query(case)
        with metering(None):
            correct = [scorer(coalition, FRESH_TRIAL + r) >= 1.0 for r in range(draws)]
        accuracy = sum(correct) / len(correct)
        return ContextQuality(
            recovered=all(correct), expected_recovery=accuracy**trials, accuracy=accuracy
        )


def real_verifier(backend: RealModelBackend, *, workers: int = 1) -> Verifier:
    """The causal verification (:func:`~.verify.verify_case`) with the real models.

    The real agent and the reference judge check ``workers`` cases at a time.

    Args:
        backend: The real-model backend.
        workers: The cases verified at a time.

    Returns:
        The verifier.
    """

    def one(case: BenchCase) -> Verification:
        with metering(None):
            return verify_case(case, evaluate=backend.reference_query(case))

    def verify(cases: Sequence[BenchCase]) -> list[Verification]:
        if workers <= 1 or len(cases) <= 1:
            return [one(case) for case in cases]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="verify") as pool:
            return list(pool.map(one, cases))

    return verify
