"""The "Running it in production" page's snippet runs and prints what the text says."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "production" / "index.md"


def test_production_snippet(capsys) -> None:
    section = PAGE.read_text()
    assert section.startswith("# Running it in production")
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    exec(compile(code, "docs/production/index.md", "exec"), {})
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "['g1', 'b1', 'b2', 'b3'] True"
    for printed in lines:
        assert f"`{printed}`" in section  # the prose quotes exactly what it prints
