"""``meclear ledger review`` lists the carriers of verified harms with their evidence."""

from __future__ import annotations

import json

import pytest

from meclear_integrations.cli import main
from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld

COPIES = ("p0", "p1", "p2", "p3", "p4")
QUESTIONS = ("Where did Ana go?", "Which city did Ana visit?")


def context() -> list[Memory]:
    return [Memory(id=i, content=f"text of {i}") for i in ("g", "b1", *COPIES, "b2")]


def cleared(scope: str):
    weights = [1.0, 0.8, 0.5, 0.3, 0.2]
    claims = {"g": ("Paris", 1.5)} | {p: ("Rome", w) for p, w in zip(COPIES, weights, strict=True)}
    config = ClearanceConfig(find_carriers=True, clearance_scope=scope)  # type: ignore[arg-type]
    world = EvidenceWorld.from_claims(claims, ties="prompt")
    return MeClearEngine(config).clear(context(), SimulatedEvaluator(world, "Paris"))


@pytest.fixture
def ledger_file(tmp_path):
    target = tmp_path / "carriers.db"
    with HarmLedger(target, store_text=True) as ledger:
        for question, scope in zip(QUESTIONS, ("minimal", "complete"), strict=True):
            ledger.record(cleared(scope), query=question, context=context())
        expected = {p.memory_id for p in ledger.carrier_review()}
    assert expected and expected <= set(COPIES)
    return target, expected


def test_review_table_lists_carriers_with_evidence(ledger_file, capsys) -> None:
    target, expected = ledger_file
    assert main(["ledger", "--ledger", str(target), "review"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("carriers: memories that alone") :]
    for memory_id in expected:
        assert f"memory {memory_id} " in section and f"text: text of {memory_id}" in section
    assert "answer alone: Rome" in section and "(failing answer: Rome)" in section
    assert all(q in section for q in QUESTIONS)
    assert "a carrier on 2 queries, withheld in 1 runs" in section  # the complete run withheld them
    assert main(["ledger", "--ledger", str(target), "review", "--carrier-min-queries", "0"]) == 0
    assert "carriers:" not in capsys.readouterr().out


def test_review_json_lists_carriers(ledger_file, capsys) -> None:
    target, expected = ledger_file
    argv = ["ledger", "--ledger", str(target), "review", "--format", "json"]
    assert main(argv) == 0
    carriers = json.loads(capsys.readouterr().out)["carriers"]
    assert {c["memory_id"] for c in carriers} == expected
    first = carriers[0]
    assert first["queries"] == 2 and first["answers"] == ["Rome"]
    assert first["memory_text"] == f"text of {first['memory_id']}"
    assert sorted(first["questions"].values()) == sorted(QUESTIONS)
    assert main([*argv, "--carrier-min-queries", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["carriers"] == []


def test_no_carriers_says_how_to_get_them(tmp_path, capsys) -> None:
    target = tmp_path / "empty.db"
    with HarmLedger(target):
        pass
    assert main(["ledger", "--ledger", str(target), "review"]) == 0
    assert "carriers: none recorded (the carriers search runs with" in capsys.readouterr().out
