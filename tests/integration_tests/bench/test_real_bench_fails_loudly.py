"""``meclear bench`` with real models never exits 0 without results.

Against the text-reading stand-in served on 127.0.0.1: a dead endpoint stops the run at once
(exit 2, the URL in the message); an ``llm-direct`` rater whose replies cannot be parsed
excludes its own row, never the other methods' cases (exit 2, the reason); ``--build-only``
says what it verified, with which models, and writes the funnel even when nothing is
verified; a resumed run reports this invocation's calls apart from the whole run's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from meclear_bench.reader_server import ReaderServer, serve_reader
from meclear_integrations.cli import main
from tests.unit_tests.bench.real_fixtures import load_results, model_flags, write_conversations


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, ReaderServer]]:
    with serve_reader() as served:
        yield served


@pytest.fixture(scope="module")
def built(server, tmp_path_factory) -> Path:
    url, _ = server
    root = tmp_path_factory.mktemp("built")
    data = write_conversations(root / "locomo")
    out = root / "cases"
    flags = ["--locomo", str(data), "--max-queries", "2", *model_flags(url, root / "c.db")]
    assert main(["bench", *flags, "--build-only", "--out", str(out)]) == 0
    return out / "cases.jsonl"


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_a_dead_endpoint_stops_at_once_with_the_url(built: Path, tmp_path: Path, capsys) -> None:
    dead = "http://127.0.0.1:1/v1"
    flags = ["--cases", str(built), *model_flags(dead, tmp_path / "c.db"), "--retries", "1"]
    assert main(["bench", *flags, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "cannot be reached" in err and dead in err
    results = load_results(tmp_path / "run")
    assert results["stopped_fatal"] is True and results["n_cases"] == 0


def test_unparsable_rater_excludes_its_row_only(built: Path, tmp_path: Path, capsys) -> None:
    def rewrite(prompt: str, text: str) -> str:
        return "I cannot rate these." if "probability (0 to 1)" in prompt else text

    with serve_reader(rewrite=rewrite) as (url, _):
        flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
        flags += ["--methods", "meclear,loo,llm-direct,none"]
        assert main(["bench", *flags, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "llm-direct: failed on" in err and "not a list" in err
    results = load_results(tmp_path / "run")
    assert results["n_cases"] == _lines(built)  # every case kept for the other methods
    assert results["methods"]["llm-direct"]["status"] == "failed"
    for name in ("meclear", "loo", "none"):
        assert results["methods"][name]["status"] == "ok"
        assert results["methods"][name]["overall"]["n_cases"] == _lines(built)
    assert "llm-direct" not in results["paired"]
    assert "## Not run or failed" in (tmp_path / "run" / "report.md").read_text(encoding="utf-8")


def test_a_provider_failing_every_case_exits_2(built: Path, tmp_path: Path, capsys) -> None:
    with serve_reader(fail=lambda prompt, n: 500) as (url, _):
        flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db"), "--retries", "1"]
        flags += ["--methods", "meclear,none"]
        assert main(["bench", *flags, "--out", str(tmp_path / "run")]) == 2
    assert "no case finished by every method" in capsys.readouterr().err
    assert load_results(tmp_path / "run")["n_cases"] == 0


def test_build_only_says_what_it_verified(server, built: Path, tmp_path: Path, capsys) -> None:
    url, _ = server
    flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db"), "--build-only"]
    assert main(["bench", *flags, "--out", str(tmp_path / "copy")]) == 0
    out = capsys.readouterr().out
    assert "NOT verified" in out and "--reverify" in out

    assert main(["bench", *flags, "--reverify", "--out", str(tmp_path / "re")]) == 0
    out = capsys.readouterr().out
    assert "re-verified" in out and "agent text-reader, judge text-reader" in out
    assert "model calls" in out
    funnel = json.loads((tmp_path / "re" / "funnel.json").read_text())
    assert funnel["cases_given"] == _lines(built) == funnel["cases_verified"]


def test_build_only_writes_the_funnel_when_nothing_verifies(
    built: Path, tmp_path: Path, capsys
) -> None:
    with serve_reader(rewrite=lambda prompt, text: "I don't know.") as (url, _):
        flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
        out = tmp_path / "re"
        assert main(["bench", *flags, "--build-only", "--reverify", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "no case of" in captured.err and "funnel.json" in captured.err
    funnel = json.loads((out / "funnel.json").read_text())
    assert funnel["cases_verified"] == 0 and funnel["cases_given"] == _lines(built)
    assert sum(sum(row.values()) for row in funnel["dropped"].values()) == _lines(built)
    assert (out / "cases.jsonl").read_text() == ""


def test_resume_reports_this_invocations_calls_apart(
    server, built: Path, tmp_path: Path, capsys
) -> None:
    url, state = server
    flags = ["--cases", str(built), *model_flags(url, tmp_path / "c.db")]
    flags += ["--methods", "meclear,loo,none"]
    out = tmp_path / "run"
    before = state.calls
    assert main(["bench", *flags, "--max-calls", "40", "--out", str(out)]) == 3
    first = state.calls - before
    capsys.readouterr()
    before = state.calls
    assert main(["bench", *flags, "--resume", "--out", str(out)]) == 0
    second = state.calls - before
    printed = capsys.readouterr().out
    results = load_results(out)
    assert results["calls_this_invocation"]["provider_calls"] == second
    assert results["calls"]["provider_calls"] == first + second
    assert f"made by this invocation: {second} " in printed
    assert f"whole run (every invocation): {first + second} " in printed


def test_a_build_stopped_by_its_budget_still_writes_the_funnel(
    server, tmp_path: Path, capsys
) -> None:
    url, _ = server
    data = write_conversations(tmp_path / "locomo")
    flags = ["--locomo", str(data), *model_flags(url, tmp_path / "fresh.db"), "--max-calls", "5"]
    out = tmp_path / "cases"
    assert main(["bench", *flags, "--build-only", "--out", str(out)]) == 3
    funnel = json.loads((out / "funnel.json").read_text())
    assert funnel["stopped"] == "--max-calls 5 reached"
    assert funnel["calls"]["provider_calls"] <= 5 and "text-reader" in funnel["verified_with"]
    assert "build stopped" in capsys.readouterr().err
