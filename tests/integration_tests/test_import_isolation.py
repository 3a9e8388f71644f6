"""The engine loads no framework and no plotting library."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # each test starts an interpreter

BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys
    BLOCKED = ("langchain", "langchain_core", "langsmith", "llama_index", "matplotlib", "openai")
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked import of {name}")
            return None
    sys.meta_path.insert(0, Block())
    """
)


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
    )


def test_engine_and_demo_run_with_frameworks_blocked() -> None:
    result = run(
        """
        import meclear_integrations
        from meclear_integrations import ClearanceConfig, MeClearEngine
        from meclear_integrations.simulation import redundant_harm_example
        from meclear_integrations.cli import main
        case = redundant_harm_example()
        report = MeClearEngine(ClearanceConfig()).clear(case.memories, case.evaluator())
        assert report.cleared_ids == ["f1", "f2"], report.cleared_ids
        assert main(["demo"]) == 0
        """
    )
    assert result.returncode == 0, result.stderr


def test_import_loads_no_framework() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, meclear_integrations, meclear_integrations.simulation;"
            "heavy = [m for m in sys.modules if m.split('.')[0] in "
            "('langchain_core', 'llama_index', 'matplotlib', 'langsmith', 'sklearn')];"
            "print(heavy); assert not heavy",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
