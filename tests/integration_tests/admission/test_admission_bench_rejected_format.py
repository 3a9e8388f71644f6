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
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("langchain_openai")

from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.cli import main


def _llama_like() -> tuple[ThreadingHTTPServer, list[str]]:
    """A stub that refuses json_schema as llama-cpp-python 0.3.36 does; else scripted."""
    model = ScriptedAdmissionModel()
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, status: int, payload: dict) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            kind = (body.get("response_format") or {}).get("type", "text")
            seen.append(kind)
            if kind == "json_schema":
                detail = "Input should be 'text' or 'json_object'"
                self._send(500, {"error": {"message": detail, "type": "internal_server_error"}})
                return
            content = body["messages"][-1]["content"]
            self._send(
                200,
                {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": model.complete(content)},
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
            )

    return ThreadingHTTPServer(("127.0.0.1", 0), Handler), seen


def _run(tmp_path, *flags: str) -> tuple[int, list[str]]:
    server, seen = _llama_like()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
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
                url,
                *flags,
            ]
        )
    finally:
        server.shutdown()
        server.server_close()
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
