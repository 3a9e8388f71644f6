"""admission-bench --agent-kwargs reaches every request of every role (local stub, no LLM)."""

from __future__ import annotations

import json
import threading

import pytest

pytest.importorskip("langchain_openai")

from meclear_integrations.cli import main
from tests.integration_tests.admission.test_openai_stub import _server


def _run(tmp_path, *flags: str) -> tuple[int, list[dict]]:
    server, seen = _server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        code = main(
            [
                "admission-bench",
                "--limit",
                "2",
                "--methods",
                "conmem,a-mac",
                "--no-progress",
                "--bootstrap",
                "0",
                "--out",
                str(tmp_path / "o"),
                "--agent-model",
                "stub",
                "--base-url",
                url,
                *flags,
            ]
        )
    finally:
        server.shutdown()
        server.server_close()
    return code, seen


def test_agent_kwargs_reach_every_call(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, seen = _run(tmp_path, "--agent-kwargs", '{"max_tokens": 64, "top_p": 0.5}')
    assert code == 0 and len(seen) >= 2 * 14 + 2  # ConMem's calls and A-MAC's, both cases
    for body in seen:
        # langchain-openai's field, and the one llama.cpp-style servers read
        assert body["max_completion_tokens"] == 64 and body["max_tokens"] == 64
        assert body["top_p"] == 0.5 and body["temperature"] == 0.0
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["model"] == "openai:stub" and data["n_cases"] == 2 and data["complete"]
    header = json.loads((tmp_path / "o" / "journal.jsonl").read_text().splitlines()[0])
    assert header["header"]["model_kwargs"] == {"max_tokens": 64, "temperature": 0.0, "top_p": 0.5}


def test_without_agent_kwargs_no_cap_is_sent(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, seen = _run(tmp_path)
    assert code == 0 and seen
    assert all("max_tokens" not in b and "max_completion_tokens" not in b for b in seen)


def test_other_kwargs_resume_nothing(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert _run(tmp_path, "--agent-kwargs", '{"max_tokens": 64}')[0] == 0
    # replies depend on the cap: a journal written under another cap is not reused
    code, seen = _run(tmp_path, "--agent-kwargs", '{"max_tokens": 32}')
    assert code == 2 and seen == []
    assert "written by another run" in capsys.readouterr().err


def test_the_cap_goes_into_the_body_only_for_a_compatible_server() -> None:
    from meclear_bench.model_spec import with_token_cap as _with_token_cap

    assert _with_token_cap({"max_tokens": 9}, None) == {"max_tokens": 9}  # OpenAI's API
    assert _with_token_cap({"max_tokens": 9}, "http://h/v1") == {
        "max_tokens": 9,
        "extra_body": {"max_tokens": 9},
    }
    mine = {"max_tokens": 9, "extra_body": {"stop": ["x"]}}
    assert _with_token_cap(mine, "http://h/v1") == mine  # the caller's body wins
    assert _with_token_cap({"top_p": 1}, "http://h/v1") == {"top_p": 1}
