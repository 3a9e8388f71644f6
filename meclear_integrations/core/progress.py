"""Progress of a run, batch by batch: the ``progress`` stage events.

Each batch of evaluator calls is announced when it starts (``calls_done=0``), then as its
calls complete, at most :data:`PROGRESS_UPDATES` times (whenever ``calls_done`` crosses a
multiple of ``ceil(calls_total / PROGRESS_UPDATES)``), the last one at
``calls_done == calls_total``. The drivers emit them on their own thread or task, on the
listener channel of the stage events, between the start and the end of the stage the batch
belongs to. The payload holds numbers only:

- ``batch``: the batch's number in the run (1, 2, ...);
- ``calls_done`` / ``calls_total``: evaluator calls of this batch finished / in it (one
  evaluator call is one agent run plus its judgement, retries included);
- ``run_calls_done``: evaluator calls finished in the run so far, this batch included;
- ``elapsed_seconds``: seconds since the run started.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from .events import Stage, StageEvent

__all__ = ["PROGRESS_UPDATES", "RunProgress"]

PROGRESS_UPDATES = 10
"""Most progress events per batch after its start event."""


class RunProgress:
    """Turns one run's batch starts and call completions into progress events.

    Args:
        started: ``clock()`` at the start of the run.
        clock: the clock of ``elapsed_seconds`` (default ``time.perf_counter``).
        updates: most events per batch after its start event.
    """

    def __init__(
        self,
        started: float,
        *,
        clock: Callable[[], float] = time.perf_counter,
        updates: int = PROGRESS_UPDATES,
    ) -> None:
        """Start tracking a run that began at ``started``."""
        self.started = started
        self.clock = clock
        self.updates = max(1, updates)
        self.stage: Stage = "screening"
        """The stage the batches belong to: the last one started."""
        self.batch = 0
        self.calls_total = 0
        self.calls_done = 0
        self.run_calls_done = 0
        self._step = 1

    def observe(self, event: StageEvent) -> None:
        """Follow the run's stage events (a ``start`` names the stage of what follows).

        Args:
            event: a stage event the driver emits.
        """
        if event.phase == "start":
            self.stage = event.stage

    def start(self, calls_total: int) -> StageEvent:
        """A batch of ``calls_total`` calls starts.

        Args:
            calls_total: evaluator calls in the batch.

        Returns:
            Its start event (``calls_done=0``).
        """
        self.batch += 1
        self.calls_total = calls_total
        self.calls_done = 0
        self._step = max(1, math.ceil(calls_total / self.updates))
        return self._event()

    def advance(self, calls_done: int) -> StageEvent | None:
        """``calls_done`` calls of the current batch have finished.

        Args:
            calls_done: calls of the batch finished so far.

        Returns:
            An event when the count crossed a step or the batch is complete, else None.
        """
        previous, self.calls_done = self.calls_done, calls_done
        self.run_calls_done += calls_done - previous
        crossed = calls_done // self._step > previous // self._step
        complete = calls_done >= self.calls_total > previous
        return self._event() if crossed or complete else None

    def _event(self) -> StageEvent:
        return StageEvent(
            stage=self.stage,
            phase="progress",
            payload={
                "batch": self.batch,
                "calls_done": self.calls_done,
                "calls_total": self.calls_total,
                "run_calls_done": self.run_calls_done,
                "elapsed_seconds": round(max(0.0, self.clock() - self.started), 3),
            },
        )
