"""``--openai-model`` against a local Chat Completions stub (no network, no real LLM).

The stub answers with the scripted stand-in, so this checks the real-provider path:
langchain-openai, structured output (json_schema), strict parsing, the bench files.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("langchain_openai")

from meclear_integrations.admission.cases import load_admission_cases
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.cli import main


def _server() -> tuple[ThreadingHTTPServer, list[dict]]:
    model = ScriptedAdmissionModel()
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            content = body["messages"][-1]["content"]
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            reply = {
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
            }
            raw = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return ThreadingHTTPServer(("127.0.0.1", 0), Handler), seen


def test_openai_model_path_through_a_local_stub(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cases = tmp_path / "cases.jsonl"
    picked = load_admission_cases().cases[:2] + load_admission_cases().cases[19:21]
    cases.write_text("\n".join(c.model_dump_json() for c in picked) + "\n")
    server, seen = _server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        code = main(
            [
                "admission-bench",
                "--cases",
                str(cases),
                "--out",
                str(tmp_path / "o"),
                "--methods",
                "conmem,a-mem",
                "--openai-model",
                "stub",
                "--openai-base-url",
                url,
            ]
        )
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["scripted"] is False and data["model"] == "openai:stub"
    conmem = data["methods"][0]
    assert conmem["metrics"]["errors"] == 0 and conmem["calls_per_case"] >= 14
    # structured stages asked for a JSON schema; free-text responses did not
    formats = [b.get("response_format", {}).get("type") for b in seen]
    assert "json_schema" in formats and None in formats
