"""One tuning grid for every method: axis widening, the coordinate search, the tie rule."""

from __future__ import annotations

from typing import Any

from meclear_bench.tune_grid import Axis, Point, choose, search


def _point(values: dict[str, Any], objective: float, calls: float = 1.0, ok: bool = True) -> Point:
    return Point(values, {}, ok, objective, calls)


def test_a_numeric_axis_widens_past_the_edge_its_choice_sits_on() -> None:
    tau = Axis("tau", (0.0, 0.02, 0.05), low=0.0, high=1.0)
    assert tau.widened(0.02) is None  # inside the grid
    assert tau.widened(0.0) is None  # the setting's bound
    up = tau.widened(0.05)
    assert up is not None and up.values == (0.0, 0.02, 0.05, 0.08)
    alpha = Axis("alpha", (0.001, 0.01, 0.05), low=1e-5, high=1.0, scale="log")
    down = alpha.widened(0.001)
    assert down is not None and down.values[0] == 0.0001
    cap = Axis("cap", (8, 12, 16), low=2, high=18, integer=True)
    wider = cap.widened(16)
    assert wider is not None and wider.values[-1] == 18 and isinstance(wider.values[-1], int)
    assert Axis("rule", ("tolerance", "relative")).widened("relative") is None


def test_ties_within_a_tenth_of_a_point_go_to_fewer_calls_among_admissible() -> None:
    rows = [
        _point({"a": 1}, 0.800, calls=50),
        _point({"a": 2}, 0.7995, calls=20),
        _point({"a": 3}, 0.90, calls=5, ok=False),
    ]
    assert choose(rows) == 1
    # nothing admissible: the least background competes (here the worse objective)
    far = Point({}, {}, False, 0.9, 1.0, background=0.2)
    near = Point({}, {}, False, 0.6, 1.0, background=0.06)
    assert choose([far, near]) == 1


def test_search_widens_to_an_interior_optimum_and_evaluates_each_point_once() -> None:
    calls: list[dict[str, Any]] = []

    def evaluate(values: dict[str, Any]) -> Point:
        calls.append(values)
        # best x is 0.2 (beyond the first grid), best y is "b"; y does not depend on x
        score = -((values["x"] - 0.2) ** 2) + (0.01 if values["y"] == "b" else 0.0)
        return _point(values, score, calls=values["x"])

    groups = [
        [Axis("x", (0.0, 0.05, 0.1), low=0.0, high=1.0)],
        [Axis("y", ("a", "b"))],
    ]
    result = search({"x": 0.05, "y": "a"}, groups, evaluate, passes=2)
    chosen = result.rows[result.chosen].values
    assert chosen == {"x": 0.2, "y": "b"}
    assert result.axes["x"] == (0.0, 0.05, 0.1, 0.15, 0.2, 0.25)
    assert result.widened == ["x: [0.15]", "x: [0.2]", "x: [0.25]"]
    keys = [tuple(sorted(v.items())) for v in calls]
    assert len(keys) == len(set(keys))  # cached: no point evaluated twice
