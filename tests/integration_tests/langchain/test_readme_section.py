"""The README's LangChain snippet runs and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def test_langchain_snippet_runs(capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    code = next(b for b in blocks if "ClearingRetriever" in b)
    exec(compile(code, "README LangChain", "exec"), {})
    assert capsys.readouterr().out.strip() == "['g1', 'b1', 'b2', 'b3']"
