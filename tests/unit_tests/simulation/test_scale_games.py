"""Scale games: reproducible, the structure they claim, and texts that do not give it away."""

from __future__ import annotations

import json

import pytest

from meclear_bench.scale_games import ScaleFamily, scale_game, scale_games
from meclear_integrations.cli import main


@pytest.mark.parametrize(
    "family",
    [ScaleFamily("direct"), ScaleFamily("redundant", 3), ScaleFamily("joint")],
)
def test_scale_game_structure(family: ScaleFamily) -> None:
    case = scale_game(40, family, 3)
    assert case == scale_game(40, family, 3)  # reproducible
    ids = [m.id for m in case.memories]
    assert len(ids) == 40 == len(set(ids)) and len({m.content for m in case.memories}) == 40
    evaluate = case.evaluator()
    everything = tuple(case.memories)
    without_faults = tuple(m for m in case.memories if m.id not in case.targets)
    assert evaluate(everything, 0) == 0.0 and evaluate(without_faults, 0) == 1.0
    for target in case.targets:  # one of several redundant copies cleared: still broken
        alone = tuple(m for m in case.memories if m.id != target)
        assert evaluate(alone, 0) == (0.0 if family.structure == "redundant" else 1.0)
    # ids name the roles; the texts are ordinary records about the same people
    assert case.query.split()[-1].rstrip("?") in " ".join(m.content for m in case.memories)


def test_scale_games_differ_by_seed_and_refuse_too_small_contexts() -> None:
    games = list(scale_games(12, ScaleFamily("redundant", 2), 4))
    assert len({g.case_id for g in games}) == 4
    assert len({tuple(m.content for m in g.memories) for g in games}) == 4
    with pytest.raises(ValueError):
        scale_game(3, ScaleFamily("redundant", 3), 0)


def test_budget_scale_command(tmp_path, capsys) -> None:
    code = main(
        [
            "budget",
            "scale",
            "--k",
            "5,12",
            "--games",
            "2",
            "--presets",
            "default,paper",
            "--families",
            "direct,redundant3",
            "--delay",
            "0.001",
            "--no-progress",
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "| default | 12 |" in out and "| paper | 5 |" in out and "SIMULATED" in out
    data = json.loads((tmp_path / "scale.json").read_text())
    assert data["simulated"] and len(data["rows"]) == 4
    default12 = next(r for r in data["rows"] if r["preset"] == "default" and r["k"] == 12)
    assert default12["games"] == 4 and default12["recovered"] == 4
    assert (tmp_path / "scale.png").stat().st_size > 10_000
    assert main(["budget", "scale", "--presets", "nope"]) == 2


def test_budget_scale_cheap_preset_without_timed_games(tmp_path, capsys) -> None:
    """The cheap preset is a choice, and a run that times nothing still draws its plot."""
    args = ["budget", "scale", "--k", "5,10", "--games", "2", "--families", "redundant3"]
    args += ["--wall-games", "0", "--no-progress"]
    code = main([*args, "--presets", "default,cheap", "--out", str(tmp_path)])
    assert code == 0 and "| cheap | 10 |" in capsys.readouterr().out
    rows = json.loads((tmp_path / "scale.json").read_text())["rows"]
    calls = {(r["preset"], r["k"]): r for r in rows}
    assert calls["cheap", 10]["recovered"] == calls["cheap", 10]["games"] == 2
    assert (tmp_path / "scale.png").stat().st_size > 10_000
