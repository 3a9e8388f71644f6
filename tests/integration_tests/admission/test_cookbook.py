"""The admission cookbook runs offline and gates both frameworks identically."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

COOKBOOK = Path(__file__).resolve().parents[3] / "cookbook" / "admission_gate.py"


def test_cookbook_runs_offline(capsys, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = importlib.util.spec_from_file_location("admission_gate_cookbook", COOKBOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stored = module.main()
    out = capsys.readouterr().out
    assert "SCRIPTED stand-in, not an LLM" in out
    assert stored["langchain"] == stored["llama_index"]
    assert "m1" in stored["langchain"] and "m3" not in stored["langchain"]
