"""``tests/unit_tests/ledger/test_store.py`` again, on a real PostgreSQL server.

Importing the tests collects them here, where ``ledger_url`` is a PostgreSQL database
(``conftest.py``); without a server they skip and say so (and fail under ``bash .ci/run``).
Tests that do not take ``ledger_url`` are deselected (they ran in the unit tier).
"""

from tests.unit_tests.ledger.test_store import *  # noqa: F403
