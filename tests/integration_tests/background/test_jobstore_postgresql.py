"""The embedded job table on PostgreSQL (the ledger's database for replicas): the same
single flight, leases, backoff and dead letters as on SQLite."""

from __future__ import annotations

import pytest

from meclear_integrations.jobs import JobStore
from tests.support.clocks import Clock
from tests.unit_tests.background import test_jobs as unit


@pytest.fixture
def store(postgres_url: str) -> JobStore:
    return JobStore(postgres_url, clock=Clock(), max_attempts=3)


@pytest.fixture
def clock(store: JobStore) -> Clock:
    return store.clock  # type: ignore[return-value]


test_twenty_identical_questions_in_flight_share_one_job = (
    unit.test_twenty_identical_questions_in_flight_share_one_job
)
test_a_finished_audit_lets_the_next_question_queue_again = (
    unit.test_a_finished_audit_lets_the_next_question_queue_again
)
test_a_dead_workers_job_is_taken_over_after_its_lease = (
    unit.test_a_dead_workers_job_is_taken_over_after_its_lease
)
test_a_job_that_kills_every_worker_ends_in_the_dead_letters = (
    unit.test_a_job_that_kills_every_worker_ends_in_the_dead_letters
)
test_a_provider_outage_backs_off_then_succeeds = unit.test_a_provider_outage_backs_off_then_succeeds
test_retries_stop_at_max_attempts = unit.test_retries_stop_at_max_attempts


def test_concurrent_claims_take_different_jobs(store: JobStore) -> None:
    for q in ("a", "b"):
        store.submit(unit.snapshot(q))
    first = store.claim("w1", lease_seconds=60)
    second = store.claim("w2", lease_seconds=60)
    assert first is not None and second is not None and first.job_id != second.job_id
    assert store.claim("w3", lease_seconds=60) is None


# leases by PostgreSQL's clock and fencing tokens (the SQLite tests, on the server)
from tests.unit_tests.background import test_fencing as fencing  # noqa: E402


@pytest.fixture
def url(postgres_url: str) -> str:
    return postgres_url


test_a_worker_whose_clock_runs_ahead_cannot_take_over_a_live_job = (
    fencing.test_a_worker_whose_clock_runs_ahead_cannot_take_over_a_live_job
)
test_a_skewed_worker_does_not_delay_or_rush_a_new_job = (
    fencing.test_a_skewed_worker_does_not_delay_or_rush_a_new_job
)
test_a_worker_that_lost_its_lease_cannot_finish_requeue_or_dead_letter_the_job = (
    fencing.test_a_worker_that_lost_its_lease_cannot_finish_requeue_or_dead_letter_the_job
)
test_a_workers_dead_letter_hook_runs_only_when_the_dead_letter_is_accepted = (
    fencing.test_a_workers_dead_letter_hook_runs_only_when_the_dead_letter_is_accepted
)
test_a_payload_from_an_older_version_is_dead_lettered_with_its_payload = (
    fencing.test_a_payload_from_an_older_version_is_dead_lettered_with_its_payload
)
