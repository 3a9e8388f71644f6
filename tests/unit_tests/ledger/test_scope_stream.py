"""The scoped-ledger stream scenario meets issue 24's targets (0 off-topic, 0 true proposed)."""

from __future__ import annotations

from meclear_bench.ledger_scope_stream import run_stream


def test_no_off_topic_memory_is_withheld_and_no_true_memory_proposed(ledger_url: str) -> None:
    figures = run_stream(url=ledger_url)
    assert figures["withheld"] > 0  # the stale notes are withheld for their own questions
    assert figures["off_topic_withheld"] == 0
    assert figures["off_topic_withheld_unscoped"] > 0  # what the unscoped lookup withheld
    assert figures["true_proposed"] == []
    stale_withheld = {m for d in figures["detail"] for m in d["withheld"] if m.startswith("s")}
    assert stale_withheld == {"s0", "s1", "s2", "s3", "s4"}
