"""``tests/unit_tests/ledger/test_settlement_reverify.py`` again, on a real PostgreSQL server.

Importing the tests collects them here, where ``ledger_url`` is a PostgreSQL database
(``conftest.py``); without a server they skip and say so (and fail under ``bash .ci/run``).
"""

from tests.unit_tests.ledger.test_settlement_reverify import *  # noqa: F403
