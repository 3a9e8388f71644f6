"""The unit tier is hermetic: no network (only Unix sockets, which asyncio needs).

Tests that talk to a local stub server, a database server, or run the cookbooks and the
README live in ``tests/integration_tests``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytest_socket import disable_socket, enable_socket


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    disable_socket(allow_unix_socket=True)
    try:
        yield
    finally:
        enable_socket()
