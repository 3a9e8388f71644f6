"""The JSONL case contract: every bad line is reported with its number, none is fatal."""

from __future__ import annotations

import json

from meclear_bench import BenchCase, dump_cases, load_cases, parse_case_lines


def _case(case_id: str = "c1", **over: object) -> dict:
    data = {
        "case_id": case_id,
        "cluster": "conv",
        "query_id": "q1",
        "query": "Where does Ana live?",
        "reference": "Lisbon",
        "structure": "direct",
        "fault_type": "precise_factual",
        "memories": [
            {"id": "g", "text": "Ana lives in Lisbon.", "metadata": {}},
            {"id": "f", "text": "Ana lives in Porto.", "metadata": {}},
        ],
        "targets": ["f"],
        "world": {
            "claims": {
                "g": {"answer": "Lisbon", "weight": 1.0},
                "f": {"answer": "Porto", "weight": 2},
            },
            "temperature": 0.0,
            "abstain": "I don't know",
        },
    }
    data.update(over)
    return data


def test_bad_lines_are_reported_with_their_numbers() -> None:
    lines = [
        json.dumps(_case("ok1")),
        "{not json",
        "",
        "[1, 2]",
        json.dumps(_case("bad-target", targets=["nope"])),
        json.dumps({k: v for k, v in _case("no-query").items() if k != "query"}),
        json.dumps(_case("ok1")),  # duplicate id
        json.dumps(_case("bad-world", world={"claims": {"x": {"answer": "a"}}})),
        json.dumps(_case("ok2")),
    ]
    result = parse_case_lines(lines)
    assert [c.case_id for c in result.cases] == ["ok1", "ok2"]
    by_line = {e.line: e.error for e in result.errors}
    assert sorted(by_line) == [2, 4, 5, 6, 7, 8]
    assert "invalid JSON" in by_line[2]
    assert "JSON object" in by_line[4]
    assert "nope" in by_line[5]
    assert "query" in by_line[6]
    assert "duplicate case_id" in by_line[7]
    assert "x" in by_line[8]
    assert not result.ok


def test_aggregate_defaults_to_sum_and_round_trips(tmp_path) -> None:
    case = BenchCase.model_validate(_case())
    assert case.world.aggregate == "sum"
    path = tmp_path / "cases.jsonl"
    dump_cases([case, BenchCase.model_validate(_case("c2"))], path)
    loaded = load_cases(path)
    assert loaded.ok and loaded.cases[0] == case and len(loaded.cases) == 2
