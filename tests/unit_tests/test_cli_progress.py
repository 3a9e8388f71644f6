"""Long CLI loops report progress: soak per query, admission bench per decision; the bar
is hidden when stderr is no terminal and with ``--no-progress``."""

from __future__ import annotations

import io
import sys

import pytest

from meclear_bench.admission_eval import run_admission_bench
from meclear_integrations.admission.cases import load_admission_cases, sample_cases_path
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.cli import main
from meclear_integrations.cli._progress import Bar
from meclear_integrations.cli.soak import run_soak


def test_soak_reports_every_query() -> None:
    ticks: list[int] = []
    result = run_soak(
        queries=6, concurrency=3, fault_rate=0.0, seconds=20, on_query=lambda: ticks.append(1)
    )
    assert len(ticks) == 6 == result.queries


def test_admission_bench_reports_every_decision() -> None:
    cases = load_admission_cases(sample_cases_path()).cases
    ticks: list[int] = []
    run_admission_bench(
        cases,
        ScriptedAdmissionModel(),
        methods=["conmem", "a-mac"],
        on_case=lambda: ticks.append(1),
    )
    assert len(ticks) == 2 * len(cases)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    for stream, shown in ((_Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        with Bar(3, desc="soak", unit="query") as bar:
            for _ in range(3):
                bar.update()
        assert ("soak" in stream.getvalue()) is shown
    stream = _Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    with Bar(3, desc="soak", unit="query", enabled=False) as bar:
        bar.update()
    assert stream.getvalue() == ""


def test_no_progress_flags(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "admission"
    assert main(["admission-bench", "--out", str(out), "--methods", "conmem", "--no-progress"]) == 0
    assert main(["soak", "--queries", "2", "--seconds", "20", "--no-progress"]) == 0
    assert "admission bench" in capsys.readouterr().out
