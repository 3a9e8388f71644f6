"""The LangChain guide's snippet (docs/langchain.md) runs and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "langchain.md"


def test_langchain_snippet_runs(capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    code = next(b for b in blocks if "ClearingRetriever" in b)
    exec(compile(code, "docs/langchain.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "['g1', 'b1', 'b2', 'b3']"
