"""Without the langchain extra, importing the subpackage names the extra to install (a fresh
interpreter; moved from the unit tier's test_public_api)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow  # starts a subprocess
def test_missing_extra_names_it() -> None:
    code = (
        "import importlib.abc, sys\n"
        "class B(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('langchain_core', 'langchain_openai'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, B())\n"
        "import meclear_integrations.langchain\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert "meclear-integrations[langchain]" in result.stderr
