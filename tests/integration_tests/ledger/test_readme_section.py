"""The README's "Running it in production" snippet runs and prints what the text says."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def test_production_snippet(capsys) -> None:
    text = README.read_text()
    section = text[text.index("## Running it in production") : text.index("## Benchmark\n")]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    exec(compile(code, "README production", "exec"), {})
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "['g1', 'b1', 'b2', 'b3'] True"
    for printed in lines:
        assert f"`{printed}`" in section  # the prose quotes exactly what it prints
