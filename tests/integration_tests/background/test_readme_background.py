"""The background-audits page's snippet (docs/production/background.md) runs and prints
what the text says."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "production" / "background.md"


def test_background_snippet(capsys) -> None:
    section = PAGE.read_text()
    code = next(
        b for b in re.findall(r"```python\n(.*?)```", section, flags=re.S) if "background" in b
    )
    exec(compile(code, "docs/production/background.md", "exec"), {})
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == [
        "['g1', 'b1', 'f1', 'b2', 'f2', 'b3'] kept",
        "['done']",
        "['g1', 'b1', 'b2', 'b3'] ['f1', 'f2']",
    ]
    for printed in lines:
        assert f"`{printed}`" in section  # the prose quotes exactly what it prints
