"""tools/restructure.py: the moves it plans and the imports it rewrites (no git, no files)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "tools" / "restructure.py"
pytest.importorskip("libcst")
spec = importlib.util.spec_from_file_location("restructure", SCRIPT)
assert spec is not None and spec.loader is not None
rs = importlib.util.module_from_spec(spec)
sys.modules["restructure"] = rs
spec.loader.exec_module(rs)

TRACKED = [
    "meclear_integrations/__init__.py",
    "meclear_integrations/gate.py",
    "meclear_integrations/prompts.py",
    "meclear_integrations/bench/__init__.py",
    "meclear_integrations/bench/runner.py",
    "meclear_integrations/bench/new_by_another_branch.py",
    "meclear_integrations/bench/methods/clearance.py",
    "meclear_integrations/bench/data/cases.jsonl",
    "meclear_integrations/cli/bench.py",
    "meclear_integrations/cli/demo.py",
    "meclear_integrations/core/stages/clearance.py",
]


def test_plan_follows_the_mapping_and_the_folder_rules() -> None:
    moves = rs.plan(TRACKED)
    assert moves["meclear_integrations/gate.py"] == "meclear_integrations/guard/gate.py"
    assert moves["meclear_integrations/bench/runner.py"] == "meclear_bench/runner.py"
    assert moves["meclear_integrations/bench/new_by_another_branch.py"] == (
        "meclear_bench/new_by_another_branch.py"
    )
    assert moves["meclear_integrations/bench/data/cases.jsonl"] == "meclear_bench/data/cases.jsonl"
    assert moves["meclear_integrations/bench/methods/clearance.py"] == (
        "meclear_bench/methods/deletions.py"
    )
    assert moves["meclear_integrations/cli/bench.py"] == "meclear_bench/cli/bench.py"
    assert "meclear_integrations/cli/demo.py" not in moves


def test_a_loose_module_without_a_room_stops_the_run() -> None:
    with pytest.raises(SystemExit):
        rs.plan([*TRACKED, "meclear_integrations/brand_new.py"])


def test_dotted_names_and_paths_are_rewritten_longest_prefix_first() -> None:
    moves = rs.plan(TRACKED)
    names, paths = rs.module_map(moves), rs.path_map(moves)
    text = (
        'patch("meclear_integrations.bench.runner.run_benchmark")\n'
        "see meclear_integrations/bench/data/cases.jsonl and meclear_integrations.gate.Gate\n"
        "meclear_integrations.gateway stays; meclear_integrations.core.engine stays\n"
    )
    assert rs.rewrite_text(text, names, paths) == (
        'patch("meclear_bench.runner.run_benchmark")\n'
        "see meclear_bench/data/cases.jsonl and meclear_integrations.guard.gate.Gate\n"
        "meclear_integrations.gateway stays; meclear_integrations.core.engine stays\n"
    )


def test_relative_imports_are_resolved_and_respelled() -> None:
    names = rs.module_map(rs.plan(TRACKED))
    source = (
        "from ..gate import Gate\n"
        "from ..core.errors import ConfigurationError\n"
        "from ..bench.runner import run_benchmark\n"
        "from .. import prompts\n"
    )
    # cli/bench.py moves to the harness: library imports become absolute, harness ones relative.
    out = rs.rewrite_python(
        source, "meclear_integrations.cli.bench", "meclear_bench.cli.bench", False, names
    )
    assert "from meclear_integrations.guard.gate import Gate" in out
    assert "from meclear_integrations.core.errors import ConfigurationError" in out
    assert "from ..runner import run_benchmark" in out
    assert "from meclear_integrations.judges import answer_prompts as prompts" in out
    # A file that stays keeps relative imports of what stays in its package.
    kept = rs.rewrite_python(
        "from ..gate import Gate\nfrom ..core import x\n",
        "meclear_integrations.langchain.retriever",
        "meclear_integrations.langchain.retriever",
        False,
        names,
    )
    assert kept == "from ..guard.gate import Gate\nfrom ..core import x\n"


def test_long_string_literals_split_into_valid_pieces() -> None:
    token = '"' + "word " * 30 + 'end"'
    split = rs._split_literal(token, nested=False, indent="")
    assert split is not None and ast.literal_eval(split) == ast.literal_eval(token)
    nested = rs._split_literal(token, nested=True, indent="    ")
    assert nested is not None and ast.literal_eval("(" + nested + ")") == ast.literal_eval(token)
