"""Without langgraph / langchain>=1, the new components say in one line which extra to install
(a fresh interpreter with the package blocked), and the rest of the LangChain subpackage loads."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

BLOCK = textwrap.dedent(
    """
    import importlib.abc, sys
    class B(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in {blocked!r}:
                raise ImportError('blocked ' + name)
    sys.meta_path.insert(0, B())
    """
)


def run(blocked: tuple[str, ...], code: str) -> subprocess.CompletedProcess[str]:
    script = BLOCK.format(blocked=blocked) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


@pytest.mark.slow  # starts an interpreter
def test_middleware_without_langchain_v1_names_the_extra() -> None:
    result = run(
        ("langchain",),
        """
        import meclear_integrations.langchain as lc
        assert lc.ClearingRetriever  # the langchain-core components still load
        try:
            lc.MeClearMiddleware
        except ImportError as exc:
            print(exc)
        """,
    )
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    assert "meclear-integrations[langchain-agents]" in line


@pytest.mark.slow  # starts an interpreter
def test_store_without_langgraph_names_the_extra() -> None:
    result = run(
        ("langgraph",),
        """
        try:
            from meclear_integrations.langgraph import ClearingStore
        except ImportError as exc:
            print(exc)
        """,
    )
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    assert "meclear-integrations[langgraph]" in line
