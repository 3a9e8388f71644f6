"""The procrastinate set-up of docs/production/background.md, verbatim, on a fresh database.

The page's ``myapp/meclear.py`` is written to a folder, the application queues audits (the
first request creates the queue's tables: no "could not be queued"), and ``meclear worker``
run as the console script from that folder (its import path does not hold the folder)
drains them; the next ask withholds what the audit proved.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("procrastinate")

from sqlalchemy import create_engine, text

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "production" / "background.md"


def _page_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def _app_module() -> str:
    return next(b for b in _page_blocks("python") if b.startswith("# myapp/meclear.py"))


def _worker_commands() -> list[list[str]]:
    block = next(b for b in _page_blocks("bash") if "myapp.meclear:retriever" in b)
    lines = [line.split("#")[0].split() for line in block.splitlines()]
    return [words for words in lines if words[:2] == ["meclear", "worker"]]


def _console_script(folder: Path) -> Path:
    """What ``pip install`` makes of ``meclear``: its folder, not the cwd, on sys.path."""
    script = folder / "meclear"
    script.write_text(
        "import sys\nfrom meclear_integrations.cli import main\nsys.exit(main())\n",
        encoding="utf-8",
    )
    return script


def _import_app(folder: Path) -> object:
    sys.path.insert(0, str(folder))
    try:
        import myapp.meclear  # type: ignore[import-not-found]

        return myapp.meclear
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n == "myapp" or n.startswith("myapp.")]:
            sys.modules.pop(name)


@pytest.mark.slow
def test_the_documented_procrastinate_set_up_queues_from_a_fresh_database(
    tmp_path: Path,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from meclear_integrations.langchain import reference_config

    app_dir = tmp_path / "srv"
    (app_dir / "myapp").mkdir(parents=True)
    (app_dir / "myapp" / "__init__.py").write_text("", encoding="utf-8")
    (app_dir / "myapp" / "meclear.py").write_text(_app_module(), encoding="utf-8")
    monkeypatch.setenv("MECLEAR_LEDGER_URL", postgres_url)
    app = _import_app(app_dir)
    config = reference_config(app.case.reference)  # type: ignore[attr-defined]

    with caplog.at_level(logging.WARNING):
        first = app.retriever.invoke(app.case.query, config=config)  # type: ignore[attr-defined]
    meta = first[0].metadata["meclear"]
    assert meta["audit"]["backend"] == "procrastinate" and not meta["audit"]["joined"]
    assert not [r for r in caplog.records if "could not be queued" in r.getMessage()]
    assert "notes" not in meta or not meta["notes"]

    commands = _worker_commands()
    assert [c[-1] for c in commands] == ["4", "--until-idle"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = _console_script(bin_dir)
    env = {**os.environ, "MECLEAR_LEDGER_URL": postgres_url, "PYTHONPATH": str(REPO)}
    drained = subprocess.run(
        [sys.executable, str(script), *commands[1][1:]],
        cwd=app_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert drained.returncode == 0, drained.stderr[-2000:]
    assert json.loads(drained.stdout.strip().splitlines()[-1])["queue"]["succeeded"] == 1

    again = app.retriever.invoke(app.case.query, config=config)  # type: ignore[attr-defined]
    withheld = [w["memory_id"] for w in again[0].metadata["meclear"]["withheld"]]
    assert [d.id for d in again] == ["g1", "b1", "b2", "b3"] and withheld == ["f1", "f2"]
    app.retriever.loop.audit_queue.close()  # type: ignore[attr-defined]


def test_migrate_creates_the_schema_once_and_migrate_false_demands_it(
    tmp_path: Path, postgres_url: str
) -> None:
    from meclear_integrations.core.errors import ConfigurationError
    from meclear_integrations.jobs import ProcrastinateQueue
    from tests.unit_tests.background.test_jobs import snapshot

    strict = ProcrastinateQueue(postgres_url, migrate=False)
    with pytest.raises(ConfigurationError, match="--migrate"):
        strict.ensure_schema()
    first, second = ProcrastinateQueue(postgres_url), ProcrastinateQueue(postgres_url)
    assert first.apply_schema() is True
    assert second.apply_schema() is False  # idempotent
    strict.ensure_schema()  # now there
    ticket = strict.submit(snapshot())
    assert ticket.job_id and not ticket.joined
    for queue in (strict, first, second):
        queue.close()


def test_replicas_starting_together_apply_the_schema_once(postgres_url: str) -> None:
    import threading

    from meclear_integrations.jobs import ProcrastinateQueue

    queues = [ProcrastinateQueue(postgres_url) for _ in range(4)]
    results: list[bool | BaseException] = []

    def start(queue: ProcrastinateQueue) -> None:
        try:
            results.append(queue.apply_schema())
        except BaseException as exc:  # pragma: no cover - the failure being tested
            results.append(exc)

    threads = [threading.Thread(target=start, args=(q,)) for q in queues]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(results, key=str) == [False, False, False, True]
    for queue in queues:
        queue.close()


def test_a_job_from_another_version_is_dead_lettered_with_its_payload(postgres_url: str) -> None:
    from meclear_integrations.jobs import ProcrastinateQueue
    from meclear_integrations.jobs.kinds import JobKinds, audit_handler
    from meclear_integrations.jobs.protocol import AuditOutcome
    from tests.unit_tests.background.test_jobs import Auditor

    queue = ProcrastinateQueue(postgres_url)
    queue._open()
    queue._task.defer(payload='{"version": 0, "query": "Where is John?"}')
    queue._job_task.defer(kind="admission", payload="{}", shard=3)  # arguments it never had
    auditor = Auditor()
    handlers = {"admission": lambda p, j: AuditOutcome("done"), "audit": audit_handler(auditor)}
    queue.run_worker(JobKinds(handlers), wait=False)
    letters = dict(queue.dead_letters())
    assert len(letters) == 2 and auditor.seen == []  # neither ran
    reasons = " | ".join(letters.values())
    assert "version 0 was written by another meclear-integrations version" in reasons
    assert "job arguments ['kind', 'payload', 'shard']" in reasons
    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        payloads = [
            r[0] for r in conn.execute(text("SELECT payload FROM meclear_audit_dead_letters"))
        ]
    engine.dispose()
    assert '{"version": 0, "query": "Where is John?"}' in payloads and "{}" in payloads
    queue.close()
