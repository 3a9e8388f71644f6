"""``python -m meclear_bench.scope_lookup``: the bounded read stays flat as questions grow."""

from __future__ import annotations

import json

from meclear_bench.scope_lookup import main, measure
from meclear_integrations.ledger.scope_state import ROWS_PER_MEMORY


def test_the_bounded_read_is_flat_and_finds_the_same_harm() -> None:
    n = ROWS_PER_MEMORY + 24
    figures = measure((4, n), k=8, harmful=2, lookups=2)
    small, large = figures["sizes"]["4"], figures["sizes"][str(n)]
    assert small["bounded_new"]["rows_read"] == small["unbounded_new"]["rows_read"] == 2 * 4
    assert large["unbounded_new"]["rows_read"] == 2 * n  # every question's row
    assert large["bounded_new"]["rows_read"] == 2 * ROWS_PER_MEMORY  # the most recent ones
    # + the asking question's own rows: at most one per context memory
    assert (
        2 * ROWS_PER_MEMORY + 2 <= large["bounded_oldest"]["rows_read"] <= 2 * ROWS_PER_MEMORY + 8
    )
    for row in (small, large):
        assert row["same_harm_new"] and row["same_harm_oldest"]
        assert row["bounded_new"]["withheld"] == []  # a new question: nothing in scope
        assert row["bounded_oldest"]["withheld"] == ["m1", "m2"]  # its own verified harm


def test_the_command_prints_json(capsys) -> None:
    assert main(["--questions", "3", "--k", "4", "--harmful", "1", "--lookups", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sizes"]["3"]["bounded_oldest"]["withheld"] == ["m1"]
