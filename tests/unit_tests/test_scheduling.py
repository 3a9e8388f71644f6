"""The suite's order for xdist workers: the integration modules dealt among the unit tests."""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.scheduling import spread_waiting_modules


@dataclass
class _Item:
    nodeid: str


def _items(spec: dict[str, int]) -> list[_Item]:
    return [_Item(f"{module}::t{i}") for module, n in spec.items() for i in range(n)]


def test_waiting_modules_are_spread_whole_and_every_test_kept() -> None:
    integration = {f"tests/integration_tests/test_{m}.py": 3 for m in "abcd"}
    unit = {f"tests/unit_tests/test_{m}.py": 10 for m in "wxyz"}
    items = _items(integration) + _items(unit)
    out = spread_waiting_modules(items)
    assert sorted(i.nodeid for i in out) == sorted(i.nodeid for i in items)
    unit_order = [i.nodeid for i in out if i.nodeid.startswith("tests/unit_tests/")]
    assert unit_order == [i.nodeid for i in _items(unit)]  # unit tests keep their order
    modules = [i.nodeid.split("::")[0] for i in out]
    for module in integration:  # each integration module stays one block, in order
        at = [k for k, m in enumerate(modules) if m == module]
        assert at == list(range(at[0], at[0] + 3))
    # four slices of the order (four workers) each get one integration module
    quarter = len(out) // 4
    for k in range(4):
        chunk = modules[k * quarter : (k + 1) * quarter]
        assert sum(m.startswith("tests/integration_tests/") for m in set(chunk)) == 1


def test_a_run_of_one_tier_keeps_its_order() -> None:
    unit = _items({"tests/unit_tests/test_a.py": 4})
    integration = _items({"tests/integration_tests/test_b.py": 2})
    assert spread_waiting_modules(unit) == unit
    assert spread_waiting_modules(integration) == integration
