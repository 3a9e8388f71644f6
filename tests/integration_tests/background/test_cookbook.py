"""cookbook/background_audits.py runs offline and shows what it promises."""

from __future__ import annotations

import importlib.util
from pathlib import Path

COOKBOOK = Path(__file__).resolve().parents[3] / "cookbook" / "background_audits.py"


def test_background_cookbook(capsys) -> None:
    spec = importlib.util.spec_from_file_location("background_audits_cookbook", COOKBOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    out = capsys.readouterr().out
    assert "0 model calls on the request path" in out
    assert "audits queued: 1 (19 requests joined it)" in out
    assert "cleared ['f1', 'f2']" in out
    assert "'Which month was John in Italy?': 4 documents" in out
    assert "'Who recommended Florence to John?': 6 documents, withheld nothing" in out
    assert "model calls on every request path: 0" in out
