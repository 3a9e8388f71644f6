"""What importing a subpackage loads, each in a fresh interpreter (moved from the unit tier's
test_public_api modules): no framework, database driver or plotting library where none is
needed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.slow  # starts a subprocess
def test_the_ledger_loads_no_framework_and_the_engine_no_database() -> None:
    code = (
        "import sys, meclear_integrations;"
        "assert 'sqlalchemy' not in sys.modules, 'engine imported sqlalchemy';"
        "import meclear_integrations.ledger;"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'llama_index', 'matplotlib', 'psycopg')];"
        "assert not heavy, heavy"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow  # starts a subprocess
def test_no_framework_or_database_on_import() -> None:
    code = (
        "import sys, meclear_integrations.triggers, meclear_integrations.guard.gate;"
        "meclear_integrations.guard.gate.ClearanceGate().query_id('q');"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'llama_index', 'sqlalchemy', 'psycopg', 'matplotlib')];"
        "assert not heavy, heavy"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow  # starts a subprocess
def test_engine_bench_and_cli_run_with_frameworks_blocked() -> None:
    code = textwrap.dedent(
        """
        import importlib.abc, sys, tempfile
        BLOCKED = ("langchain", "langchain_core", "langsmith", "llama_index", "matplotlib",
                   "openai", "sklearn")
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError(f"blocked import of {name}")
        sys.meta_path.insert(0, Block())
        from meclear_integrations.admission import ConMemAdmitter
        from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        from meclear_integrations.cli import main
        d = ConMemAdmitter(ScriptedAdmissionModel()).decide("User is vegan.", "user: I'm vegan.")
        assert d.ok, d.error
        assert main(["admission-bench", "--out", tempfile.mkdtemp()]) == 0
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
