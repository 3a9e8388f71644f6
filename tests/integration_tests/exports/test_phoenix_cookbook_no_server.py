"""``cookbook/phoenix_review.py`` with no Phoenix answering: one line, exit status 2, and no
tracer provider or exporter built (before: 62 s of export retries and a 78-line traceback).
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
from pathlib import Path

import pytest

COOKBOOK = Path(__file__).resolve().parents[3] / "cookbook" / "phoenix_review.py"
pytestmark = pytest.mark.enable_socket


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_no_server_is_one_line_and_nothing_is_exported(monkeypatch) -> None:
    pytest.importorskip("phoenix.client")
    spec = importlib.util.spec_from_file_location("phoenix_review_offline", COOKBOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = []
    monkeypatch.setattr(module, "_tracing", lambda endpoint: built.append(endpoint))
    with pytest.raises(module.PhoenixUnavailable, match="no Phoenix server answers"):
        module.main(_closed_port())
    assert built == []


def test_the_script_exits_2_with_one_line() -> None:
    pytest.importorskip("phoenix.client")
    done = subprocess.run(
        [sys.executable, str(COOKBOOK), "--endpoint", _closed_port()],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: no Phoenix server")
    assert "Traceback" not in done.stderr and done.stdout == ""
