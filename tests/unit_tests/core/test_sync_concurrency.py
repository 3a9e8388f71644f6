"""The sync path keeps a fast in-process evaluator inline, on the caller's thread.

How it runs a slow evaluator's calls concurrently (on the real clock) is tested in the
integration tier (``core/test_sync_concurrency.py``)."""

from __future__ import annotations

import threading

from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.judging.dispatch import Pace, run_batch
from tests.support.sync_batches import InFlight, single_memory_requests


def test_a_fast_evaluator_stays_on_the_callers_thread() -> None:
    meter = InFlight()
    pace = Pace()
    for _ in range(3):
        run_batch(
            lambda r: meter(0.0),
            single_memory_requests(5),
            budget=RunBudget(),
            workers=4,
            pace=pace,
        )
    assert pace.fast is True
    assert meter.threads == {threading.get_ident()}
