"""``tests/unit_tests/ledger/test_scope_stream.py`` again, on a real PostgreSQL server."""

from tests.unit_tests.ledger.test_scope_stream import *  # noqa: F403
