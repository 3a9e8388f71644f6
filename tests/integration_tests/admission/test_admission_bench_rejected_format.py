"""admission-bench pays one request for a format the server refuses (llama.cpp's json_schema).

llama-cpp-python's server answers ``response_format: json_schema`` with HTTP 500. The
package negotiates (the rejection is remembered per endpoint and never retried), but the
OpenAI SDK under langchain-openai retries every 5xx twice by default, so the one rejection
cost three requests. ConMem's calls retry on their own (``max_parse_attempts``), so the
command's chat model makes no retry of its own (as ``meclear bench``'s), unless
``--agent-kwargs`` sets ``max_retries``.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langchain_openai")

from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.cli import main
from tests.support.llama_cpp_stub import JSON_SCHEMA_ERROR
from tests.support.servers import Handler, serve


def _llama_like(seen: list[str]) -> Handler:
    """Refuses json_schema as llama-cpp-python 0.3.36 does (HTTP 500); else scripted.

    Records each request's ``response_format`` type (``text`` when none) in ``seen``.
    """
    model = ScriptedAdmissionModel()

    def handle(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        body = json.loads(raw)
        kind = (body.get("response_format") or {}).get("type", "text")
        seen.append(kind)
        if kind == "json_schema":
            error = {"message": JSON_SCHEMA_ERROR, "type": "internal_server_error"}
            return 500, {}, json.dumps({"error": error}).encode()
        content = model.complete(body["messages"][-1]["content"])
        reply = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return 200, {}, json.dumps(reply).encode()

    return handle


def _run(tmp_path, *flags: str) -> tuple[int, list[str]]:
    seen: list[str] = []
    with serve(_llama_like(seen)) as url:
        code = main(
            [
                "admission-bench",
                "--limit",
                "1",
                "--methods",
                "conmem",
                "--calls-per-case",
                "1",
                "--no-progress",
                "--bootstrap",
                "0",
                "--out",
                str(tmp_path / "o"),
                "--agent-model",
                "stub-refuses-json-schema",
                "--base-url",
                f"{url}/v1",
                *flags,
            ]
        )
    return code, seen


def test_a_refused_format_costs_one_request(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, seen = _run(tmp_path)
    assert code == 0
    assert seen.count("json_schema") == 1  # the SDK retried it twice before the fix
    assert seen.count("json_object") >= 5  # every later call in JSON mode
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["complete"] and data["methods"][0]["metrics"]["errors"] == 0


def test_agent_kwargs_may_ask_for_sdk_retries(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, seen = _run(tmp_path, "--agent-kwargs", '{"max_retries": 1}')
    assert code == 0 and seen.count("json_schema") == 2
