"""The ledger fixtures of ``tests/unit_tests/ledger``, with ``ledger_url`` on PostgreSQL."""

import pytest

from tests.unit_tests.ledger import conftest as _unit

globals().update({k: v for k, v in vars(_unit).items() if not k.startswith("__")})


@pytest.fixture(params=["postgresql"])
def ledger_url(request: pytest.FixtureRequest) -> str:
    """A fresh PostgreSQL database (``MECLEAR_TEST_POSTGRES_URL``; ``bash .ci/run`` starts one)."""
    return request.getfixturevalue("postgres_url")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep only the re-collected unit tests that run on a ledger database."""
    here = __name__.rsplit(".", 1)[0]
    keep, drop = [], []
    for item in items:
        module = getattr(item, "module", None)
        name = getattr(module, "__name__", "")
        reused = name.startswith(f"{here}.test_postgresql_")
        uses_db = "ledger_url" in getattr(item, "fixturenames", ())
        (drop if reused and not uses_db else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
