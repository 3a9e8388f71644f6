"""The agents guide's snippets (docs/agents.md) run and print what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
_PRINTED = re.compile(r"^\s*print\(.*\)\s+#\s*(.+?)\s*$", flags=re.M)


def test_the_page_has_one_snippet_per_framework() -> None:
    assert [
        ("MeClearMiddleware" in b, "ClearingStore" in b, "MeClearMemoryBlock" in b) for b in BLOCKS
    ] == [
        (True, False, False),
        (False, True, False),
        (False, False, True),
    ]


@pytest.mark.parametrize("block", BLOCKS, ids=["middleware", "store", "memory"])
def test_snippet_runs_and_prints_what_it_says(block: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "docs/agents.md", "exec"), {})
    assert out.getvalue().splitlines() == _PRINTED.findall(block)
