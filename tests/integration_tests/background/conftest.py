"""Fixtures of the background-audit integration tests: an app module for ``meclear worker``
subprocesses, and the PostgreSQL database fixture of the ledger tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.postgres import postgres_url  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[3]

APP = textwrap.dedent(
    '''
    """A background app for the worker tests: a slow simulated model (SIMULATED)."""
    import os
    import time

    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from meclear_integrations import ClearanceConfig
    from meclear_integrations.jobs import JobStore, ProcrastinateQueue
    from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel
    from meclear_integrations.ledger import HarmLedger
    from meclear_integrations.simulation import redundant_harm_example

    CASE = redundant_harm_example()
    DOCS = [
        Document(page_content=m.content, metadata=dict(m.metadata), id=m.id)
        for m in CASE.memories
    ]


    class SlowModel(SimulatedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            time.sleep(float(os.environ.get("APP_CALL_SECONDS", "0.05")))
            return super()._generate(messages, stop, run_manager, **kwargs)


    def build():
        ledger = HarmLedger(os.environ["APP_LEDGER_URL"])
        queue = None
        if os.environ.get("APP_QUEUE") == "procrastinate":
            queue = ProcrastinateQueue(
                os.environ["APP_LEDGER_URL"], stalled_seconds=2.0, heartbeat_seconds=0.5,
                backoff_base=1,
            )
        return ClearingRetriever(
            retriever=RunnableLambda(lambda q: DOCS),
            llm=SlowModel.from_case(CASE),
            mode="background",
            loop={"ledger": ledger, "audit_workers": 0, "audit_queue": queue},
            clearance=ClearanceConfig(budget={"max_concurrency": 2}),
        )
    '''
)


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    (tmp_path / "bg_app.py").write_text(APP, encoding="utf-8")
    return tmp_path


@pytest.fixture
def worker(app_dir: Path) -> Callable[..., subprocess.Popen[str]]:
    """Start ``meclear worker`` on the app in a subprocess (killed at teardown)."""
    started: list[subprocess.Popen[str]] = []

    def start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
        full = {
            **os.environ,
            **env,
            "PYTHONPATH": os.pathsep.join([str(app_dir), str(REPO)]),
        }
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "meclear_integrations.cli",
                "worker",
                "--component",
                "bg_app:build",
                *args,
            ],
            env=full,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def wait_for(predicate: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")
