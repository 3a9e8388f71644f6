"""``tests/unit_tests/ledger/test_scope.py`` again, on a real PostgreSQL server."""

from tests.unit_tests.ledger.test_scope import *  # noqa: F403
