"""``--openai-model`` against a local Chat Completions stub (no network, no real LLM).

The stub answers with the scripted stand-in, so this checks the real-provider path:
langchain-openai, structured output (json_schema), strict parsing, the bench files.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("langchain_openai")

from meclear_integrations.admission.cases import load_admission_cases
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.cli import main


def _server(model=None) -> tuple[ThreadingHTTPServer, list[dict]]:
    model = model or ScriptedAdmissionModel()
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

    return _Backlogged(("127.0.0.1", 0), Handler), seen


class _Backlogged(ThreadingHTTPServer):
    """A stub that queues every connection a bench opens at once (the default backlog is 5).

    On a busy machine the accept loop falls behind; a refused connection is an attempt
    the bench counts (and retries) that the stub never sees, and the count below compares
    the two.
    """

    request_queue_size = 128


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


LOCOMO = Path("/work/shared/data/locomo10")


@pytest.mark.slow
@pytest.mark.skipif(not LOCOMO.is_dir(), reason="LoCoMo data not present")
def test_locomo_admission_bench_through_a_local_stub(tmp_path, monkeypatch) -> None:
    from meclear_integrations.admission.reader import AdmissionReader

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server, seen = _server(AdmissionReader())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        flags = ["--locomo", str(LOCOMO), "--limit", "1", "--no-presets", "--no-progress"]
        code = main(
            [
                "admission-bench",
                *flags,
                "--methods",
                "conmem,a-mac",
                "--out",
                str(tmp_path / "o"),
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
    assert data["offline_reader"] is False and data["model"] == "openai:stub"
    conmem = data["methods"][0]
    assert conmem["errors"] == 0 and conmem["calls_per_decision"] >= 14
    sent = round(conmem["sent_calls_per_decision"] * conmem["n"])
    assert sent <= round(conmem["calls_per_decision"] * conmem["n"])
    # ConMem after dedup, one A-MAC call each, the ablations' extra tie-break questions
    assert len(seen) == sent + data["methods"][1]["n"] + data["analysis_calls"]
    assert "OFFLINE TEXT-READER" not in (tmp_path / "o" / "report.md").read_text()
