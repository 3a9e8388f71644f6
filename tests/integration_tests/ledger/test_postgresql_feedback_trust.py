"""``tests/unit_tests/ledger/test_feedback_trust.py`` again, on a real PostgreSQL server."""

from tests.unit_tests.ledger.test_feedback_trust import *  # noqa: F403
