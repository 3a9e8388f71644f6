"""Without the llama-index extra, importing the subpackage names the extra to install (a fresh
interpreter; moved from the unit tier's test_public_api)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.slow  # starts a subprocess
def test_missing_extra_names_it() -> None:
    code = textwrap.dedent(
        """
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("llama_index", "llama_index_instrumentation"):
                    raise ImportError(f"blocked import of {name}")
        sys.meta_path.insert(0, Block())
        try:
            import meclear_integrations.llama_index
        except ImportError as exc:
            print(exc)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'meclear-integrations[llama-index]'" in result.stdout, result.stderr
