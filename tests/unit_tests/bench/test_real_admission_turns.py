"""The A-MAC turn sample a real model decides: half Store, spread, readable as admission cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meclear_bench.admission_locomo import BenchCandidate
from meclear_bench.real_admission_turns import main, turn_sample

DATA = Path("/work/shared/data/locomo10")


def _turn(cid: str, n: int, cited: bool, split: str = "test") -> BenchCandidate:
    return BenchCandidate(
        id=f"{cid}:turn:D1:{n}",
        split=split,  # type: ignore[arg-type]
        source=f"locomo:{cid}",
        kind="turn_cited" if cited else "turn_uncited",
        candidate_memory=f"A: turn {n}",
        historical_context=f"[session 1, 2023-05-08]\nA: turn {n}",
        candidate_date="2023-05-08",
        label="store" if cited else "do_not_store",
        reason_type="directly_relevant" if cited else "not_needed_later",
    )


def test_sample_takes_each_label_per_conversation_evenly_spaced() -> None:
    turns = [_turn("1", n, n % 4 == 0) for n in range(40)] + [
        _turn("2", n, n % 5 == 0) for n in range(20)
    ]
    turns += [_turn("26", n, True, split="dev") for n in range(5)]
    sample = turn_sample(turns, "test", 2)
    assert [c.source for c in sample].count("locomo:1") == 4
    assert [c.source for c in sample].count("locomo:2") == 4
    assert sum(c.label == "store" for c in sample) == 4  # half Store, whatever the base rate
    assert all(c.split == "test" for c in sample)
    cited_1 = [c.id for c in sample if c.source == "locomo:1" and c.label == "store"]
    assert cited_1 == ["1:turn:D1:8", "1:turn:D1:28"]  # middles of the two halves of 10 turns
    assert turn_sample(turns, "test", 2) == sample  # deterministic
    with pytest.raises(ValueError, match="at least 1"):
        turn_sample(turns, "test", 0)


@pytest.mark.skipif(not DATA.is_dir(), reason="LoCoMo data not available")
def test_sample_runs_journalled_with_every_method_and_resumes(tmp_path: Path, capsys) -> None:
    argv = ["--locomo", str(DATA), "--split", "test", "--per-label", "1"]
    argv += ["--out", str(tmp_path), "--bootstrap", "0", "--no-progress"]
    assert main(argv) == 0  # the offline text reader: no model given
    result = json.loads((tmp_path / "results.json").read_text())
    assert result["n_cases"] == 14 and result["complete"]
    assert "A-MAC's protocol" in result["selection"]
    assert {m["method"] for m in result["methods"]} == {"conmem", "a-mac", "a-mem", "memorybank"}
    cases = result["methods"][0]["cases"]
    assert sum(c["label"] == "store" for c in cases) == 7  # half Store
    assert {c["reason_type"] for c in cases} == {"directly_relevant", "not_needed_later"}
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    capsys.readouterr()
    assert main(argv) == 0  # a rerun decides nothing again
    assert (tmp_path / "journal.jsonl").read_text().splitlines() == lines
    assert "14 candidates" in capsys.readouterr().out


def test_reply_cache_answers_a_repeated_chat_call_without_the_model(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.globals import get_llm_cache, set_llm_cache
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from meclear_bench.real_admission_turns import ReplyCache

    cache = ReplyCache(tmp_path / "replies.sqlite")
    previous = get_llm_cache()
    set_llm_cache(cache)  # type: ignore[arg-type]
    try:
        model = FakeListChatModel(responses=["first", "second"])
        assert model.invoke("hello").content == "first"
        assert model.invoke("hello").content == "first"  # from the cache, not the next reply
        assert (cache.hits, cache.misses) == (1, 1)
        import asyncio

        assert asyncio.run(model.ainvoke("hello")).content == "first"
        fresh = ReplyCache(tmp_path / "replies.sqlite")  # another process: the file keeps it
        set_llm_cache(fresh)  # type: ignore[arg-type]
        again = FakeListChatModel(responses=["first", "second"])
        assert again.invoke("another prompt").content == "first"  # a miss: the model answers
        assert again.invoke("hello").content == "first"  # stored by the first cache
    finally:
        set_llm_cache(previous)


@pytest.mark.skipif(not DATA.is_dir(), reason="LoCoMo data not available")
def test_diagnose_writes_every_conmem_decision_and_its_failing_stage(tmp_path: Path) -> None:
    argv = ["--locomo", str(DATA), "--per-label", "1", "--methods", "conmem"]
    assert main([*argv, "--out", str(tmp_path), "--bootstrap", "0", "--no-progress"]) == 0
    assert main([*argv, "--out", str(tmp_path), "--no-progress", "--diagnose"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "diagnosis.jsonl").read_text().splitlines()]
    assert len(rows) == 14
    journalled = json.loads((tmp_path / "results.json").read_text())["methods"][0]["cases"]
    by_id = {c["id"]: c for c in journalled}
    for r in rows:  # the deterministic reader re-decides as the run did
        assert r["decision"] == by_id[r["id"]]["prediction"]
        assert r["calls"] == by_id[r["id"]]["model_calls"]
        assert r["stage"] in {"cmte", "tie_break"}
        assert {p["role"] for p in r["detail"]["probes"]} == {"relevant", "irrelevant", "risk"}
    assert (tmp_path / "conmem_decisions.jsonl").read_text().count("\n") == 14


@pytest.mark.skipif(not DATA.is_dir(), reason="LoCoMo data not available")
def test_diagnose_covers_only_what_a_stopped_run_journalled(tmp_path: Path) -> None:
    argv = ["--locomo", str(DATA), "--per-label", "1", "--methods", "conmem", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path), "--bootstrap", "0"]) == 0
    journal = tmp_path / "journal.jsonl"
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:4]) + "\n")  # the header and three decisions
    assert main([*argv, "--out", str(tmp_path), "--report-only", "--diagnose"]) == 0
    rows = (tmp_path / "diagnosis.jsonl").read_text().splitlines()
    assert {json.loads(r)["id"] for r in rows} == {
        json.loads(line)["outcome"]["id"] for line in lines[1:4]
    }
