"""Background admission on the real clock, with its own worker threads: the documented example
runs end to end, and a write is acknowledged at once while a slow model decides it later."""

from __future__ import annotations

from pathlib import Path

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.background import BackgroundAdmission
from tests.support.stage_models import StageModel

CONTEXT = "user: I'm vegetarian, please never suggest meat dishes."


def test_readme_background_example_runs(capsys, tmp_path: Path, monkeypatch) -> None:
    import re

    monkeypatch.chdir(tmp_path)  # the example uses the default job table in the cwd
    monkeypatch.delenv("MECLEAR_LEDGER_URL", raising=False)

    page = Path(__file__).resolve().parents[3] / "docs" / "admission.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    code = next(b for b in blocks if "BackgroundAdmission(" in b)
    exec(compile(code, "docs/admission.md background admission", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pending 0"
    assert lines[1] == "stored 14 ['User is allergic to shellfish.']"


def test_submit_does_not_wait_for_a_slow_model(tmp_path: Path) -> None:
    import time as _time

    model = StageModel(delay=0.2)  # every call takes 0.2 s; a decision takes >= 1 s
    gate = BackgroundAdmission(ConMemAdmitter(model), jobs=tmp_path / "jobs.db", workers=1)
    started = _time.perf_counter()
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    acknowledged = _time.perf_counter() - started
    assert acknowledged < 0.2  # less than one model call
    assert gate.record(ticket.job_id).state == "pending"
    assert gate.wait(ticket.job_id, timeout=60).state == "stored"
    gate.close()
