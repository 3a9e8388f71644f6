"""The LlamaIndex guide's snippet (docs/llama-index.md) runs and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "llama-index.md"


def test_llama_index_snippet_runs(capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    code = next(b for b in blocks if "MeClearPostprocessor" in b)
    exec(compile(code, "docs/llama-index.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "December 2023 ['b1', 'b2', 'b3', 'g1']"
