"""A background audit on the real model through ``meclear worker``: the request path makes
no model call and queues an audit; the worker (a subprocess) runs it with ``ChatOpenAI`` as
agent and judge and records it in the ledger; the next ask reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]

APP = textwrap.dedent(
    '''
    """A background app on the real model served at MECLEAR_REAL_MODEL_BASE_URL."""
    import os

    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda
    from langchain_openai import ChatOpenAI

    from meclear_integrations.langchain import ClearingRetriever
    from meclear_integrations.ledger import HarmLedger

    MEMORIES = {memories!r}
    DOCS = [Document(page_content=t, id=i, metadata={{"date": d}}) for i, t, d in MEMORIES]


    def build():
        llm = ChatOpenAI(
            model=os.environ["MECLEAR_REAL_MODEL_NAME"],
            base_url=os.environ["MECLEAR_REAL_MODEL_BASE_URL"],
            api_key="not-needed",
            temperature=0,
            max_tokens=48,
            timeout=120,
            max_retries=1,
        )
        return ClearingRetriever(
            retriever=RunnableLambda(lambda q: DOCS),
            llm=llm,
            mode="background",
            clearance={{"budget": {{"max_wall_seconds": 900}}}},
            loop={{"ledger": HarmLedger(os.environ["APP_LEDGER_URL"]), "audit_workers": 0}},
        )
    '''
)


def test_meclear_worker_runs_the_audit_on_the_real_model(real_model, tmp_path: Path) -> None:
    from meclear_integrations.langchain import reference_config

    from .memories import MEMORIES, QUESTION, REFERENCE

    (tmp_path / "real_app.py").write_text(APP.format(memories=MEMORIES), encoding="utf-8")
    env = {
        "APP_LEDGER_URL": f"sqlite:///{tmp_path / 'ledger.db'}",
        "MECLEAR_REAL_MODEL_BASE_URL": real_model.base_url,
        "MECLEAR_REAL_MODEL_NAME": real_model.name,
    }
    sys.path.insert(0, str(tmp_path))
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        import real_app

        retriever = real_app.build()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sys.path.remove(str(tmp_path))
        sys.modules.pop("real_app", None)
    first = retriever.invoke(QUESTION, config=reference_config(REFERENCE))
    meta = first[0].metadata["meclear"]
    assert meta["mode"] == "background" and meta["status"] == "kept"
    job_id = meta["audit"]["job_id"]

    full = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    command = [sys.executable, "-m", "meclear_integrations.cli", "worker"]
    proc = subprocess.run(
        [*command, "--component", "real_app:build", "--until-idle"],
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["ran"] == 1 and summary["outcomes"] == {"done": 1}, summary
    job = retriever.loop.jobs.get(job_id) if hasattr(retriever.loop, "jobs") else None
    if job is not None:
        assert job.state == "done"
    again = retriever.invoke(QUESTION, config=reference_config(REFERENCE))
    for doc in again:  # the worker's verdict read from the ledger; still no model call here
        assert doc.metadata["meclear"]["mode"] == "background"
        assert doc.metadata["meclear"].get("status") != "failed"
